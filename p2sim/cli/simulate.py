"""``p2sim systems``, ``p2sim topo`` and ``p2sim simulate``."""

from __future__ import annotations

import argparse
import sys

from ..util.errors import InputError
from ..formalism.placement import format_matrix, parse_matrix
from ..formalism.program import parse_program
from ..util.fileio import check_output_file
from ..report.simulate import DRAW_SUFFIXES, draw_topology, program_result_json, results_text, topology_json, topology_text
from ..report.trace import write_trace
from ..sim import Simulator
from ..sim.model import check_model
from ..studies.jobsize import announce, plural, program_counts
from ..formalism.placement import count_matrices
from ..report.axes import axes_text, describe_placement, matrix_legend, reduce_text
from ..formalism.synthesis import placement_lowerings, synthesize, validate_program
from ..topology import find_spec, system_paths
from ..util.units import format_bytes
from .common import (axes, axis_names, buffer_bytes, emit, limits, order, order_label, reduce_axes, rules, topology,
                     warn_memory)


def cmd_systems(args: argparse.Namespace) -> int:
    rows = []
    for name, path in system_paths().items():
        spec = find_spec(str(path))
        levels = ", ".join(f"{lv.name} {lv.cardinality or 'N'}" for lv in spec.levels)
        rows.append({"name": name, "file": str(path), "levels": levels, "default_nodes": spec.default_nodes,
                     "classes": sorted(spec.classes), "description": spec.description})
    if args.json:
        emit({"systems": rows})
    else:
        for r in rows:
            print(f"{r['name']:<10s} [{r['levels']}] (N = nodes, default {r['default_nodes']})  {r['description']}")
            print(f"{'':10s} link classes: {', '.join(r['classes'])}")
    return 0


def cmd_topo(args: argparse.Namespace) -> int:
    if args.draw:
        check_output_file(args.draw, "draw", DRAW_SUFFIXES)
    topo = topology(args)
    if args.json:
        emit(topology_json(topo))
    else:
        print(topology_text(topo), flush=True)
    if args.draw:
        draw_topology(topo, args.draw)
        if not args.json:
            print(f"  picture    {args.draw}")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.trace:
        check_output_file(args.trace, "trace")
    topo = topology(args)
    h, p = axes(args, topo.hierarchy)
    names = axis_names(args, len(p))
    red = reduce_axes(args, names)
    nbytes = buffer_bytes(args, topo)
    check_model(args.model)
    if args.trace and args.model == "analytic":
        raise InputError("trace: --trace needs --model des; the analytic model computes each step in closed form "
                         "and has no flows to trace")
    mats = None if args.matrix is None else [parse_matrix(args.matrix)]
    profile, max_size = rules(args)
    chosen = order(args)
    lim = limits(args)
    if args.program == "all":
        if mats is None:
            lim.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {topo.spec.name}")
        lws = placement_lowerings(h, p, red, mats, chosen)
        counts = program_counts([lw.placement.matrix for lw in lws], red, profile, max_size, lim)
        lim.check_simulations(sum(counts), f"{plural(len(lws), 'matrix')} with {sum(counts)} programs")
        work = [(lw.placement.matrix, lw, synthesize(lw.synthesis, profile, max_size)) for lw in lws]
        reduce_axes_used = lws[0].reduce_axes
    else:
        # one program: check it on compact states; nothing is synthesized
        lws = placement_lowerings(h, p, red, mats, chosen)
        if len(lws) > 1:
            options = "; ".join(f'"{format_matrix(lw.placement.matrix)}"' for lw in lws)
            raise InputError(f"matrix: axes {','.join(map(str, p))} have {len(lws)} matrices; "
                             f"name one with --matrix ({options})")
        prog = parse_program(args.program)
        validate_program(lws[0].synthesis, prog)
        work = [(lws[0].placement.matrix, lws[0], (prog,))]
        reduce_axes_used = lws[0].reduce_axes
    sim = Simulator(topo, args.algo, args.model, trace=args.trace is not None, proto=args.proto)
    warn_memory("simulate", topo.spec, nbytes, args.bytes is None, topo.node_count)
    if args.program == "all":
        announce("simulate", f"{plural(len(work), 'matrix')}, {plural(sum(len(w[2]) for w in work), 'simulation')}")
    levels = topo.level_names
    rows, lowered = [], []
    for matrix, lowering, programs in work:
        for prog in programs:
            rows.append((matrix, prog, sim.simulate(lowering, prog, nbytes)))
            lowered.append(lowering.lower(prog))
    if args.json:
        emit({
            "system": topo.spec.name, "nodes": topo.node_count, "axes": list(p), "axis_names": list(names),
            "level_names": list(levels), "reduce_axes": list(reduce_axes_used),
            "order": chosen.value, "algo": args.algo, "model": args.model, "bytes_per_gpu": nbytes,
            "proto": args.proto, "config": sim.config.to_json(topo.spec),
            "programs": [dict(program_result_json(m, prog, r),
                              placement=describe_placement(m, names, levels, topo.spec.node_level))
                         for m, prog, r in rows],
        })
    else:
        print(f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {axes_text(p, names)} reduce "
              f"{reduce_text(reduce_axes_used, names)}{order_label(chosen, reduce_axes_used)}; {args.algo}, "
              f"{args.model} model, {format_bytes(nbytes)} per GPU")
        print(matrix_legend(names, levels))
        print(results_text(rows, lambda m: describe_placement(m, names, levels, topo.spec.node_level)))
    if args.trace:
        sys.stdout.flush()  # the results stand even if the trace cannot be written
        write_trace(args.trace, topo, [(r, low) for (_, _, r), low in zip(rows, lowered)])
    return 0
