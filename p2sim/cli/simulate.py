"""``p2sim systems``, ``p2sim topo`` and ``p2sim simulate``."""

from __future__ import annotations

import argparse
import sys

from .. import api
from ..report.simulate import DRAW_SUFFIXES, draw_topology, simulate_text, topology_json, topology_text
from ..report.trace import write_trace
from ..util.fileio import check_output_file
from .common import answer, emit


def cmd_systems(args: argparse.Namespace) -> int:
    rows = api.systems()
    if args.json:
        emit({"systems": rows})
    else:
        for r in rows:
            print(f"{r['name']:<10s} [{r['levels']}] (N = nodes, default {r['default_nodes']})  {r['description']}")
            print(f"{'':10s} link classes: {', '.join(map(str, r['classes']))}")  # type: ignore[call-overload]
    return 0


def cmd_topo(args: argparse.Namespace) -> int:
    if args.draw:
        check_output_file(args.draw, "draw", DRAW_SUFFIXES)
    summary = api.topo(system=args.system, nodes=args.nodes)
    if args.json:
        emit(topology_json(summary))
    else:
        print(topology_text(summary), flush=True)
    if args.draw:
        draw_topology(summary.topology, args.draw)
        if not args.json:
            print(f"  picture    {args.draw}")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.trace:
        check_output_file(args.trace, "trace")
    # --trace names the file; the API's trace says whether to keep the flows for it
    result = answer(args, api.simulate, simulate_text, trace=args.trace is not None)
    if args.trace:
        sys.stdout.flush()  # the results stand even if the trace cannot be written
        write_trace(args.trace, result.request.job.topology,
                    [(r, low) for (_, _, r), low in zip(result.rows, result.lowered)])
    return 0
