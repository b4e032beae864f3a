"""Rendering of a plan: every matrix's step time beside the default placement's, and the best plan's programs."""

from __future__ import annotations

from ..formalism.naming import axes_text, is_default, matrix_legend, order_label, reduce_text
from ..formalism.placement import format_matrix
from ..studies.plan import PlanResult, Reduction
from ..util.units import format_bytes, format_seconds
from .rank import search_text

__all__ = ["plan_text"]


def plan_text(result: PlanResult) -> str:
    """``p2sim plan``'s answer as text."""
    req, job = result.request, result.request.job
    topo, names = job.topology, job.axis_names
    data_axis = names[req.data_axis] if not is_default(names) else req.data_axis

    def reduction_text(r: Reduction) -> str:
        return f"{reduce_text(r.axes, names)} {format_bytes(r.bytes)} x {r.count}"

    lines = [f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {axes_text(job.axes, names)} "
             f"(data axis {data_axis}){order_label(req.order, *(r.axes for r in req.reductions))}; algo {req.algo}, "
             f"{req.model} model",
             "reductions: " + "; ".join(f"axes {reduction_text(r)}" for r in req.reductions),
             search_text(result.stats),
             matrix_legend(names, topo.level_names),
             f"\n{'rank':>4}  {'step time':>10}  {'AllReduce only':>14}  matrix"]
    for i, pl in enumerate(result.plans, 1):
        mark = "  <- default placement" if pl.matrix == result.default else ""
        lines.append(f"{i:4d}  {format_seconds(pl.total_seconds):>10}  {format_seconds(pl.allreduce_total_seconds):>14}"
                     f"  {format_matrix(pl.matrix)}{mark}")
    best, savings = result.best, result.savings
    lines.append(f"\nbest plan {format_matrix(best.matrix)}: {result.placement(best.matrix)}")
    for c in best.choices:
        lines.append(f"  axes {reduction_text(c.reduction)}: {format_seconds(c.seconds)} each ({c.algo}) {c.program}")
    lines.append(f"\nsaves {savings['vs_default_placement']:.1%} over the default placement "
                 f"{format_matrix(result.default)} with its best programs, {savings['vs_default_allreduce']:.1%} over "
                 f"the default placement with plain AllReduce, and {savings['vs_best_placement_allreduce']:.1%} over "
                 "the best placement with plain AllReduce")
    return "\n".join(lines)
