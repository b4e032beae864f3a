"""whatif --model: a model's whole training step at every point of varied systems.

Each point's topology gets the step machinery that ``plan --model`` uses
(:func:`~p2sim.studies.step_plan.run_step_plan` on a :class:`~p2sim.studies.plan.PlanRequest` for
that point's system and node count): every collective of the step charged per matrix, each
reduction's best program searched.  A point reports the best placement's step communication time
with its per-axis times (what bounds each, which tier it crosses), and the default placement's
(Megatron-LM's order), instead of one reduction's time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from collections.abc import Sequence
from dataclasses import dataclass

from .contexts import context_of
from .jobsize import JobCost, duration, plural
from .step_plan import step_matrices, step_plan_cost
from ..util.units import format_bytes
from .plan import PlanRequest, PlanResult
from .demand import DEFAULT_REDUCE, Demand
from .jobsize import Limits
from .requests import EVERY_PROGRAM, Job, RunOptions, SearchOptions, Settings, axis_names_of
from .variations import Point, resolve_axes
from ..util.errors import InputError

__all__ = ["STEP_DECIDES", "at_point", "check_step_options", "point_request", "step_row", "PointsCost", "points_cost"]

# whatif's options that the model's step decides (what is reduced, with what buffer, by which program), with
# the value that means "not given"
STEP_DECIDES = (("reduce", DEFAULT_REDUCE), ("bytes", None), ("matrix", None), ("program", EVERY_PROGRAM))


def check_step_options(**given: Any) -> None:
    """whatif --model refuses what the step decides, one line naming the option (as check --model does)."""
    for name, unset in STEP_DECIDES:
        value = given[name]
        if value is not None and value != unset and str(value) != str(unset):
            raise InputError(f"{name}: with --model the step's collectives say what is reduced and every placement "
                             f"is searched at each point; leave --{name} out (or run whatif without --model)")


@contextmanager
def at_point(pt: Point) -> Iterator[None]:
    """A point's input error says which ``--vary`` point it is (the axes may fit one node count, not another)."""
    try:
        yield
    except InputError as e:
        raise type(e)(f"{e} (at the --vary point {pt.label})") from None


def point_request(pt: Point, axes: str | None, model: tuple[Any, Any, Any], settings: Settings,
                  search: SearchOptions, limits: Limits, run: RunOptions) -> PlanRequest:
    """plan --model's request at one point: its system and node count, the axes (a '*' resolved there), and the
    model's step there (``model``: the model, its training settings and compute per layer, as given)."""
    with at_point(pt):
        p = resolve_axes(axes, context_of(pt.spec, pt.nodes).topo.devices)
        names = axis_names_of(axes, len(p))
        job = Job.build(pt.spec, pt.nodes, ",".join(f"{n}={s}" for n, s in zip(names, p)))
        return PlanRequest.of(job, Demand.of_model(*model, job.axis_names, job.axes), settings, search, limits, run)


def step_row(pt: Point, result: PlanResult) -> dict[str, Any]:
    """A point's row: the best placement's step and per-axis times beside the default placement's."""
    step = result.to_json()["step"]
    best, default = result.best, result.default_plan

    def axes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"axis": r["axis"], "seconds": r["seconds"], "tier": r["tier"], "bound": r["bound"]} for r in rows]

    return {"point": dict(pt.settings), "label": pt.label, "nodes": pt.nodes,
            "matrix": [list(r) for r in best.matrix], "placement": result.placement(best.matrix),
            "seconds": best.total_seconds, "axes": axes(step["best_axes"]),
            "default_matrix": [list(r) for r in default.matrix], "default_placement": result.placement(default.matrix),
            "default_seconds": default.total_seconds, "default_axes": axes(step["default_axes"]),
            "hidden_seconds": best.hidden_seconds, "search": dict(result.stats.to_json(), cut_matrices=result.cut)}


@dataclass(frozen=True)
class PointsCost:
    """A what-if's whole cost: its points' whole steps, run one after another (CPU summed, memory the most of
    one point's: a point's caches are cleared before the next)."""

    costs: tuple[JobCost, ...]

    @property
    def seconds(self) -> float:
        return sum(c.seconds for c in self.costs)

    @property
    def memory(self) -> float:
        return max(c.memory for c in self.costs)

    def text(self) -> str:
        return (f"{plural(len(self.costs), 'point')}, each a whole step planned: "
                f"{', '.join(duration(c.seconds) for c in self.costs)} of CPU")

    def brief(self) -> str:
        cpu = duration(self.seconds)
        return (f"estimated {'' if cpu.startswith('under') else 'about '}{cpu} of CPU and "
                f"{format_bytes(self.memory, 2)} of memory")


def points_cost(reqs: Sequence[PlanRequest]) -> PointsCost:
    """Every point's whole-step cost (:func:`~.step_plan.step_plan_cost`, each checked on its own), before any
    point runs, so that a what-if of many points each under the limits is said, and checked, as a whole."""
    return PointsCost(tuple(step_plan_cost(r, step_matrices(r)) for r in reqs))
