"""Rendering of a plan: every matrix's step time beside the default placement's, and the best plan's programs.

:func:`plan_report` gives the page (HTML and Markdown) that opens with the answer: the best
placement in words, each reduction's program, the step's communication time and the saving
over the default placement, then the JAX and PyTorch code that builds the mesh.
"""

from __future__ import annotations

from typing import NamedTuple

from ..formalism.naming import axes_text, is_default, matrix_legend, order_label, reduce_text
from ..formalism.placement import Matrix, format_matrix
from ..studies.plan import Plan, PlanResult, Reduction
from ..util.units import format_bytes, format_seconds
from .answer import Answer, CodeBlock, algo_text, placement_words, ratio_text
from .files import data_uris, render
from .mesh import emit_mesh, plan_mesh_choice
from .rank import search_text
from .step_plan import overlap_text, step_rows, step_text, timeline_png
from .tables import Column, Table

__all__ = ["plan_text", "plan_answer", "plan_report"]


def plan_text(result: PlanResult) -> str:
    """``p2sim plan``'s answer as text."""
    req, job = result.request, result.request.job
    topo, names, s = job.topology, job.axis_names, req.settings
    data_axis = names[req.data_axis] if not is_default(names) else req.data_axis
    # with no axis named like data (and no --data-axis), the axis only stands outermost in the default placement
    data_text = (f"data axis {data_axis}" if req.has_data_axis
                 else f"no data axis: {data_axis} outermost in the default placement")

    def reduction_text(r: Reduction) -> str:
        return f"{reduce_text(r.axes, names)} {format_bytes(r.bytes)} x {r.count}"

    lines = [f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {axes_text(job.axes, names)} "
             f"({data_text}){order_label(s.order, *(r.axes for r in req.reductions))}; algo {s.algo}, "
             f"{s.engine} engine",
             "reductions: " + "; ".join(f"axes {reduction_text(r)}" for r in req.reductions),
             search_text(result.stats) + (f"; {result.cut} of {result.cut + len(result.plans)} matrices cut before "
                                          f"their programs were bounded ({_cut_why(result)}), not listed"
                                          if result.cut else ""),
             matrix_legend(names, topo.level_names)]
    steps = {p.matrix: p.step_seconds for p in result.step_times}
    if steps:  # a model's plan: ranked by the step's time (p2sim step's), its communication beside
        lines += ["step time: p2sim step's (compute, bubble, exposed communication, optimizer); communication: the "
                  "step's summed, each reduction by its best program; AllReduce only: each by NCCL's plain AllReduce "
                  "(as check --model charges it)",
                  f"\n{'rank':>4}  {'step time':>10}  {'communication':>13}  {'AllReduce only':>14}  matrix"]
    else:
        lines += ["step time: each reduction by its best program; AllReduce only: each by NCCL's plain AllReduce "
                  "(as check --model charges it)",
                  f"\n{'rank':>4}  {'step time':>10}  {'AllReduce only':>14}  matrix"]
    for i, pl in enumerate(result.plans, 1):
        mark = "  <- default placement" if pl.matrix == result.default else ""
        step = f"  {format_seconds(steps[pl.matrix]):>10}" if steps else ""
        lines.append(f"{i:4d}{step}  {format_seconds(pl.total_seconds):>{13 if steps else 10}}  "
                     f"{format_seconds(pl.allreduce_total_seconds):>14}  {format_matrix(pl.matrix)}{mark}")
    best, savings = result.best, result.savings
    lines.append(f"\nbest plan {format_matrix(best.matrix)}: {result.placement(best.matrix)}")
    for c in best.choices:
        lines.append(f"  axes {reduction_text(c.reduction)}: {format_seconds(c.seconds)} each ({c.algo}) {c.program}")
    if steps:  # the best by the step's time may communicate more than another placement: said as such
        lines.append(f"\nits communication {_saving(savings['vs_default_placement'])} the default placement "
                     f"{format_matrix(result.default)} with its best programs, "
                     f"{_saving(savings['vs_default_allreduce'])} the default placement with plain AllReduce, and "
                     f"{_saving(savings['vs_best_placement_allreduce'])} the least of any placement with plain "
                     "AllReduce")
    else:
        lines.append(f"\nsaves {savings['vs_default_placement']:.1%} over the default placement "
                     f"{format_matrix(result.default)} with its best programs, "
                     f"{savings['vs_default_allreduce']:.1%} over the default placement with plain AllReduce, and "
                     f"{savings['vs_best_placement_allreduce']:.1%} over the best placement with plain AllReduce")
    lines.append(f"default placement {format_matrix(result.default)}: {result.placement(result.default)}; "
                 f"{result.default_basis}")
    if req.demand.whole_step:
        lines += step_text(result)
    return "\n".join(lines)


def _saving(fraction: float) -> str:
    """``is 4.5% less than`` or ``is 4.9% more than`` (a saving below 0)."""
    return f"is {fraction:.1%} less than" if fraction >= 0 else f"is {-fraction:.1%} more than"


def _cut_why(result: PlanResult) -> str:
    if result.step_times:  # run_step_plan's step_cut
        return "their step's least time, each collective alone, above another's step"
    return "their step's lower bound above another's step with plain AllReduce"


def _words(result: PlanResult, matrix: Matrix) -> str:
    job = result.request.job
    return placement_words(matrix, job.axis_names, job.topology.level_names, job.spec.node_level)


def _reduction_words(result: PlanResult, r: Reduction) -> str:
    """``data (4 GiB x 1)``: a reduction's axes by name, its size per GPU and count per step."""
    names = result.request.job.axis_names
    return f"{', '.join(names[a] for a in r.axes)} ({format_bytes(r.bytes)} x {r.count})"


def plan_answer(result: PlanResult) -> Answer:
    """The best placement, each reduction's program, the step's time and the saving over the default placement."""
    best, default = result.best, result.default_plan
    steps = "; ".join(f"over {_reduction_words(result, c.reduction)} with `{c.program}` ({format_seconds(c.seconds)} "
                      f"each, {algo_text(c.algo)})" for c in best.choices)
    text = (f"Best placement: {_words(result, best.matrix)}. Reduce {steps}: {format_seconds(best.total_seconds)} "
            f"of communication per step")
    if default.matrix == best.matrix:
        text += (f", {ratio_text(best.total_seconds, default.allreduce_total_seconds)} plain AllReduce on the same "
                 f"placement, which is the default ({format_seconds(default.allreduce_total_seconds)}).")
    else:
        text += (f", {ratio_text(best.total_seconds, default.total_seconds)} the default placement "
                 f"({_words(result, default.matrix)}: {format_seconds(default.total_seconds)} with its best programs, "
                 f"{format_seconds(default.allreduce_total_seconds)} with plain AllReduce).")
    steps = {p.matrix: p.step_seconds for p in result.step_times}
    search = result.request.search
    # ranked by the step's time: the best is the fastest step, whatever its communication -- of every placement
    # where the cut by the step's time ran; of those --top-matrices or --budget kept by their communication else
    every = search.budget is None and search.top_matrices is None
    if steps:
        text += (f" Its step is the fastest{'' if every else ' of the placements listed (kept by their communication)'}"
                 f", as p2sim step times it: {format_seconds(steps[best.matrix])}"
                 + ("." if default.matrix == best.matrix else
                    f", {ratio_text(steps[best.matrix], steps[default.matrix])} the default placement's "
                    f"({format_seconds(steps[default.matrix])})."))
    text += f" The default placement is {result.default_basis}."
    work = result.request.demand.workload
    if work is not None:  # a model's step: every collective charged, by axis
        axes = "; ".join(f"{r['axis']} {format_seconds(r['seconds'])} ({r['tier']}, bound by {r['bound']})"
                         for r in step_rows(result, best))
        text += (f" Every collective of {work.model.name}'s step is charged; by axis: {axes}. The "
                 f"{overlap_text(work)}.")
    # each framework's form falls back where the chosen program does not run on it (mesh_choice.py)
    code = (CodeBlock("JAX", emit_mesh("jax", plan_mesh_choice(result, "jax"))),
            CodeBlock("PyTorch", emit_mesh("torch", plan_mesh_choice(result, "torch"))))
    return Answer(text, tuple(result.warnings), code)


class PlanRow(NamedTuple):
    rank: int
    plan: Plan
    placement: str
    default: bool


def _tables(result: PlanResult) -> list[Table]:
    steps = {p.matrix: p.step_seconds for p in result.step_times}
    # a model's plan: ranked by the step's time (p2sim step's), its communication beside
    lead = (
        Column("rank", "position by the step's time, fastest first", lambda r: str(r.rank), numeric=True),
        Column("step time", "the step as p2sim step times it: compute, bubble, exposed communication, optimizer",
               lambda r: format_seconds(steps[r.plan.matrix]), numeric=True),
        Column("communication", "the step's communication summed, each reduction by its best program",
               lambda r: format_seconds(r.plan.total_seconds), numeric=True),
    ) if steps else (
        Column("rank", "position by the step's communication time, fastest first", lambda r: str(r.rank),
               numeric=True),
        Column("step time", "sum over the reductions of count x the best program's time",
               lambda r: format_seconds(r.plan.total_seconds), numeric=True),
    )
    plans = (
        *lead,
        Column("AllReduce only", "the same with a plain AllReduce for every reduction",
               lambda r: format_seconds(r.plan.allreduce_total_seconds), numeric=True),
        Column("placement", "where each axis goes, by name", lambda r: r.placement),
        Column("matrix", "parallelism matrix: one row per axis, one column per hierarchy level",
               lambda r: format_matrix(r.plan.matrix), code=True, wrap=False),
        Column("default", "the default placement (Megatron-LM's rank order where the axes are named as it names "
                          "them, else data parallelism outermost, the other axes inside)",
               lambda r: "default" if r.default else ""),
    )
    choices = (
        Column("reduction", "the axes reduced, bytes per GPU and count per step",
               lambda c: _reduction_words(result, c.reduction)),
        Column("time", "predicted time of one reduction", lambda c: format_seconds(c.seconds), numeric=True),
        Column("AllReduce", "the plain AllReduce of the same reduction", lambda c: format_seconds(c.allreduce_seconds),
               numeric=True),
        Column("algo", "NCCL algorithm", lambda c: c.algo),
        Column("program", "the chosen reduction program", lambda c: c.program, code=True),
    )
    rows = [PlanRow(i, pl, _words(result, pl.matrix), pl.matrix == result.default)
            for i, pl in enumerate(result.plans, 1)]
    return [Table.of("Best plan: a program per reduction", choices, list(result.best.choices)),
            Table.of("Every placement", plans, rows, intro="Fastest first.")]


def plan_report(result: PlanResult) -> dict[str, bytes]:
    """The plan page (``plan.md``, ``plan.html``): the answer and the code first, then every placement."""
    images = {"step.png": timeline_png(result)} if result.request.demand.whole_step else {}
    caption = ("The step's communication by axis (count x time of each collective, summed): the best placement "
               "and the default.")
    uris = data_uris(images)
    data = {"title": f"p2sim plan: {result.request.job.topology.spec.name}", "answer": plan_answer(result),
            "header": "\n".join(plan_text(result).split("\n\n")[0].splitlines()), "tables": _tables(result),
            "images": [{"name": n, "caption": caption, "uri": uris[n]} for n in images]}
    return {"plan.md": render("plan.md", **data), "plan.html": render("plan.html", **data), **images}
