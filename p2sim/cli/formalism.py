"""``p2sim placements`` and ``p2sim synth``."""

from __future__ import annotations

import argparse

from .. import api
from ..report.synth import placements_header, placements_text, synthesis_text
from ..util.parsing import positive_int
from .common import emit, options


def cmd_placements(args: argparse.Namespace) -> int:
    result = api.placements(**options(args, api.placements))
    req = result.request
    if args.json:
        emit(result.to_json())
    else:  # the count first, flushed, before the matrices are listed
        print(placements_header(req.hierarchy, req.axes, req.count, req.axis_names, req.level_names), flush=True)
        print(placements_text(list(result.matrices), req.axis_names, req.level_names, req.node_level))
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    limit = None if args.limit == "0" else positive_int(args.limit, "limit")
    result = api.synthesize(**options(args, api.synthesize))
    req = result.request
    if args.json:
        emit(result.to_json(lower=args.lower))
    else:
        print(synthesis_text(result.synthesis, limit, req.axis_names, req.level_names, req.node_level))
    return 0
