"""Rendering of rankings: table, JSON, Markdown / HTML report with plots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..analysis.rank import RankEntry, Ranking
from ..hierarchy import Lowering
from ..placement import Placement, format_matrix
from ..program import SEPARATOR
from ..topology import Topology
from .files import figure_png, markdown_to_html
from .simulate import choice_text

__all__ = ["ranking_text", "ranking_json", "ranking_report"]


def _spans(e: RankEntry) -> str:
    parts = []
    for s, ins in zip(e.timing.steps, e.timing.text.split(SEPARATOR)):
        where = "inside a node" if s.nodes_spanned == 1 else f"across {s.nodes_spanned} nodes"
        parts.append(f"{ins.split('(')[0]} {s.groups}x{s.group_size} {where} ({choice_text(s)})")
    return "; ".join(parts)


def ranking_text(header: str, ranking: Ranking, top: int) -> str:
    lines = [header, "", f"{'rank':>4}  {'seconds':>10}  {'speedup':>7}  {'algo':<4}  {'matrix':<22} program"]
    for i, e in enumerate(ranking.top(top), 1):
        lines.append(f"{i:4d}  {e.seconds:10.4f}  {e.speedup:6.2f}x  {e.algo:<4}  {format_matrix(e.matrix):<22} {e.timing.text}")
        lines.append(f"{'':36}{'':22} groups: {_spans(e)}")
    lines += ["", "best program per matrix:"]
    for s in ranking.matrices:
        lines.append(f"  {format_matrix(s.matrix):<22} {s.algo:<4} AllReduce {s.allreduce.seconds:10.4f} s  "
                     f"best {s.best.seconds:10.4f} s ({s.allreduce.seconds / s.best.seconds:.2f}x)  {s.best.text}")
    return "\n".join(lines)


def ranking_json(meta: dict[str, Any], ranking: Ranking, top: int) -> dict[str, Any]:
    return dict(
        meta,
        simulations=len(ranking.entries),
        top=[dict(rank=i, **e.to_json()) for i, e in enumerate(ranking.top(top), 1)],
        matrices=[s.to_json() for s in ranking.matrices],
    )


def _plot_programs(ranking: Ranking) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(ranking.matrices)), 4.5))
    for x, s in enumerate(ranking.matrices):
        ys = sorted(p.seconds for p in s.programs)
        jitter = [x + 0.25 * ((i % 9) - 4) / 4 for i in range(len(ys))]
        ax.scatter(jitter, ys, s=8, alpha=0.6, color="#1f77b4")
        ax.scatter([x], [s.allreduce.seconds], marker="_", s=600, color="#d62728",
                   label="AllReduce" if x == 0 else None)
    ax.set_xticks(range(len(ranking.matrices)),
                  [f"{format_matrix(s.matrix)}\n{s.algo}" for s in ranking.matrices], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("predicted seconds")
    ax.set_title("predicted time of every program, per matrix")
    ax.legend()
    return figure_png(fig)


def _plot_best(ranking: Ranking) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(ranking.matrices)), 4.5))
    xs = range(len(ranking.matrices))
    ax.bar([x - 0.2 for x in xs], [s.allreduce.seconds for s in ranking.matrices], 0.4, label="AllReduce")
    ax.bar([x + 0.2 for x in xs], [s.best.seconds for s in ranking.matrices], 0.4, label="best program")
    ax.set_xticks(list(xs), [f"{format_matrix(s.matrix)}\n{s.algo}" for s in ranking.matrices], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("predicted seconds")
    ax.set_title("best program per matrix against its AllReduce")
    ax.legend()
    return figure_png(fig)


def placement_figure(topo: Topology, lowering: Lowering) -> bytes:
    """Devices as a grid (a row per node), coloured by reduction group."""
    import matplotlib.pyplot as plt
    import numpy as np

    group = np.empty(topo.devices, dtype=int)
    for r, row in enumerate(lowering.table):
        group[row] = r
    grid = group.reshape(topo.node_count, topo.gpus_per_node)
    fig, ax = plt.subplots(figsize=(max(5, 0.55 * topo.gpus_per_node), max(2.0, 0.5 * topo.node_count + 1)))
    ax.imshow(grid, cmap="tab20", aspect="auto")
    pl: Placement = lowering.placement
    if topo.devices <= 128:
        for d in range(topo.devices):
            n, g = divmod(d, topo.gpus_per_node)
            ax.text(g, n, ",".join(map(str, pl.coordinates(d))), ha="center", va="center", fontsize=7)
    ax.set_xlabel("GPU in node")
    ax.set_ylabel("node")
    ax.set_title(f"{format_matrix(pl.matrix)}: colour = reduction group over axes {list(lowering.reduce_axes)}; "
                 "labels = axis coordinates", fontsize=9)
    return figure_png(fig)


def ranking_report(title: str, header: str, ranking: Ranking, top: int, topo: Topology,
                   best_lowering: Lowering, sections: Sequence[str] = ()) -> dict[str, bytes]:
    """The report files; ``sections`` are further Markdown lines, placed before the plots."""
    images = {
        "programs.png": _plot_programs(ranking),
        "best_vs_allreduce.png": _plot_best(ranking),
        "placement.png": placement_figure(topo, best_lowering),
    }
    md = [f"# {title}", "", header, "", "| rank | seconds | speedup | algo | matrix | program | groups |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    for i, e in enumerate(ranking.top(top), 1):
        md.append(f"| {i} | {e.seconds:.4f} | {e.speedup:.2f}x | {e.algo} | `{format_matrix(e.matrix)}` | "
                  f"`{e.timing.text}` | {_spans(e)} |")
    md += ["", "## Best program per matrix", "", "| matrix | algo | AllReduce s | best s | speedup | best program |",
           "| --- | --- | --- | --- | --- | --- |"]
    for s in ranking.matrices:
        md.append(f"| `{format_matrix(s.matrix)}` | {s.algo} | {s.allreduce.seconds:.4f} | {s.best.seconds:.4f} | "
                  f"{s.allreduce.seconds / s.best.seconds:.2f}x | `{s.best.text}` |")
    md += ["", *sections, "## Plots", "", "![programs](programs.png)", "", "![best](best_vs_allreduce.png)", "",
           "## Best placement", "", "![placement](placement.png)", ""]
    text = "\n".join(md)
    files = {"report.md": text.encode(), "report.html": markdown_to_html(title, text, images)}
    files.update(images)
    return files
