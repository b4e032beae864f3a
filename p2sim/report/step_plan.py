"""A model-driven plan's step, rendered for the user.

The training settings, each axis's collectives with count x time, the tier each axis's groups cross and
what bounds them, the overlap model, and the step's timeline by axis.

:func:`step_rows` is the per-axis breakdown of one plan (as the JSON's ``step`` has it),
:func:`step_text` the lines ``p2sim plan --model`` prints after its table, and :func:`timeline_png`
the report page's picture: one stacked bar per placement (best, Megatron-LM's default), a segment per axis.
"""

from __future__ import annotations

from typing import Any

from ..formalism.placement import Matrix, format_matrix
from ..studies.plan import Plan, PlanResult
from ..studies.step_workload import StepWorkload, axis_rows, overlap_text
from ..util.units import format_bytes, format_seconds

__all__ = ["training_text", "step_rows", "step_text", "timeline_png"]


def training_text(work: StepWorkload) -> str:
    t = work.training
    batch = "one micro-batch per data rank" if t.global_batch is None else f"global batch {t.global_batch}"
    return (f"model {work.model.name}: seq {t.seq_length}, micro-batch {t.micro_batch}, {batch}, "
            f"{t.param_dtype} weights, {t.grad_dtype} gradients, {t.data_parallel}"
            f"{', sequence parallel' if t.sequence_parallel else ''}"
            f"{f', {t.virtual_stages} virtual stages ({t.schedule})' if t.virtual_stages > 1 else ''}"
            f"{', fp8 GEMMs' if work.extra.fp8 else ''}"
            f"{f', recompute {work.extra.recompute}' if work.extra.recompute != 'none' else ''}"
            f"{', tp overlap' if work.extra.tp_overlap else ''}"
            f"{f', dispatcher {work.extra.dispatcher}' if work.extra.dispatcher != 'alltoall' else ''}"
            f"{f', {work.extra.offload} layers offloaded' if work.extra.offload else ''}"
            f"{f'; {work.assumed}' if work.assumed else ''}")


def step_rows(result: PlanResult, plan: Plan) -> list[dict[str, Any]]:
    """:func:`p2sim.studies.step_workload.axis_rows` of a plan of ``result``'s job."""
    job = result.request.job
    return axis_rows(plan, job.axis_names, job.topology.level_names, job.spec.node_level)


def _collective_text(c: dict[str, Any]) -> str:
    what = f"{c['op']} {format_bytes(c['bytes'])} x {c['count']}: {format_seconds(c['seconds_each'])} each"
    return what + (f" ({c['program']})" if "program" in c else f" ({c['algo']})")


def _plan_lines(result: PlanResult, plan: Plan, label: str) -> list[str]:
    lines = [f"{label} {format_matrix(plan.matrix)}: {format_seconds(plan.total_seconds)} of communication per step"
             + (f" ({format_seconds(plan.hidden_seconds)} of the data reduction hidden by backward compute)"
                if plan.overlap is not None else "")]
    for r in step_rows(result, plan):
        lines.append(f"  {r['axis']}: {format_seconds(r['seconds'])}, {r['tier']}; bound by {r['bound']}")
        lines += [f"    {_collective_text(c)}" for c in r["collectives"]]
    return lines


def step_text(result: PlanResult) -> list[str]:
    """The lines ``plan --model`` adds: settings, overlap, the best and the default plan by axis, the gain."""
    work = result.request.demand.workload
    best, default = result.best, result.default_plan
    lines = ["", training_text(work), overlap_text(work), ""]
    lines += _plan_lines(result, best, "best placement")
    if default.matrix != best.matrix:
        lines += [""] + _plan_lines(result, default, "default placement")
        lines.append(f"\nthe best placement's step communication is {format_seconds(best.total_seconds)}, the default "
                     f"placement's {format_seconds(default.total_seconds)} ({result.default_basis})")
    else:
        lines.append(f"\nthe best placement is the default ({result.default_basis})")
    return lines + _step_time_lines(result)


def _step_time_lines(result: PlanResult) -> list[str]:
    """The placements by the step's time (``p2sim step``'s model), Megatron-LM's and Meta's orders named."""
    if not result.step_times:
        return []
    first = result.step_times[0]
    lines = ["", "by step time (p2sim step: compute, bubble, exposed communication by axis, optimizer):"]
    for i, p in enumerate(result.step_times, start=1):
        exposed = ", ".join(f"{a} {format_seconds(v)}" for a, v in p.step.exposed_comm_seconds.items() if v > 0)
        slower = "" if p is first else f" (+{100 * (p.step_seconds / first.step_seconds - 1):.1f} %)"
        lines.append(f"  {i}. {format_matrix(p.matrix)}: {format_seconds(p.step_seconds)}{slower}; bubble "
                     f"{format_seconds(p.step.bubble_seconds)}, exposed {exposed or 'none'}"
                     + (f"  <- {'; '.join(p.orders)}" if p.orders else ""))
    if not first.fits:
        lines.append(f"  (the configuration needs {first.step.memory_gib_per_gpu:.1f} GiB per GPU, more than the "
                     "GPU has: p2sim step refuses it; the times are its step had it fitted)")
    named = " ".join(o for p in result.step_times for o in p.orders)
    missing = [o for o in ("Megatron-LM's default", "Meta's") if o not in named]
    if missing:
        # a matrix fixes each level's share, and axes sharing a level nest in --axes' order (the first outermost)
        lines.append(f"  not among the placements listed: {' and '.join(missing)} order (axes sharing a level nest "
                     "in --axes' order, the first outermost: list them data, pipeline, context, tensor for Meta's; "
                     "and a matrix cut above is not listed)")
    least = min(result.plans, key=lambda pl: (pl.total_seconds, pl.matrix))
    if first.matrix != least.matrix:
        lines.append(f"  the fastest step's placement differs from the least communication's ({format_matrix(least.matrix)})")
    return lines


def timeline_png(result: PlanResult) -> bytes:
    """The step's communication by axis: one stacked bar for the best placement and one for the default."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plans: list[tuple[str, Matrix, Plan]] = [("best", result.best.matrix, result.best)]
    if result.default != result.best.matrix:
        plans.append(("default", result.default, result.default_plan))
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.7 * len(plans)))
    colours: dict[str, Any] = {}
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for y, (label, _, plan) in enumerate(plans):
        left = 0.0
        for r in step_rows(result, plan):
            colour = colours.setdefault(r["axis"], cycle[len(colours) % len(cycle)])
            ax.barh(y, r["seconds"] * 1e3, left=left, color=colour, edgecolor="white",
                    label=r["axis"] if r["axis"] not in ax.get_legend_handles_labels()[1] else None)
            left += r["seconds"] * 1e3
    ax.set_yticks(range(len(plans)), [f"{label}\n{format_matrix(m)}" for label, m, _ in plans])
    ax.invert_yaxis()
    ax.set_xlabel("communication per step (ms), by axis, summed")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()
