"""A model-driven plan: every matrix charged with every collective of a training step (``plan --model``).

The step's AllReduces over whole axes (:mod:`.step_workload`'s reductions) go through the plan's search
(:func:`~p2sim.studies.plan.search_plans`: each reduction's best synthesized program and algorithm, with
the bounds); every other collective (a :class:`~p2sim.studies.step_workload.StepPart`) is simulated once
per matrix as ONE lowered step over all its groups at once, so that they contend, with NCCL's choice of
algorithm and protocol, and charged ``count`` times.  Those per-matrix constants join the bound that
``--top-matrices`` ranks matrices by.  The model of overlap: none, the step's communication summed,
unless a compute time per layer is given (then the data reduction overlaps the last micro-batch's
backward, :class:`~p2sim.studies.step_workload.Overlap`).  ``plan --model --axes`` cuts and ranks the
matrices by the step's time instead (:func:`step_cut`, ``p2sim step``'s model of overlap), the
communication summed beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..formalism.hierarchy import Lowering, LoweredStep
from ..formalism.placement import Matrix, Placement, count_matrices, enumerate_matrices
from ..formalism.program import parse_program
from ..formalism.semantics import Op
from ..sim import Simulator
from ..util.log import announce
from .jobsize import SIMULATED_SECONDS_PER_GPU, JobCost, StepCount, estimate, plural
from .size_sweep import TRANSFER_SIZE_SECONDS
from ..sim.simulator import BOUND_SLACK
from .config_task import ALLREDUCE_TEXT, ConfigTask, run_task
from .executor import run_all
from .jobsize import program_counts
from .plan import (Plan, PlanChoice, PlanRequest, PlanResult, Reduction, default_placement, plan_cost, plan_tasks,
                   search_plans)
from .demand import Demand
from .requests import DEFAULT_ORDER, whole_groups
from .search import SearchStats, bound_all
from .step_workload import ENDS, PAIRS, PartTiming, StepPart

__all__ = ["part_groups", "simulate_parts", "cut_matrices", "step_cut", "step_matrices", "step_plan_cost",
           "run_step_plan"]


def part_groups(part: StepPart, hierarchy: Sequence[int], axes: Sequence[int], matrix: Matrix,
                order: str = DEFAULT_ORDER.value) -> tuple[tuple[int, ...], ...]:
    """The global device groups of one call of ``part`` under ``matrix``.

    The groups of the part's axes in the lowering's device order (one axis: its coordinate, the stage
    order of a pipeline); :data:`PAIRS` splits each into its neighbours ``(i, i+1)``, not wrapping, and
    :data:`ENDS` keeps its first and last member.

    Examples
    --------
    >>> part = StepPart((1,), "SendRecv", 8, 1, PAIRS, ("forward",))
    >>> part_groups(part, (2, 4), (2, 4), ((1, 2), (2, 2)))
    ((0, 1), (1, 4), (4, 5), (2, 3), (3, 6), (6, 7))
    """
    lowering = Lowering.of(Placement.of(hierarchy, axes, matrix), part.axes, order)
    groups = lowering.reduction_groups()
    if part.pattern == PAIRS:
        return tuple(pair for g in groups for pair in zip(g, g[1:]))
    if part.pattern == ENDS:
        return tuple((g[0], g[-1]) for g in groups)
    return groups


def simulate_parts(sim: Simulator, parts: Sequence[StepPart], hierarchy: Sequence[int], axes: Sequence[int],
                   matrix: Matrix, order: str = DEFAULT_ORDER.value) -> tuple[PartTiming, ...]:
    """Each part under ``matrix``: one lowered step of its collective over all its groups, NCCL's choice."""
    out = []
    for part in parts:
        groups = part_groups(part, hierarchy, axes, matrix, order)
        step = LoweredStep(Op(part.op), groups)
        volumes = (float(part.size),) * len(groups)
        r = sim.step(step, volumes)
        bound = sim.binding(step, volumes).text if sim.engine != "baseline" else "baseline formulas"
        out.append(PartTiming(part, r.seconds, f"{r.algo}/{r.proto}", bound))
    return tuple(out)


def cut_matrices(req: PlanRequest, mats: Sequence[Matrix], parts: dict[Matrix, float], constant: dict[Matrix, float],
                 keep: Matrix) -> list[Matrix]:
    """The matrices whose step can still be the fastest, found before the costly reductions are bounded.

    Each matrix's step is at most ``parts + count x plain AllReduce`` summed over its reductions (the plain
    AllReduce is one of the programs searched; without overlap discounted) and at least ``constant`` (the
    parts less the backward compute that may hide the data reduction) ``+ count x least lower bound`` of the
    reductions bounded here: all but the one with the most programs for its traffic (count x bytes).  A
    matrix whose least step exceeds the least upper bound of any matrix cannot be the best and is cut, so
    that reduction's programs are bounded on the rest only.  The best plan is the one simulating every
    matrix would find; the cut matrices are not listed.  ``keep`` (the
    default placement) is never cut.  Only where the search is exact and bounded: the des engine, not
    ``--exhaustive``, no ``--budget`` or ``--top-matrices`` (their cuts are their own).
    """
    skip = _skipped(req, mats)
    if skip is None:
        return list(mats)
    topo = req.job.topology
    settings = req.settings.each(topo)
    base = ConfigTask(spec=topo.spec, nodes=topo.nodes, axes=req.job.axes, reduce_axes=(0,), bytes_per_gpu=1.0,
                      settings=settings[0])
    upper, lower = dict(parts), dict(constant)
    with req.run.executor(len(mats) * len(settings) * len(req.reductions)) as ex:
        bounded = [r for r in req.reductions if r != skip]
        for r in bounded:
            least: dict[Matrix, float] = {}
            plain: dict[Matrix, float] = {}
            # top 0: each program bounded only as far as it can still beat its matrix's AllReduce (the least
            # bound of each matrix is all this needs)
            for b in bound_all(plan_tasks(base, [r], settings, mats), ex, top=0):
                m = b.task.matrices[0]
                least[m] = min([least.get(m, float("inf"))] + [bound for _, _, bound in b.programs])
                plain[m] = min([plain.get(m, float("inf"))] + [t.seconds for t in b.allreduce])
            for m in mats:
                lower[m] += r.count * least[m] * (1.0 - BOUND_SLACK)
                upper[m] += r.count * plain[m]
        # the skipped reduction's plain AllReduce (the least over the algorithms): its part of the upper bound
        tasks = [replace(t, programs=(ALLREDUCE_TEXT,)) for t in plan_tasks(base, [skip], settings, mats)]
        plain = {}
        for res in run_all(ex, run_task, tasks, "bounding"):
            m = res.task.matrices[0]
            plain[m] = min(plain.get(m, float("inf")), res.allreduce(m).seconds)
        for m in mats:
            upper[m] += skip.count * plain[m]
    best = min(upper.values())
    return [m for m in mats if m == keep or lower[m] <= best]


def step_cut(req: PlanRequest, mats: Sequence[Matrix], keep: Matrix, timer: Any
             ) -> tuple[list[Matrix], dict[Matrix, Any]]:
    """The matrices whose step (``p2sim step``'s time) can still be the fastest, and the steps timed to find them.

    ``timer``: a :class:`~.step_placements.StepTimer` (passed in: step_placements imports step_time, whose
    step_comm imports this module).  Each matrix's step is at least its step with every collective at its time
    alone (``timer.lower``: compute, bubble and optimizer, which do not depend on the placement, and the
    communication exposed without contention between axes, which only lengthens a step).  The matrices are
    timed in the order of that bound until the next one's bound is above the fastest step found; a matrix whose
    bound is above it cannot be the fastest and is cut (``keep``, the default placement, never is), so the
    fastest step is the one timing every matrix would find.  Only where the search is exact and bounded (as
    :func:`cut_matrices`): elsewhere nothing is cut and nothing timed here."""
    search = req.search
    if not search.bounded(req.settings.engine) or search.budget is not None or search.top_matrices is not None:
        return list(mats), {}
    lower = {m: timer.lower(m) for m in mats}
    times: dict[Matrix, Any] = {}  # step_placements.PlacementStep
    best = math.inf
    for m in sorted(mats, key=lambda m: (lower[m], m)):
        if lower[m] > best:
            break
        # the contention is not simulated where the step without it is above the fastest so far (then cut below)
        times[m] = timer.time(m, best)
        best = min(best, times[m].step_seconds)
    alive = [m for m in mats if m == keep or lower[m] <= best]
    return alive, {m: times[m] for m in alive if m in times and times[m].step.contended}


def _skipped(req: PlanRequest, mats: Sequence[Matrix]) -> Reduction | None:
    """The reduction :func:`cut_matrices` does not bound (the others it bounds on every matrix), None where it
    cuts nothing: not an exact bounded search (the des engine, not ``--exhaustive``, no ``--budget`` or
    ``--top-matrices``: their cuts are their own), or one reduction (nothing bounded to cut by)."""
    search = req.search
    if not search.bounded(req.settings.engine) or search.budget is not None or search.top_matrices is not None:
        return None
    if len(req.reductions) < 2:
        return None
    rules = req.settings.rules
    costs = {r: sum(program_counts(mats, r.axes, rules.profile, rules.max_size, req.limits)) for r in req.reductions}
    # not bounded here: the reduction with the most programs for its traffic (count x bytes), the data
    # reduction of a large job (many programs, one call); the others are bounded on every matrix
    return max(req.reductions, key=lambda r: (costs[r] / (r.count * r.bytes), costs[r], r.axes))


def _weight(part: StepPart, axes: Sequence[int]) -> int:
    """A part's simulation in AllReduces simulated alike (per GPU): an AllToAll builds every pair of ranks of each
    group, ``group - 1`` transfers a GPU (TRANSFER_SIZE_SECONDS each, size_sweep's measure), the rest one step."""
    if part.op != "AllToAll":
        return 1
    group = math.prod(axes[i] for i in part.axes)
    return max(1, math.ceil((group - 1) * TRANSFER_SIZE_SECONDS / SIMULATED_SECONDS_PER_GPU))


def step_plan_cost(req: PlanRequest, mats: Sequence[Matrix], timed: bool = False) -> JobCost:
    """The whole step's estimated cost, before anything is simulated (issue 43: at 14,336 SuperPOD nodes the
    other collectives and the cut's bounds ran minutes before the search's estimate was said): the other
    collectives simulated on every matrix (event-driven, every GPU), the reductions bounded to cut matrices
    (all but the one :func:`_skipped`, whose plain AllReduce is simulated instead) and the search's own
    (:func:`~.plan.plan_cost`, counted on every matrix: the cut is not known before).  ``timed`` (cut by the
    step's time, :func:`step_cut`): no reduction bounded to cut; each matrix's step timed instead, its
    collectives simulated alone (the other collectives again, each reduction as NCCL's).  Refused past the
    limits."""
    topo = req.job.topology
    settings = req.settings.each(topo)
    parts = sum(_weight(part, req.job.axes) for part in req.demand.parts)
    simulated = topo.devices * len(mats) * parts
    if timed:  # the contention that the bound leaves out is simulated only where a step can still be the fastest
        simulated += topo.devices * len(mats) * (parts + len(req.reductions))
    if not req.reductions:
        cost = estimate(topo.devices, 1, simulated, 1, [])
        req.limits.check_cost(cost, f"plan on {topo.spec.name} with {topo.node_count} nodes "
                                    f"({plural(len(mats), 'matrix')})", "fewer --nodes")
        return cost
    skip = None if timed else _skipped(req, mats)
    if skip is not None:
        simulated += topo.devices * len(mats) * len(settings)  # the skipped reduction's plain AllReduce
    again = [r for r in req.reductions if r != skip] if skip is not None else []
    return plan_cost(req, mats, StepCount(simulated=simulated), again)[0]


def step_matrices(req: PlanRequest) -> list[Matrix]:
    """The matrices a whole step's plan ranks (every one, counted against the limit first)."""
    job, topo = req.job, req.job.topology
    h, p = job.hierarchy, job.axes
    whole_groups(topo)
    req.limits.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {topo.spec.name}")
    return enumerate_matrices(h, p)


def _whole_step(demand: Demand) -> str:
    """``the whole step of llama3-8b`` (its reductions and other collectives, where no model names them)."""
    return ("the whole step" if demand.workload is None else f"the whole step of {demand.workload.model.name}")


def run_step_plan(req: PlanRequest, cost: JobCost | None = None, timer: Any = None) -> PlanResult:
    """Every matrix's whole step: the reductions' best programs, the other collectives, the overlap.

    ``cost``: its :func:`step_plan_cost`, where the caller estimated (and checked) it already.  ``timer``
    (``plan --model --axes``: :func:`~.step_placements.step_timer`'s): the matrices cut (:func:`step_cut`) and
    ranked by the step's time as ``p2sim step`` computes it, and that time of each (``step_times``); None (and
    where the step cannot be timed) by the step's communication summed (:func:`cut_matrices`)."""
    job, topo, demand = req.job, req.job.topology, req.demand
    h, p = job.hierarchy, job.axes
    mats = step_matrices(req)
    # the other collectives run as NCCL picks for them, whatever --algo forces on the reductions' programs
    sim = Simulator(topo, replace(req.settings.sim, algo="auto"), context=job.context)
    order = req.settings.order.value
    if cost is None:
        # checked against the limits before anything is simulated
        cost = step_plan_cost(req, mats, timed=timer is not None)
    announce(f"{plural(len(mats), 'matrix')}, {_whole_step(demand)}: {cost.brief()}")
    if demand.parts:
        announce(f"{plural(len(mats), 'matrix')}: {plural(len(demand.parts), 'other collective')} of the step "
                 "simulated under each")
    parts_of = {m: simulate_parts(sim, demand.parts, h, p, m, order) for m in mats}
    overlap = demand.overlap
    times: dict[Matrix, Any] = {}
    backward = None if overlap is None else overlap.backward_seconds
    if req.reductions:
        parts = {m: sum(pt.seconds * pt.part.count for pt in parts_of[m]) for m in mats}
        constant = {m: parts[m] - (backward or 0.0) for m in mats}
        keep = default_placement(mats, h, p, job.axis_names, req.data_axis).matrix
        if timer is not None:
            alive, times = step_cut(req, mats, keep, timer)
            if len(alive) < len(mats):
                announce(f"{plural(len(mats) - len(alive), 'matrix')} of {len(mats)} cut: their step's least time "
                         "(each collective alone, no contention) is above another's step")
        else:
            alive = cut_matrices(req, mats, parts, constant, keep)
            if len(alive) < len(mats):
                announce(f"{plural(len(mats) - len(alive), 'matrix')} of {len(mats)} cut: their step's lower bound "
                         "is above another's upper bound (its reductions as plain AllReduce)")
        plans, stats, default = search_plans(req, alive, constant)
        cut = len(mats) - len(alive)
    else:  # nothing to synthesize (ZeRO with sequence parallelism): the parts alone
        default = default_placement(mats, h, p, job.axis_names, req.data_axis)
        plans = [Plan(m, ()) for m in mats]
        stats = SearchStats(0, 0, len(mats), len(mats), True, False, None, None)
        cut = 0
    sims = {"auto": sim}

    def bound(m: Matrix, c: PlanChoice) -> PlanChoice:
        """The choice with what bounds its program's slowest step (Simulator.bindings, its algorithm's)."""
        if req.settings.engine == "baseline":
            return c
        s = sims.get(c.algo) or sims.setdefault(c.algo, Simulator(topo, replace(req.settings.sim, algo=c.algo),
                                                                  context=job.context))
        lw = Lowering.of(Placement.of(h, p, m), c.reduction.axes, order)
        steps = s.bindings(lw, parse_program(c.program), float(c.reduction.bytes))
        return replace(c, bound=max(steps, key=lambda b: b.seconds).text)

    whole = [replace(pl, choices=tuple(bound(pl.matrix, c) for c in pl.choices), parts=parts_of[pl.matrix],
                     overlap=overlap, whole_step=True) for pl in plans]
    whole.sort(key=lambda pl: (pl.total_seconds, pl.matrix))
    steps: tuple[Any, ...] = ()
    if timer is not None:  # the placements by the step's time, fastest first (ties: the least communication)
        for pl in whole:
            if pl.matrix not in times:
                times[pl.matrix] = timer.time(pl.matrix)
        rank = {pl.matrix: i for i, pl in enumerate(whole)}
        whole.sort(key=lambda pl: (times[pl.matrix].step_seconds, rank[pl.matrix]))
        steps = tuple(times[pl.matrix] for pl in whole)
    warning = demand.warn_memory(topo, "give a smaller --reduction size")
    return PlanResult(req, tuple(whole), default.matrix, stats, default.basis, () if warning is None else (warning,),
                      cut, steps)
