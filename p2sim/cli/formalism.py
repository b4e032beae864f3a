"""``p2sim placements`` and ``p2sim synth``."""

from __future__ import annotations

import argparse
import math

from ..studies.jobsize import announce, plural, synthesis_cardinalities
from ..util.errors import PlacementError
from ..formalism.hierarchy import reduce_axes_of
from ..formalism.placement import Placement, count_matrices, enumerate_matrices, parse_matrix
from ..report.axes import describe_placement
from ..report.synth import placements_header, placements_text, synthesis_json, synthesis_text
from ..formalism.synthesis import synthesize_placements
from ..util.parsing import positive_int
from .common import axis_names, emit, layout_levels, limits, order, reduce_axes, rules


def _what(h: tuple[int, ...], p: tuple[int, ...]) -> str:
    return f"axes {','.join(map(str, p))} over hierarchy {','.join(map(str, h))}"


def cmd_placements(args: argparse.Namespace) -> int:
    h, p, levels, node_level = layout_levels(args)
    names = axis_names(args, len(p))
    count = count_matrices(h, p)
    limits(args).check_matrices(count, _what(h, p))
    if not args.json:  # the count first, flushed, before the matrices are listed
        print(placements_header(h, p, count, names, levels), flush=True)
    mats = enumerate_matrices(h, p)
    if args.json:
        emit({"hierarchy": list(h), "axes": list(p), "axis_names": list(names), "level_names": list(levels),
              "count": len(mats), "matrices": [[list(r) for r in m] for m in mats],
              "placements": [describe_placement(m, names, levels, node_level) for m in mats]})
    else:
        print(placements_text(mats, names, levels, node_level))
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    h, p, levels, node_level = layout_levels(args)
    names = axis_names(args, len(p))
    red = reduce_axes(args, names)
    profile, max_size = rules(args)
    lim = limits(args)
    if args.matrix is None:
        lim.check_matrices(count_matrices(h, p), _what(h, p))
        mats = enumerate_matrices(h, p)
    else:
        mats = [parse_matrix(args.matrix)]
        Placement.of(h, p, mats[0])
    red = reduce_axes_of(p, red)
    if math.prod(p[i] for i in red) < 2:
        raise PlacementError("reduce: the reduction axes have size 1, so there is nothing to reduce")
    limit = None if args.limit == "0" else positive_int(args.limit, "limit")
    lowerings_of = list(dict.fromkeys(synthesis_cardinalities(m, red) for m in mats))
    lim.check_synthesis(lowerings_of, max_size)
    announce("synth", f"{plural(len(mats), 'matrix')}, {plural(len(lowerings_of), 'synthesis hierarchy')} "
                      "to synthesize")
    s = synthesize_placements(h, p, red, profile, max_size, mats, order(args))
    if args.json:
        emit(synthesis_json(s, lowered=args.lower, names=names, levels=levels))
    else:
        print(synthesis_text(s, limit, names, levels, node_level))
    return 0
