"""Rendering of a what-if study: a line per point, and the best predicted time against the first varied parameter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..formalism.naming import matrix_legend, order_label, reduce_text
from ..formalism.placement import format_matrix
from ..studies.variations import Variation
from ..studies.whatif import WhatifResult
from ..util.units import format_bytes, format_seconds
from .files import figure_png

__all__ = ["whatif_text", "whatif_plot"]


def _search_line(result: WhatifResult) -> str:
    """How many programs the points simulated, of how many (the bounded search skips the rest)."""
    programs, simulated = sum(s.programs for s in result.stats), sum(s.simulated for s in result.stats)
    if simulated == programs:
        return f"all points: every one of their {programs} programs simulated"
    return (f"all points: {simulated} of {programs} programs simulated, {programs - simulated} bounded out "
            "(lower bound above the point's best time and their matrix's best)")


def whatif_text(result: WhatifResult) -> str:
    """``p2sim whatif``'s answer as text: a line per point, marking where the winner changes."""
    req = result.request
    # the axes as given: a '*' resolves per point
    given = ("one axis over all GPUs" if req.axes is None
             else f"axes {req.axes} reduce {reduce_text(result.reduce_axes, result.axis_names)}")
    lines = [f"{req.spec.name}: what if {'; '.join(req.vary_texts)}  ({given}; algo {req.algo}, {req.model} model"
             f"{order_label(req.order, result.reduce_axes)})",
             matrix_legend(result.axis_names, result.level_names),
             _search_line(result)]
    width = max([32] + [len(r["label"]) for r in result.rows])
    for r in result.rows:
        mark = "  <- winner changes" if r["winner_changed"] else ""
        lines.append(f"  {r['label']:<{width}} {format_bytes(r['bytes_per_gpu']):>9} {format_seconds(r['seconds']):>10}  "
                     f"{r['algo']:<4} {format_matrix(tuple(tuple(x) for x in r['matrix'])):<18} {r['program']}{mark}")
    places = result.placements
    per_nodes: dict[int, list[tuple[list[list[int]], list[str]]]] = {}
    for n, m, pts in places:
        per_nodes.setdefault(n, []).append((m, pts))
    if not result.placement_changes:
        if len(per_nodes) == 1:
            lines.append(f"best placement: {format_matrix(_matrix(places[0][1]))} at every point")
        else:
            lines.append("best placement: the same at every point of a node count: " + ", ".join(
                f"{format_matrix(_matrix(ms[0][0]))} on {n} nodes" for n, ms in per_nodes.items()))
    else:
        for n, ms in per_nodes.items():
            if len(ms) > 1:
                lines.append(f"best placement changes on {n} nodes: " + "; ".join(
                    f"{format_matrix(_matrix(m))} at {', '.join(p)}" for m, p in ms))
    return "\n".join(lines)


def _matrix(rows: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(r) for r in rows)


def whatif_plot(variations: Sequence[Variation], rows: Sequence[dict[str, Any]]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = variations[0]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lines: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        rest = tuple((k, v) for k, v in r["point"].items() if k != first.target)
        lines.setdefault(rest, []).append(r)
    for rest, rs in lines.items():
        xs = [r["point"][first.target] for r in rs]
        label = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in rest) or "best"
        ax.plot(xs, [r["seconds"] for r in rs], marker="o", label=label)
        for r in rs:
            if r["winner_changed"]:
                ax.annotate("winner changes", (r["point"][first.target], r["seconds"]), fontsize=7,
                            xytext=(4, 6), textcoords="offset points")
    ax.set_xlabel(first.target)
    ax.set_ylabel("best predicted seconds")
    ax.set_yscale("log")
    ax.set_title("what-if: best matrix and program at each point")
    ax.legend(fontsize=8)
    return figure_png(fig)
