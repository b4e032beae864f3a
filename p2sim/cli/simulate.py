"""``p2sim systems``, ``p2sim topo`` and ``p2sim simulate``."""

from __future__ import annotations

import argparse
import sys

from ..report.simulate import DRAW_SUFFIXES, draw_topology, simulate_text, topology_json, topology_text
from ..report.trace import write_trace
from ..studies.requests import topology_of
from ..studies.simulate import SimulateRequest, run_simulate
from ..topology import find_spec, system_paths
from ..util.fileio import check_output_file
from .common import check_csv, emit, options, write_csv


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
    topo = topology_of(args.system, args.nodes)
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
    check_csv(args)
    opts = dict(options(args, SimulateRequest.build), trace=args.trace is not None)
    result = run_simulate(SimulateRequest.build(**opts))
    if write_csv(args, result):
        pass
    elif args.json:
        emit(result.to_json())
    else:
        print(simulate_text(result))
    if args.trace:
        sys.stdout.flush()  # the results stand even if the trace cannot be written
        write_trace(args.trace, result.request.job.topology,
                    [(r, low) for (_, _, r), low in zip(result.rows, result.lowered)])
    return 0
