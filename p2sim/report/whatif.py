"""Rendering of a what-if study: a line per point, and the best predicted time against the first varied parameter.

``whatif --out`` writes a page (HTML and Markdown) that opens with the answer (the fastest
point, its placement in words and program, and where the winner changes), then a table of
every point with its values in units, and the plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..formalism.naming import matrix_legend, order_label, reduce_text
from ..formalism.placement import format_matrix
from ..studies.variations import Variation
from ..studies.step_workload import overlap_text
from ..studies.whatif import WhatifResult
from ..studies.requests import EVERY_PROGRAM
from ..util.units import format_bytes, format_seconds
from .answer import Answer, algo_text, placement_words, ratio_text
from .files import data_uris, figure_png, render
from .plot_units import seconds_axis
from .tables import Column, Table

__all__ = ["whatif_text", "whatif_plot", "whatif_report", "whatif_answer", "whatif_table", "unit_of", "value_text"]

# the unit of a target's values as --vary takes them, by the target's last part
UNITS = {"bandwidth": "GB/s", "latency": "us", "nodes": "nodes", "oversubscription": ":1", "uplinks": "uplinks",
         "speed": "x"}


def _search_line(result: WhatifResult) -> str:
    """How many programs the points simulated, of how many (the bounded search skips the rest)."""
    programs, simulated = sum(s.programs for s in result.stats), sum(s.simulated for s in result.stats)
    if simulated == programs:
        return f"all points: every one of their {programs} programs simulated"
    return (f"all points: {simulated} of {programs} programs simulated, {programs - simulated} bounded out "
            "(lower bound above the point's best time and their matrix's best)")


def whatif_text(result: WhatifResult) -> str:
    """``p2sim whatif``'s answer as text: a line per point, marking where the winner changes."""
    if result.request.plans:  # a model's step at each point
        return step_text(result)
    req, s = result.request, result.request.settings
    # the axes as given: a '*' resolves per point
    given = ("one axis over all GPUs" if req.axes is None
             else f"axes {req.axes} reduce {reduce_text(result.reduce_axes, result.axis_names)}")
    if req.matrix is not None:
        given += f"; matrix {format_matrix(req.matrix)}"
    if req.program != EVERY_PROGRAM:
        given += f"; program {req.program}"
    lines = [f"{req.spec.name}: what if {'; '.join(req.vary_texts)}  ({given}; algo {s.algo}, {s.engine} engine"
             f"{order_label(s.order, result.reduce_axes)})",
             matrix_legend(result.axis_names, result.level_names),
             _search_line(result)]
    width = max([32] + [len(r["label"]) for r in result.rows])
    for r in result.rows:
        mark = "  <- winner changes" if r["winner_changed"] else ""
        lines.append(f"  {r['label']:<{width}} {format_bytes(r['bytes_per_gpu']):>9} {format_seconds(r['seconds']):>10}  "
                     f"{r['algo']:<4} {format_matrix(tuple(tuple(x) for x in r['matrix'])):<18} {r['program']}{mark}")
        lines.append(f"  {'':<{width}} bound by {', '.join(dict.fromkeys(r['bounds']))}"
                     + "".join(f"; note: {n}" for n in r["not_bound"]))
    places = result.placements
    per_nodes: dict[int, list[tuple[list[list[int]], list[str]]]] = {}
    for n, m, pts in places:
        per_nodes.setdefault(n, []).append((m, pts))
    if not result.placement_changes:
        if req.matrix is not None:
            lines.append(f"placement given: {format_matrix(req.matrix)} at every point")
        elif len(per_nodes) == 1:
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


def step_text(result: WhatifResult) -> str:
    """``whatif --model``: per point the best placement's step by axis (its time, tier, bound) and the default's."""
    req, s = result.request, result.request.settings
    work = req.plans[0].demand.workload
    lines = [f"{req.spec.name}: what if {'; '.join(req.vary_texts)}  (model {work.model.name}, axes {req.axes}; "
             f"algo {s.algo}, {s.engine} engine): each point's step as plan --model answers it",
             overlap_text(work), matrix_legend(result.axis_names, result.level_names)]
    width = max([32] + [len(r["label"]) for r in result.rows])
    for r in result.rows:
        mark = "  <- best placement changes" if r["winner_changed"] else ""
        lines.append(f"  {r['label']:<{width}} step {format_seconds(r['seconds']):>10}  "
                     f"{format_matrix(_matrix(r['matrix']))}  {r['placement']}{mark}")
        lines += [f"  {'':<{width}}   {a['axis']:<12} {format_seconds(a['seconds']):>10}  {a['tier']}; bound by "
                  f"{a['bound']}" for a in r["axes"]]
        lines.append(f"  {'':<{width}} default {format_seconds(r['default_seconds']):>10}  "
                     f"{format_matrix(_matrix(r['default_matrix']))}  {r['default_placement']}")
    return "\n".join(lines)


def _matrix(rows: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(r) for r in rows)


def unit_of(target: str) -> str:
    """The unit of a varied target's values: ``GB/s`` for a bandwidth, ``us`` for a latency, ... (``""``: none).

    >>> [unit_of(t) for t in ("nic.bandwidth", "nvswitch.latency", "nodes", "leaf.oversubscription", "routing")]
    ['GB/s', 'us', 'nodes', ':1', '']
    """
    return UNITS.get(target.rpartition(".")[2], "")


def value_text(target: str, value: float | str) -> str:
    """A varied value with its unit: ``12.5 GB/s``, ``4 nodes``, ``2:1``, ``0.5x``, ``ecmp``.

    >>> value_text("nic.bandwidth", 12.5), value_text("leaf.oversubscription", 2.0), value_text("routing", "ecmp")
    ('12.5 GB/s', '2:1', 'ecmp')
    """
    if isinstance(value, str):
        return value
    unit = unit_of(target)
    return f"{value:g}{unit}" if unit in (":1", "x") else f"{value:g} {unit}".rstrip()


def point_text(point: dict[str, Any]) -> str:
    """A point's settings with units: ``nvswitch.bandwidth = 5 GB/s, nodes = 4 nodes``."""
    # "nodes = 4 nodes" says it twice: a target named as its unit shows the value alone
    return ", ".join(value_text(k, v) if k == unit_of(k) else f"{k} = {value_text(k, v)}" for k, v in point.items())


class PointRow(NamedTuple):
    """A row of the page's table: the point's result row and what the page says about it."""

    row: dict[str, Any]
    placement: str  # the best placement in words
    vs_first: float  # the first point's best time / this point's
    fastest: bool
    placement_change: str  # same, changes, other node count, or '-' (first of its series)


def _rows(result: WhatifResult) -> list[PointRow]:
    req, rows = result.request, result.rows
    first, fastest = rows[0]["seconds"], min(r["seconds"] for r in rows)
    target = req.variations[0].target
    previous: dict[tuple, dict[str, Any]] = {}  # per series (the other targets fixed), as the study marks winners
    out = []
    for r in rows:
        series = tuple((k, v) for k, v in r["point"].items() if k != target)
        before = previous.get(series)
        previous[series] = r
        if before is None:
            change = "-"
        elif before["nodes"] != r["nodes"]:
            change = "other node count"
        else:
            change = "same" if before["matrix"] == r["matrix"] else "changes"
        words = placement_words(r["matrix"], result.axis_names, result.level_names, req.spec.node_level)
        out.append(PointRow(r, words, first / r["seconds"], r["seconds"] == fastest, change))
    return out


def _winner(p: PointRow) -> str:
    marks = (["fastest"] if p.fastest else []) + (["changes"] if p.row["winner_changed"] else [])
    return ", ".join(marks)


def whatif_table(result: WhatifResult) -> Table:
    target = result.request.variations[0].target
    cols = (
        Column("point", "the varied settings, with their units", lambda p: point_text(p.row["point"]), wrap=False),
        Column("buffer", "bytes reduced per GPU at the point", lambda p: format_bytes(p.row["bytes_per_gpu"]),
               numeric=True),
        Column("best time", "predicted time of the point's fastest (placement, program, algorithm)",
               lambda p: format_seconds(p.row["seconds"]), numeric=True),
        Column("vs first", "the first point's best time / this point's (above 1x: faster than the first point)",
               lambda p: f"{p.vs_first:.2f}x", numeric=True),
        Column("winner", f"fastest: the fastest point of the study; changes: the winning placement, program or "
               f"algorithm differs from the previous point along {target}", _winner),
        Column("best placement", "where each axis goes, by name", lambda p: p.placement),
        Column("placement", f"the best placement against the previous point along {target}: same, changes, or "
               "not comparable (another node count); - for the first point", lambda p: p.placement_change),
        Column("algo", "NCCL algorithm of the winner", lambda p: p.row["algo"]),
        Column("matrix", "the best placement's parallelism matrix", lambda p: format_matrix(_matrix(p.row["matrix"])),
               code=True, wrap=False),
        Column("program", "the winning reduction program", lambda p: p.row["program"], code=True),
        Column("bound by", "what bounds the winner's steps (a link class, a per-channel or protocol limit, or "
               "latency), and a note where a varied link class bounds none of them",
               lambda p: "; ".join(list(dict.fromkeys(p.row["bounds"])) + p.row["not_bound"])),
    )
    return Table.of("Every point", cols, _rows(result), intro="The points in the order they were run, the first "
                    f"varied setting ({target}) changing fastest.")


def whatif_answer(result: WhatifResult) -> Answer:
    """The fastest point with its placement and program, its gain over the first point, and where the winner changes."""
    rows = _rows(result)
    best = next(p for p in rows if p.fastest)
    first, slowest = rows[0], max(rows, key=lambda p: p.row["seconds"])
    r = best.row
    text = (f"Fastest at {point_text(r['point'])}: {best.placement}, reducing with `{r['program']}` "
            f"({algo_text(r['algo'])}) in {format_seconds(r['seconds'])} for {format_bytes(r['bytes_per_gpu'])} "
            "per GPU")
    other = slowest if best is first else first
    if other is not best:
        which = "the slowest point" if best is first else "the first point"
        text += (f", {ratio_text(r['seconds'], other.row['seconds'])} {which} ({point_text(other.row['point'])}: "
                 f"{format_seconds(other.row['seconds'])})")
    target = result.request.variations[0].target
    changes = [p for p in rows if p.row["winner_changed"]]
    if changes:
        text += (f". The winner changes along {target} at " + "; ".join(point_text(p.row["point"]) for p in changes)
                 + ("; the best placement changes too." if result.placement_changes
                    else "; the best placement stays the same (the program or algorithm changes)."))
    else:
        text += f". The winner stays the same along {target}."
    text += f" What bounds it there: {', '.join(dict.fromkeys(r['bounds']))}."
    unbound = [p for p in rows if p.row["not_bound"]]
    if unbound:  # more of the varied class buys nothing at these points
        cls = unbound[0].row["not_bound"][0].split(" ")[0]
        text += (" At " + " and ".join(point_text(p.row["point"]) for p in unbound) + f", {cls} links bound none of "
                 f"the best program's steps: changing {cls} further changes nothing there.")
    return Answer(text, tuple(result.warnings))


def whatif_plot(variations: Sequence[Variation], rows: Sequence[dict[str, Any]]) -> bytes:
    """Best predicted time against the first varied setting, a line per combination of the others; stars mark a
    changed winner, a ring the fastest point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = variations[0]
    unit = unit_of(first.target)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    lines: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        rest = tuple((k, v) for k, v in r["point"].items() if k != first.target)
        lines.setdefault(rest, []).append(r)
    fastest = min(rows, key=lambda r: r["seconds"])
    for rest, rs in lines.items():
        xs = [r["point"][first.target] for r in rs]
        label = point_text(dict(rest)) or "best"
        ax.plot(xs, [r["seconds"] for r in rs], marker="o", label=label)
    changed = [r for r in rows if r["winner_changed"]]
    if changed:
        ax.scatter([r["point"][first.target] for r in changed], [r["seconds"] for r in changed], marker="*", s=200,
                   color="#d62728", zorder=3, label="winner changes")
    ax.scatter([fastest["point"][first.target]], [fastest["seconds"]], s=260, facecolors="none", edgecolors="black",
               linewidths=1.5, zorder=4, label="fastest point")
    numeric = [v for v in first.values if not isinstance(v, str)]
    if numeric and min(numeric) > 0 and max(numeric) / min(numeric) >= 10:  # a decade or more: log, as sizes are
        ax.set_xscale("log")
    if numeric:
        ax.set_xticks(numeric, [value_text(first.target, v) for v in numeric])
        ax.minorticks_off()
    ax.set_xlabel(first.target + (f" ({unit})" if unit not in ("", ":1", "x", first.target) else ""))
    seconds_axis(ax)
    ax.set_ylabel("best predicted time")
    ax.set_title("what-if: best placement and program at each point")
    ax.legend(fontsize=8)
    return figure_png(fig)


def whatif_report(result: WhatifResult) -> dict[str, bytes]:
    """``whatif --out``'s files: the page (HTML, Markdown) and the plot."""
    images = {"whatif.png": whatif_plot(result.request.variations, result.rows)}
    captions = {"whatif.png": f"Best predicted time against {result.request.variations[0].target}, a line per "
                              "combination of the other settings; a star marks a changed winner, a ring the fastest "
                              "point."}
    uris = data_uris(images)
    data = {"title": f"p2sim whatif: {result.request.spec.name}", "answer": whatif_answer(result),
            "header": "\n".join(whatif_text(result).splitlines()[:3]), "tables": [whatif_table(result)],
            "images": [{"name": n, "caption": captions[n], "uri": uris[n]} for n in images]}
    files = {"whatif.md": render("whatif.md", **data), "whatif.html": render("whatif.html", **data)}
    files.update(images)
    return files
