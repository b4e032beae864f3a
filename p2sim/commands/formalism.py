"""``p2sim placements`` and ``p2sim synth``."""

from __future__ import annotations

import argparse

from ..parsing import int_list, positive_int
from ..placement import enumerate_matrices, parse_matrix
from ..report.synth import placements_text, synthesis_json, synthesis_text
from ..synthesis import synthesize_placements
from .common import emit, layout, order, rules


def cmd_placements(args: argparse.Namespace) -> int:
    h, p = layout(args)
    mats = enumerate_matrices(h, p)
    if args.json:
        emit({"hierarchy": list(h), "axes": list(p), "count": len(mats), "matrices": [[list(r) for r in m] for m in mats]})
    else:
        print(placements_text(h, p, mats))
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    h, p = layout(args)
    red = int_list(args.reduce, "reduce")
    mats = None if args.matrix is None else [parse_matrix(args.matrix)]
    s = synthesize_placements(h, p, red, *rules(args), mats, order(args))
    if args.json:
        emit(synthesis_json(s, lowered=args.lower))
    else:
        limit = positive_int(args.limit, "limit") if args.limit != "0" else None
        print(synthesis_text(s, limit))
    return 0
