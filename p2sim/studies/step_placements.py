"""A model-driven plan's placements ranked by the step's time, with Megatron-LM's and Meta's orders named.

A step's time is not its communication: the data reduction hides behind the backward, the pipeline's sends
sit on the critical path of every micro-batch.  ``plan --model --axes`` cuts and ranks its placements by the
step's time (:func:`~.step_plan.step_cut`) with a :class:`StepTimer` (:func:`step_timer`), which computes
each placement's step as ``p2sim step`` does (:func:`~p2sim.studies.step_time.finish_step` with the placement's
matrix: compute, bubble, exposed communication by axis, optimizer) or a lower bound of it, and names the
placements that Megatron-LM's rank orders give: ``tp-cp-ep-dp-pp`` (its default) and ``tp-cp-ep-pp-dp``,
which with no expert axis is Meta's Llama 3 order (TP, CP, PP, DP: data outermost; Dubey et al. 2024, section 3.3.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formalism.mesh import MEGATRON_ORDERS, megatron_ranks, rank_mesh
from ..formalism.placement import Matrix, Placement
from .step_job import StepJob, _timer, job_hierarchy
from .step_time import StepResult, StepSettings, finish_step, prepare_step
from ..workload.op_time import DEFAULT
from ..workload.training import AXES

__all__ = ["PlacementStep", "StepTimer", "step_timer", "placement_steps", "order_names"]

_ALIAS = {"tp": "tensor", "cp": "context", "pp": "pipeline", "dp": "data", "ep": "expert"}


@dataclass(frozen=True)
class PlacementStep:
    """One placement's step (``fits``: its memory fits the GPU; the memory does not depend on the placement)."""

    matrix: Matrix
    step: StepResult
    orders: tuple[str, ...]  # the rank orders that give this placement, in words
    fits: bool

    @property
    def step_seconds(self) -> float:
        return self.step.step_seconds

    def to_json(self) -> dict[str, Any]:
        s = self.step
        return {"matrix": [list(r) for r in self.matrix], "step_seconds": s.step_seconds, "orders": list(self.orders),
                "compute_seconds": s.compute_seconds, "bubble_seconds": s.bubble_seconds,
                "exposed_comm_seconds": dict(s.exposed_comm_seconds), "optimizer_seconds": s.optimizer_seconds,
                "memory_fits": self.fits}


def order_names(placement: Placement, axis_names: tuple[str, ...], expert: int) -> tuple[str, ...]:
    """The named orders that lay ranks out as ``placement`` does.

    >>> pl = Placement.of([4, 8], [8, 2, 2], [[1, 8], [2, 1], [2, 1]])
    >>> order_names(pl, ("tensor", "pipeline", "data"), 1)
    ("Megatron-LM's default tp-cp-ep-dp-pp",)
    >>> order_names(pl, ("tensor", "data", "pipeline"), 1)
    ("Megatron-LM's tp-cp-ep-pp-dp = Meta's Llama 3 order (TP, CP, PP, DP: data outermost)",)
    """
    have = rank_mesh(placement)
    out = []
    for order in MEGATRON_ORDERS:
        want = megatron_ranks(placement.axes, axis_names, order)
        if not isinstance(want, str) and np.array_equal(want, have):
            if order == MEGATRON_ORDERS[0]:
                out.append(f"Megatron-LM's default {order}")
            elif expert == 1:
                out.append(f"Megatron-LM's {order} = Meta's Llama 3 order (TP, CP, PP, DP: data outermost)")
            else:
                out.append(f"Megatron-LM's {order}")
    return tuple(out)


@dataclass(frozen=True)
class StepTimer:
    """A model plan's step prepared once (compute, bubble, memory: none depends on the placement), to time each
    placement's step as ``p2sim step`` does."""

    prep: Any  # step_time.PreparedStep
    names: tuple[str, ...]  # the job's axes as p2sim step names them
    hierarchy: tuple[int, ...]
    axes: tuple[int, ...]
    axis_names: tuple[str, ...]
    expert: int

    def lower(self, matrix: Matrix) -> float:
        """At least ``matrix``'s step: its collectives each alone, without contention between axes (contention only
        lengthens a step, :func:`~.step_time.finish_step`): compute, bubble and optimizer, which do not depend on
        the placement, and the communication exposed with each collective at its uncontended time."""
        return finish_step(self.prep, (self.names, _rows(matrix)), contention_limit=-math.inf).step_seconds

    def time(self, matrix: Matrix, limit: float = math.inf) -> PlacementStep:
        """``matrix``'s step (its contention not simulated where the uncontended step is above ``limit``)."""
        placement = Placement.of(self.hierarchy, self.axes, matrix)
        # the plan's rows in its order: axes sharing a level nest in it, so reordering them would move groups
        return PlacementStep(matrix, finish_step(self.prep, (self.names, _rows(matrix)), limit),
                             order_names(placement, self.axis_names, self.expert), self.prep.fits)


def _rows(matrix: Matrix) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(r) for r in matrix)


def step_timer(req: Any, extra: StepSettings | None = None) -> StepTimer | None:
    """The step of a model plan's request prepared to time placements (None for named reductions, and where the
    job's levels are not the whole system's, which ``p2sim step`` places differently); ``extra``: the step's own
    settings (None: those ``--train`` gave, the step workload's)."""
    work, job = req.demand.workload, req.job
    if work is None:  # named reductions: no model to time a step of
        return None
    topo = job.topology
    names = tuple(_ALIAS.get(n.lower(), n.lower()) for n in job.axis_names)
    sizes = {a: 1 for a in AXES}
    for n, s in zip(names, job.axes):
        sizes[n] = int(s)
    gpus = math.prod(job.axes)
    spec = topo.spec
    per_node = math.prod(spec.hierarchy(1)[spec.node_level + 1:])
    hierarchy, used = job_hierarchy(topo.hierarchy, gpus, per_node)
    if tuple(hierarchy) != tuple(job.hierarchy):
        return None
    sj = StepJob(work.model, topo, gpus, topo.nodes, hierarchy, used, per_node, _timer(topo, DEFAULT),
                 req.settings.engine)
    prep = prepare_step(sj, sizes, work.training, work.extra if extra is None else extra)
    return StepTimer(prep, names, tuple(job.hierarchy), tuple(job.axes), tuple(job.axis_names), sizes["expert"])


def placement_steps(result: Any, extra: StepSettings | None = None) -> tuple[PlacementStep, ...]:
    """Each placement of a model-driven :class:`~p2sim.studies.plan.PlanResult`, fastest step first (() where
    the job's levels are not the whole system's, which ``p2sim step`` places differently); ``extra``: the step's
    own settings (None: those ``--train`` gave, the step workload's).  A result that has them already (the plan
    timed its placements to rank and cut them, :func:`~.step_plan.run_step_plan`) answers those."""
    if result.step_times and extra is None:
        return tuple(result.step_times)
    timer = step_timer(result.request, extra)
    if timer is None:
        return ()
    out = [timer.time(pl.matrix) for pl in result.plans]
    return tuple(sorted(out, key=lambda p: (p.step_seconds, p.matrix)))
