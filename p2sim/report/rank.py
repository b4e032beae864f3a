"""Rendering of rankings: table, JSON, Markdown / HTML report with plots."""

from __future__ import annotations

from collections.abc import Sequence

from ..formalism.naming import axes_text, matrix_legend, order_label, reduce_text
from ..studies.rank import RankResult
from ..studies.ranking import MatrixSummary, RankEntry, Ranking
from ..studies.search import SearchStats
from ..util.units import format_bytes
from .orders import comparison_table, comparison_text
from ..formalism.hierarchy import Lowering
from ..formalism.placement import Placement, format_matrix
from ..formalism.program import SEPARATOR
from ..topology import Topology
from .files import data_uris, figure_png, render
from ..util.units import format_seconds
from .tables import Column, Table
from .simulate import choice_text

__all__ = ["ranking_text", "ranking_report", "ranking_tables", "RANK_COLUMNS", "MATRIX_COLUMNS", "rank_header",
           "rank_text", "rank_report", "search_text"]


def _spans(e: RankEntry) -> str:
    parts = []
    for s, ins in zip(e.timing.steps, e.timing.text.split(SEPARATOR)):
        where = "inside a node" if s.nodes_spanned == 1 else f"across {s.nodes_spanned} nodes"
        parts.append(f"{ins.split('(')[0]} {s.groups}x{s.group_size} {where} ({choice_text(s)})")
    return "; ".join(parts)


def ranking_text(header: str, ranking: Ranking, top: int) -> str:
    """The top entries and each matrix's best program, times in adaptive units."""
    lines = [header, "speedup = time of the same matrix's AllReduce with the same algorithm / the program's time",
             "", f"{'rank':>4}  {'time':>10}  {'speedup':>7}  {'algo':<4}  {'matrix':<22} program"]
    for i, e in enumerate(ranking.top(top), 1):
        lines.append(f"{i:4d}  {format_seconds(e.seconds):>10}  {e.speedup:6.2f}x  {e.algo:<4}  "
                     f"{format_matrix(e.matrix):<22} {e.timing.text}")
        lines.append(f"{'':36}{'':22} groups: {_spans(e)}")
    lines += ["", "best program per matrix:"]
    for s in ranking.matrices:
        lines.append(f"  {format_matrix(s.matrix):<22} {s.algo:<4} AllReduce {format_seconds(s.allreduce.seconds):>10}"
                     f"  best {format_seconds(s.best.seconds):>10} ({s.allreduce.seconds / s.best.seconds:.2f}x)  "
                     f"{s.best.text}")
    return "\n".join(lines)


def search_text(stats: SearchStats, top: int | None = None) -> str:
    """What a search simulated and skipped, in words (one line)."""
    text = f"{stats.simulated} of {stats.programs} programs simulated"
    if stats.bounded_out:
        nth = {1: "1st", 2: "2nd", 3: "3rd"}.get(top, f"{top}th") if top else ""
        why = (f"the {nth} best time and " if top else "") + "their matrix's best"
        text += f", {stats.bounded_out} bounded out (lower bound above {why})"
    if stats.searched < stats.matrices:
        text += (f"; only the {stats.searched} of {stats.matrices} (matrix, algorithm) pairs with the least lower "
                 f"bounds searched (--top-matrices)")
    if stats.stopped_by_budget:
        text += (f"; stopped by --budget {stats.budget_seconds:g} s: NOT proven, programs with lower bounds from "
                 f"{stats.next_bound:.4g} s on were not simulated")
    return text


def rank_header(result: RankResult) -> str:
    """The job, the search and the matrix legend (the first lines of the text and of the report)."""
    req, job = result.request, result.request.job
    topo, names, red = job.topology, job.axis_names, result.reduce_axes
    scope = result.scope
    return (f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {axes_text(job.axes, names)} reduce "
            f"{reduce_text(red, names)}{order_label(req.order, red)}; algo {req.algo}, {req.model} model, "
            f"{format_bytes(job.bytes_per_gpu)} per GPU; {search_text(result.stats, req.top)}"
            + (f"\n{scope}" if scope else "") + f"\n{matrix_legend(names, topo.level_names)}")


def rank_text(result: RankResult) -> str:
    """``p2sim rank``'s answer: the ranking, the best placement in words and (``--compare-orders``) both orders."""
    best = result.best
    text = (ranking_text(rank_header(result), result.ranking, result.request.top)
            + f"\n\nbest placement {format_matrix(best.matrix)}: {result.placement(best.matrix)}")
    if result.comparison is not None:
        text += "\n\n" + comparison_text(result.comparison)
    return text


def rank_report(result: RankResult) -> dict[str, bytes]:
    """``rank --out``'s files."""
    req, job = result.request, result.request.job
    topo = job.topology
    lowering = Lowering.of(Placement.of(topo.hierarchy, job.axes, result.best.matrix), result.reduce_axes, req.order)
    extra = (comparison_table(result.comparison),) if result.comparison is not None else ()
    return ranking_report(f"p2sim rank: {topo.spec.name}", rank_header(result), result.ranking, req.top, topo,
                          lowering, extra)


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
    ax.set_title("predicted time of every simulated program, per matrix")
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
    if topo.devices <= 128:  # integer ticks while they stay readable
        ax.set_xticks(range(topo.gpus_per_node))
        ax.set_yticks(range(topo.node_count))
    ax.set_xlabel("GPU in node")
    ax.set_ylabel("node")
    ax.set_title(f"{format_matrix(pl.matrix)}: colour = reduction group over axes {list(lowering.reduce_axes)}; "
                 "labels = axis coordinates", fontsize=9)
    return figure_png(fig)


SPEEDUP_BASIS = ("Every speedup is relative to the same matrix's single AllReduce(slice=0, Inside) with the "
                 "same algorithm: it compares programs within one (matrix, algorithm), never algorithms or matrices "
                 "with each other, so two rows of equal time show different speedups when their algorithms' "
                 "AllReduces take different times (the AllReduce column).")

MATRIX_HELP = "parallelism matrix: one row per axis, one column per hierarchy level (outermost first)"
ALGO_HELP = "NCCL algorithm: ring, or tree (the tree applies to AllReduce steps only, as in NCCL)"

# the ranking table: one Column per column, so that a column is added here only
RANK_COLUMNS: tuple[Column, ...] = (
    Column("rank", "position by predicted seconds, fastest first", lambda r: str(r[0]), numeric=True),
    Column("time", "predicted time of the whole program, its steps one after another",
           lambda r: format_seconds(r[1].seconds), numeric=True),
    Column("AllReduce", "predicted time of the same matrix's single AllReduce with the same algorithm: the basis "
           "of the speedup", lambda r: format_seconds(r[1].allreduce_seconds), numeric=True),
    Column("speedup", "AllReduce / time (1.00x: as fast as that AllReduce)",
           lambda r: f"{r[1].speedup:.2f}x", numeric=True),
    Column("algo", ALGO_HELP, lambda r: r[1].algo),
    Column("matrix", MATRIX_HELP, lambda r: format_matrix(r[1].matrix), code=True, wrap=False),
    Column("program", "the reduction program in text form, steps separated by ;", lambda r: r[1].timing.text,
           code=True),
    Column("groups", "per step: the collective, (groups)x(GPUs per group), and whether a group stays inside a node",
           lambda r: _spans(r[1])),
)

def _program_count(s: MatrixSummary) -> str:
    if s.count is None or s.count == len(s.programs):
        return str(len(s.programs))
    return f"{s.count} ({len(s.programs)})"


MATRIX_COLUMNS: tuple[Column, ...] = (
    Column("matrix", MATRIX_HELP, lambda s: format_matrix(s.matrix), code=True, wrap=False),
    Column("algo", ALGO_HELP, lambda s: s.algo),
    Column("programs", "programs synthesized for the matrix (in brackets: those simulated, where the bounded "
           "search left some out because their lower bound could not win)", _program_count, numeric=True),
    Column("AllReduce", "predicted time of the matrix's single AllReduce with this algorithm",
           lambda s: format_seconds(s.allreduce.seconds), numeric=True),
    Column("best", "predicted time of the matrix's fastest program with this algorithm",
           lambda s: format_seconds(s.best.seconds), numeric=True),
    Column("speedup", "AllReduce / best", lambda s: f"{s.allreduce.seconds / s.best.seconds:.2f}x", numeric=True),
    Column("best program", "the fastest program", lambda s: s.best.text, code=True),
)


def ranking_tables(ranking: Ranking, top: int) -> list[Table]:
    total = sum(len(s.programs) if s.count is None else s.count for s in ranking.matrices)
    simulated = len(ranking.entries)
    of = f"{simulated}" if simulated == total else f"{simulated} simulated of {total}"
    return [
        Table.of(f"Top {min(top, simulated)} of {of} (matrix, program, algorithm)",
                 RANK_COLUMNS, enumerate(ranking.top(top), 1)),
        Table.of("Best program per matrix and algorithm", MATRIX_COLUMNS, ranking.matrices,
                 intro="Fastest first, by best time."),
    ]


def ranking_report(title: str, header: str, ranking: Ranking, top: int, topo: Topology,
                   best_lowering: Lowering, extra: Sequence[Table] = ()) -> dict[str, bytes]:
    """The report files; ``extra`` tables follow the ranking's."""
    images = {
        "programs.png": _plot_programs(ranking),
        "best_vs_allreduce.png": _plot_best(ranking),
        "placement.png": placement_figure(topo, best_lowering),
    }
    captions = {
        "programs.png": "Predicted seconds of every simulated program per (matrix, algorithm); the red bar is the AllReduce.",
        "best_vs_allreduce.png": "Each (matrix, algorithm): its AllReduce against its fastest program.",
        "placement.png": f"The best matrix {format_matrix(best_lowering.placement.matrix)}: GPUs by node, coloured "
                         f"by reduction group over axes {list(best_lowering.reduce_axes)}.",
    }
    uris = data_uris(images)
    figs = [{"name": n, "caption": captions[n], "uri": uris[n]} for n in images]
    data = {"title": title, "header": header, "basis": SPEEDUP_BASIS,
            "tables": ranking_tables(ranking, top) + list(extra), "images": figs}
    files = {"report.md": render("rank.md", **data), "report.html": render("rank.html", **data)}
    files.update(images)
    return files
