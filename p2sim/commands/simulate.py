"""``p2sim systems``, ``p2sim topo`` and ``p2sim simulate``."""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..parsing import int_list
from ..placement import format_matrix, parse_matrix
from ..program import parse_program
from ..report.simulate import draw_topology, program_result_json, results_text, topology_json, topology_text
from ..report.trace import write_trace
from ..sim import Simulator
from ..sim.model import check_model
from ..synthesis import placement_lowerings, synthesize_placements, validate_program
from ..topology import find_spec, system_paths
from .common import axes, buffer_bytes, emit, order, order_label, rules, topology


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
    topo = topology(args)
    if args.draw:
        draw_topology(topo, args.draw)
    if args.json:
        emit(topology_json(topo))
    else:
        print(topology_text(topo))
        if args.draw:
            print(f"  picture    {args.draw}")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    topo = topology(args)
    h, p = axes(args, topo.hierarchy)
    red = int_list(args.reduce, "reduce")
    nbytes = buffer_bytes(args, topo)
    check_model(args.model)
    if args.trace and args.model == "analytic":
        raise InputError("trace: --trace needs --model des; the analytic model computes each step in closed form "
                         "and has no flows to trace")
    mats = None if args.matrix is None else [parse_matrix(args.matrix)]
    profile, max_size = rules(args)
    chosen = order(args)
    if args.program == "all":
        syn = synthesize_placements(h, p, red, profile, max_size, mats, chosen)
        work = [(mp.matrix, mp.lowering, mp.programs) for mp in syn.matrices]
        reduce_axes = syn.reduce_axes
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
        reduce_axes = lws[0].reduce_axes
    sim = Simulator(topo, args.algo, args.model, trace=args.trace is not None, proto=args.proto)
    rows, lowered = [], []
    for matrix, lowering, programs in work:
        for prog in programs:
            rows.append((matrix, prog, sim.simulate(lowering, prog, nbytes)))
            lowered.append(lowering.lower(prog))
    if args.trace:
        write_trace(args.trace, topo, [(r, low) for (_, _, r), low in zip(rows, lowered)])
    if args.json:
        emit({
            "system": topo.spec.name, "nodes": topo.node_count, "axes": list(p), "reduce_axes": list(reduce_axes),
            "order": chosen.value, "algo": args.algo, "model": args.model, "bytes_per_gpu": nbytes,
            "proto": args.proto, "config": sim.config.to_json(topo.spec),
            "programs": [program_result_json(m, prog, r) for m, prog, r in rows],
        })
    else:
        print(f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {list(p)} reduce "
              f"{list(reduce_axes)}{order_label(chosen, reduce_axes)}; {args.algo}, {args.model} model, "
              f"{nbytes / 2**30:g} GiB per GPU")
        print(results_text(rows))
    return 0
