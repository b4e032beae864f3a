"""Rendering of rankings: table, JSON, Markdown / HTML report with plots.

The report opens with the answer (:func:`rank_answer`): the best placement in words, its
program, predicted time and gain over the default placement's plain AllReduce, then the
JAX and PyTorch code that builds its mesh; the ranking tables and plots follow as evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..formalism.hierarchy import Lowering
from ..formalism.naming import axes_text, matrix_legend, order_label, reduce_text
from ..formalism.placement import Matrix, Placement, enumerate_matrices, format_matrix
from ..formalism.program import SEPARATOR
from ..studies.rank import RankResult
from ..studies.ranking import MatrixSummary, RankEntry, Ranking
from ..studies.search import SearchStats
from ..topology import Topology
from ..util.units import format_bytes, format_seconds
from .answer import Answer, CodeBlock, algo_text, and_list, placement_words, ratio_text
from .files import data_uris, figure_png, render
from .mesh import emit_mesh, rank_mesh_choice
from .orders import comparison_table, comparison_text
from .plot_units import seconds_axis
from .simulate import choice_text
from .tables import Column, Table

__all__ = ["ranking_text", "ranking_report", "ranking_tables", "RANK_COLUMNS", "MATRIX_COLUMNS", "rank_header",
           "rank_text", "rank_report", "rank_answer", "search_text", "RankRow", "MatrixRow"]


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
    topo, names, red, s = job.topology, job.axis_names, result.reduce_axes, req.settings
    scope = result.scope
    return (f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {axes_text(job.axes, names)} reduce "
            f"{reduce_text(red, names)}{order_label(s.order, red)}; algo {s.algo}, {s.engine} engine, "
            f"{format_bytes(req.demand.bytes_per_gpu)} per GPU; {search_text(result.stats, req.top)}"
            + (f"\n{scope}" if scope else "") + f"\n{matrix_legend(names, topo.level_names)}")


def rank_text(result: RankResult) -> str:
    """``p2sim rank``'s answer: the ranking, the best placement in words and (``--compare-orders``) both orders."""
    best = result.best
    text = (ranking_text(rank_header(result), result.ranking, result.request.top)
            + f"\n\nbest placement {format_matrix(best.matrix)}: {result.placement(best.matrix)}"
            + f"\nwhat bounds its steps: {'; '.join(b.text for b in result.best_bindings)}")
    if result.comparison is not None:
        text += "\n\n" + comparison_text(result.comparison)
    return text


def _words(result: RankResult) -> Callable[[Matrix], str]:
    """A matrix of this job in words (which axis goes where), for the answer, the tables and the plots."""
    job = result.request.job
    names, levels, node = job.axis_names, job.topology.level_names, job.spec.node_level
    return lambda m: placement_words(m, names, levels, node)


def rank_answer(result: RankResult) -> Answer:
    """The placement to use, its program, time and gain over the default placement, and the code that builds it."""
    job, best = result.request.job, result.best
    words = _words(result)
    reduce = and_list([job.axis_names[i] for i in sorted(set(result.reduce_axes))])
    own = min((s.allreduce.seconds for s in result.ranking.matrices if s.matrix == best.matrix),
              default=best.allreduce_seconds)
    own_text = f"{ratio_text(best.seconds, own)} a plain AllReduce on this placement ({format_seconds(own)})"
    default = result.default_allreduce  # the result decides the default placement; the report words it
    if default is None:  # --matrix or --top-matrices left the default placement out
        gain = own_text
    elif default.matrix == best.matrix:
        gain = f"{own_text}, which is the default placement"
    else:
        gain = (f"{ratio_text(best.seconds, default.allreduce.seconds)} a plain AllReduce on the default placement "
                f"({words(default.matrix)}: {format_seconds(default.allreduce.seconds)}, {algo_text(default.algo)}) "
                f"and {own_text}")
    text = (f"Best placement: {words(best.matrix)}. Reduce over {reduce} with `{best.timing.text}` "
            f"({algo_text(best.algo)}): {format_seconds(best.seconds)} predicted for "
            f"{format_bytes(result.request.demand.bytes_per_gpu)} per GPU, {gain}. "
            f"What bounds its steps: {'; '.join(b.text for b in result.best_bindings)}.")
    notes = tuple(n[:1].upper() + n[1:] for n in (result.scope, *result.warnings) if n)
    # each framework's form picks the fastest program it runs (mesh_choice.py)
    code = (CodeBlock("JAX", emit_mesh("jax", rank_mesh_choice(result, "jax"))),
            CodeBlock("PyTorch", emit_mesh("torch", rank_mesh_choice(result, "torch"))))
    return Answer(text, notes, code)


def rank_report(result: RankResult) -> dict[str, bytes]:
    """``rank --out``'s files: the answer and the code to apply it first, then the ranking and plots."""
    req, job = result.request, result.request.job
    topo = job.topology
    lowering = Lowering.of(Placement.of(topo.hierarchy, job.axes, result.best.matrix), result.reduce_axes,
                           req.settings.order)
    extra = (comparison_table(result.comparison),) if result.comparison is not None else ()
    return ranking_report(f"p2sim rank: {topo.spec.name}", rank_header(result), result.ranking, req.top, topo,
                          lowering, extra, answer=rank_answer(result), words=_words(result), names=job.axis_names)


def _named(matrix: Matrix, names: Sequence[str]) -> str:
    """A matrix as a tick label: a line per axis, by name (``data [1 4]``)."""
    return "\n".join(f"{n} [{' '.join(map(str, row))}]" for n, row in zip(names, matrix))


def _plot_programs(ranking: Ranking, names: Sequence[str], levels: Sequence[str]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(ranking.matrices)), 4.5))
    best = ranking.entries[0]
    for x, s in enumerate(ranking.matrices):
        ys = sorted(p.seconds for p in s.programs)
        jitter = [x + 0.25 * ((i % 9) - 4) / 4 for i in range(len(ys))]
        ax.scatter(jitter, ys, s=8, alpha=0.6, color="#1f77b4", label="a program" if x == 0 else None)
        ax.scatter([x], [s.allreduce.seconds], marker="_", s=600, color="#d62728",
                   label="plain AllReduce" if x == 0 else None)
        if (s.matrix, s.algo) == (best.matrix, best.algo):
            ax.scatter([x], [best.seconds], marker="*", s=220, color="#2ca02c", edgecolor="black", zorder=3,
                       label="best")
    ax.set_xticks(range(len(ranking.matrices)), [f"{_named(s.matrix, names)}\n{s.algo}" for s in ranking.matrices],
                  fontsize=8)
    ax.set_xlabel(f"placement (each axis's factor per {', '.join(levels)}) and NCCL algorithm")
    seconds_axis(ax)
    ax.set_ylabel("predicted time")
    ax.set_title("predicted time of every simulated program, per placement")
    ax.legend()
    return figure_png(fig)


def _plot_best(ranking: Ranking, names: Sequence[str], levels: Sequence[str]) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(ranking.matrices)), 4.5))
    xs = range(len(ranking.matrices))
    ax.bar([x - 0.2 for x in xs], [s.allreduce.seconds for s in ranking.matrices], 0.4, label="plain AllReduce")
    ax.bar([x + 0.2 for x in xs], [s.best.seconds for s in ranking.matrices], 0.4, label="best program")
    ax.set_xticks(list(xs), [f"{_named(s.matrix, names)}\n{s.algo}" for s in ranking.matrices], fontsize=8)
    ax.set_xlabel(f"placement (each axis's factor per {', '.join(levels)}) and NCCL algorithm")
    seconds_axis(ax)
    ax.set_ylabel("predicted time")
    ax.set_title("best program per placement against its plain AllReduce")
    ax.legend()
    return figure_png(fig)


def placement_figure(topo: Topology, lowering: Lowering, names: Sequence[str] | None = None) -> bytes:
    """Devices as a grid (a row per node), coloured by reduction group, labelled by axis coordinates."""
    import matplotlib.pyplot as plt
    import numpy as np

    pl: Placement = lowering.placement
    names = tuple(names) if names is not None else tuple(f"axis{i}" for i in range(len(pl.axes)))
    group = np.empty(topo.devices, dtype=int)
    for r, row in enumerate(lowering.table):
        group[row] = r
    grid = group.reshape(topo.node_count, topo.gpus_per_node)
    fig, ax = plt.subplots(figsize=(max(5, 0.55 * topo.gpus_per_node), max(2.0, 0.5 * topo.node_count + 1)))
    ax.imshow(grid, cmap="tab20", aspect="auto")
    if topo.devices <= 128:
        for d in range(topo.devices):
            n, g = divmod(d, topo.gpus_per_node)
            ax.text(g, n, ",".join(map(str, pl.coordinates(d))), ha="center", va="center", fontsize=7)
    if topo.devices <= 128:  # integer ticks while they stay readable
        ax.set_xticks(range(topo.gpus_per_node))
        ax.set_yticks(range(topo.node_count))
    ax.set_xlabel("GPU in node")
    ax.set_ylabel("node")
    reduce = ", ".join(names[i] for i in sorted(set(lowering.reduce_axes)))
    ax.set_title(f"{_named(pl.matrix, names).replace(chr(10), ', ')}: colour = reduction group over {reduce}; "
                 f"labels = ({', '.join(names)}) coordinates", fontsize=9)
    return figure_png(fig)


SPEEDUP_BASIS = ("Every speedup is relative to the same matrix's single AllReduce(slice=0, Inside) with the "
                 "same algorithm: it compares programs within one (matrix, algorithm), never algorithms or matrices "
                 "with each other, so two rows of equal time show different speedups when their algorithms' "
                 "AllReduces take different times (the AllReduce column).")

MATRIX_HELP = "parallelism matrix: one row per axis, one column per hierarchy level (outermost first)"
ALGO_HELP = "NCCL algorithm: ring, or tree (the tree applies to AllReduce steps only, as in NCCL)"

class RankRow(NamedTuple):
    """A row of the ranking table: its rank, the entry, and its placement in words."""

    rank: int
    entry: RankEntry
    placement: str


class MatrixRow(NamedTuple):
    """A row of the per-matrix table: the matrix's summary and its placement in words."""

    summary: MatrixSummary
    placement: str


PLACEMENT_HELP = "where each axis goes, by name: (its size) inside each node, or across which levels"

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
    Column("placement", PLACEMENT_HELP, lambda r: r.placement),
    Column("matrix", MATRIX_HELP, lambda r: format_matrix(r[1].matrix), code=True, wrap=False),
    Column("program", "the reduction program in text form, steps separated by ;", lambda r: r[1].timing.text,
           code=True),
    Column("groups", "per step: the collective, (groups)x(GPUs per group), and whether a group stays inside a node",
           lambda r: _spans(r[1])),
)


def _program_count(r: MatrixRow) -> str:
    s = r.summary
    if s.count is None or s.count == len(s.programs):
        return str(len(s.programs))
    return f"{s.count} ({len(s.programs)})"


MATRIX_COLUMNS: tuple[Column, ...] = (
    Column("placement", PLACEMENT_HELP, lambda r: r.placement),
    Column("matrix", MATRIX_HELP, lambda r: format_matrix(r.summary.matrix), code=True, wrap=False),
    Column("algo", ALGO_HELP, lambda r: r.summary.algo),
    Column("programs", "programs synthesized for the matrix (in brackets: those simulated, where the bounded "
           "search left some out because their lower bound could not win)", _program_count, numeric=True),
    Column("AllReduce", "predicted time of the matrix's single AllReduce with this algorithm",
           lambda r: format_seconds(r.summary.allreduce.seconds), numeric=True),
    Column("best", "predicted time of the matrix's fastest program with this algorithm",
           lambda r: format_seconds(r.summary.best.seconds), numeric=True),
    Column("speedup", "AllReduce / best", lambda r: f"{r.summary.allreduce.seconds / r.summary.best.seconds:.2f}x",
           numeric=True),
    Column("best program", "the fastest program", lambda r: r.summary.best.text, code=True),
)


def ranking_tables(ranking: Ranking, top: int, words: Callable[[Matrix], str] = format_matrix) -> list[Table]:
    """The top programs and each matrix's best; ``words`` puts a matrix in words (its placement column)."""
    total = sum(len(s.programs) if s.count is None else s.count for s in ranking.matrices)
    simulated = len(ranking.entries)
    of = f"{simulated}" if simulated == total else f"{simulated} simulated of {total}"
    return [
        Table.of(f"Top {min(top, simulated)} of {of} (matrix, program, algorithm)", RANK_COLUMNS,
                 [RankRow(i, e, words(e.matrix)) for i, e in enumerate(ranking.top(top), 1)]),
        Table.of("Best program per matrix and algorithm", MATRIX_COLUMNS,
                 [MatrixRow(s, words(s.matrix)) for s in ranking.matrices], intro="Fastest first, by best time."),
    ]


def ranking_report(title: str, header: str, ranking: Ranking, top: int, topo: Topology, best_lowering: Lowering,
                   extra: Sequence[Table] = (), *, answer: Answer, words: Callable[[Matrix], str],
                   names: Sequence[str]) -> dict[str, bytes]:
    """The report files: ``answer`` first, then the ranking's tables, ``extra`` tables and the plots."""
    levels = topo.level_names
    reduce = ", ".join(names[i] for i in sorted(set(best_lowering.reduce_axes)))
    images = {
        "programs.png": _plot_programs(ranking, names, levels),
        "best_vs_allreduce.png": _plot_best(ranking, names, levels),
        "placement.png": placement_figure(topo, best_lowering, names),
    }
    captions = {
        "programs.png": "Predicted time of every simulated program per (placement, algorithm); the red bar is the "
                        "plain AllReduce, the star the best program.",
        "best_vs_allreduce.png": "Each (placement, algorithm): its plain AllReduce against its fastest program.",
        "placement.png": f"The best placement ({words(best_lowering.placement.matrix)}): GPUs by node, coloured "
                         f"by reduction group over {reduce}, labelled by ({', '.join(names)}) coordinates.",
    }
    uris = data_uris(images)
    figs = [{"name": n, "caption": captions[n], "uri": uris[n]} for n in images]
    data = {"title": title, "answer": answer, "header": header, "basis": SPEEDUP_BASIS,
            "tables": ranking_tables(ranking, top, words) + list(extra), "images": figs}
    files = {"report.md": render("rank.md", **data), "report.html": render("rank.html", **data)}
    files.update(images)
    return files
