"""The ``p2sim`` command line.

Every command validates its input and reports a bad value as one line on stderr
with exit status 2; results go to stdout (a table, or one JSON object with
``--json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__
from .errors import InputError, P2SimError
from .parsing import byte_size, int_list, positive_int
from .placement import check_sizes, enumerate_matrices, format_matrix, parse_matrix
from .program import parse_program
from .report.simulate import draw_topology, program_result_json, results_text, topology_json, topology_text
from .report.synth import placements_text, synthesis_json, synthesis_text
from .report.trace import write_trace
from .sim import MODELS, Simulator, check_program_completes
from .synthesis import DEFAULT_MAX_SIZE, Profile, synthesize_placements
from .topology import Topology, find_spec, load_system, system_paths

EXIT_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, not a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _emit(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


def _add_layout(p: argparse.ArgumentParser, reduce: bool = True, system: bool = False) -> None:
    if system:
        p.add_argument("--system", default="a100", help="system name or .toml file (default: a100; see p2sim systems)")
        p.add_argument("--nodes", default=None, help="node count (default: the system file's)")
    else:
        p.add_argument("--hierarchy", default=None, metavar="H0,H1,..",
                       help="level cardinalities, outermost first (default: 2,16 -- two nodes of 16 GPUs)")
        p.add_argument("--system", default=None, help="take the hierarchy from a system (name or .toml file)")
        p.add_argument("--nodes", default=None, help="node count of --system (default: the system file's)")
    p.add_argument("--axes", default=None, metavar="P0,P1,..",
                   help="parallelism axis sizes; their product must equal the device count "
                        "(default: one axis over all devices)")
    if reduce:
        p.add_argument("--reduce", default="0", metavar="R,..", help="indices of the reduction axes (default: 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def _topology(args: argparse.Namespace) -> Topology:
    nodes = None if args.nodes is None else positive_int(args.nodes, "nodes")
    return load_system(args.system, nodes)


def _hierarchy(args: argparse.Namespace) -> tuple[int, ...]:
    if args.system is not None:
        if args.hierarchy is not None:
            raise InputError("hierarchy: give either --hierarchy or --system, not both")
        return _topology(args).hierarchy
    if args.nodes is not None:
        raise InputError("nodes: --nodes needs --system")
    return int_list(args.hierarchy or "2,16", "hierarchy", minimum=1)


def _axes(args: argparse.Namespace, h: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    import math

    p = (math.prod(h),) if args.axes is None else int_list(args.axes, "axes", minimum=1)
    return check_sizes(h, p)


def _layout(args: argparse.Namespace) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return _axes(args, _hierarchy(args))


def cmd_placements(args: argparse.Namespace) -> int:
    h, p = _layout(args)
    mats = enumerate_matrices(h, p)
    if args.json:
        _emit({"hierarchy": list(h), "axes": list(p), "count": len(mats), "matrices": [[list(r) for r in m] for m in mats]})
    else:
        print(placements_text(h, p, mats))
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    h, p = _layout(args)
    red = int_list(args.reduce, "reduce")
    mats = None if args.matrix is None else [parse_matrix(args.matrix)]
    s = synthesize_placements(h, p, red, Profile.parse(args.profile), positive_int(args.max_size, "max-size"), mats)
    if args.json:
        _emit(synthesis_json(s, lowered=args.lower))
    else:
        limit = positive_int(args.limit, "limit") if args.limit != "0" else None
        print(synthesis_text(s, limit))
    return 0


def cmd_systems(args: argparse.Namespace) -> int:
    rows = []
    for name, path in system_paths().items():
        spec = find_spec(str(path))
        levels = ", ".join(f"{lv.name} {lv.cardinality or 'N'}" for lv in spec.levels)
        rows.append({"name": name, "file": str(path), "levels": levels, "default_nodes": spec.default_nodes,
                     "classes": sorted(spec.classes), "description": spec.description})
    if args.json:
        _emit({"systems": rows})
    else:
        for r in rows:
            print(f"{r['name']:<10s} [{r['levels']}] (N = nodes, default {r['default_nodes']})  {r['description']}")
            print(f"{'':10s} link classes: {', '.join(r['classes'])}")
    return 0


def cmd_topo(args: argparse.Namespace) -> int:
    topo = _topology(args)
    if args.draw:
        draw_topology(topo, args.draw)
    if args.json:
        _emit(topology_json(topo))
    else:
        print(topology_text(topo))
        if args.draw:
            print(f"  picture    {args.draw}")
    return 0


def default_bytes(topo: Topology) -> int:
    """P2's buffer: 2^29 x nodes float32 per GPU."""
    return 2**29 * topo.node_count * 4


def cmd_simulate(args: argparse.Namespace) -> int:
    topo = _topology(args)
    h, p = _axes(args, topo.hierarchy)
    red = int_list(args.reduce, "reduce")
    nbytes = default_bytes(topo) if args.bytes is None else byte_size(args.bytes)
    if args.model not in MODELS:
        raise InputError(f"model: {args.model!r} is not one of {', '.join(MODELS)}")
    mats = None if args.matrix is None else [parse_matrix(args.matrix)]
    syn = synthesize_placements(h, p, red, Profile.parse(args.profile), positive_int(args.max_size, "max-size"), mats)
    if args.program != "all" and len(syn.matrices) > 1:
        options = "; ".join(f'"{format_matrix(m.matrix)}"' for m in syn.matrices)
        raise InputError(f"matrix: axes {','.join(map(str, p))} have {len(syn.matrices)} matrices; "
                         f"name one with --matrix ({options})")
    sim = Simulator(topo, args.algo, args.model, trace=args.trace is not None)
    rows = []
    for mp in syn.matrices:
        programs = mp.programs if args.program == "all" else (parse_program(args.program),)
        for prog in programs:
            check_program_completes(mp.lowering, prog)
            rows.append((mp.matrix, prog, sim.simulate(mp.lowering, prog, nbytes)))
    if args.trace:
        write_trace(args.trace, topo, [r for _, _, r in rows])
    if args.json:
        _emit({
            "system": topo.spec.name, "nodes": topo.node_count, "axes": list(p), "reduce_axes": list(syn.reduce_axes),
            "algo": args.algo, "model": args.model, "bytes_per_gpu": nbytes, "config": sim.config.to_json(),
            "programs": [program_result_json(m, prog, r) for m, prog, r in rows],
        })
    else:
        print(f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {list(p)} reduce "
              f"{list(syn.reduce_axes)}; {args.algo}, {args.model} model, {nbytes / 2**30:g} GiB per GPU")
        print(results_text(rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="p2sim", description=(
        "Synthesize parallelism placements and reduction programs for hierarchical GPU systems."))
    parser.add_argument("--version", action="version", version=f"p2sim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("placements", help="enumerate the parallelism matrices of axes over a hierarchy",
                       description="Enumerate every parallelism matrix of the axes over the hierarchy.")
    _add_layout(p, reduce=False)
    p.set_defaults(func=cmd_placements)

    p = sub.add_parser("synth", help="synthesize every reduction program for every matrix",
                       description="Synthesize every valid reduction program (shortest first) for every "
                                   "parallelism matrix, or for the one given with --matrix.")
    _add_layout(p)
    p.add_argument("--matrix", default=None, help='only this matrix, e.g. "[[2 2] [2 8]]"')
    p.add_argument("--profile", default="paper", help="rule profile: paper (P2's counts) or full (default: paper)")
    p.add_argument("--max-size", default=str(DEFAULT_MAX_SIZE), help=f"longest program (default: {DEFAULT_MAX_SIZE})")
    p.add_argument("--lower", action="store_true", help="with --json: include the global device groups of every step")
    p.add_argument("--limit", default="20", help="programs shown per matrix in the table (0 = all; default 20)")
    p.set_defaults(func=cmd_synth)

    p = sub.add_parser("systems", help="list the known systems",
                       description="List the system files p2sim knows (topologies/ and $P2SIM_TOPOLOGIES).")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_systems)

    p = sub.add_parser("topo", help="summarise a system's topology",
                       description="Summarise a system: devices, links by class, bisection bandwidth.")
    p.add_argument("system", help="system name or .toml file")
    p.add_argument("--nodes", default=None, help="node count (default: the system file's)")
    p.add_argument("--draw", default=None, metavar="FILE.png", help="also write a picture of the graph")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_topo)

    p = sub.add_parser("simulate", help="predict the time of programs on a system",
                       description="Simulate programs step by step on a system: every synthesized program "
                                   "(--program all) or one given in text form.")
    _add_layout(p, system=True)
    p.add_argument("--matrix", default=None, help='the parallelism matrix, e.g. "[[2 2] [2 8]]" (default: every matrix)')
    p.add_argument("--program", default="all", help="a program in text form, or all (default: all)")
    p.add_argument("--algo", default="ring", choices=["ring", "tree"], help="NCCL algorithm (default: ring)")
    p.add_argument("--bytes", default=None, help="buffer per GPU, e.g. 2GiB (default: P2's 2^29 x nodes float32)")
    p.add_argument("--model", default="des", help="des (contention-aware) or analytic (default: des)")
    p.add_argument("--profile", default="paper", help="rule profile for --program all (default: paper)")
    p.add_argument("--max-size", default=str(DEFAULT_MAX_SIZE), help=f"longest program (default: {DEFAULT_MAX_SIZE})")
    p.add_argument("--trace", default=None, metavar="FILE.json", help="write a Chrome trace of flows on links")
    p.set_defaults(func=cmd_simulate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return EXIT_INPUT
    try:
        return func(args)
    except P2SimError as e:
        print(f"p2sim {args.command}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
