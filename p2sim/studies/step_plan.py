"""A model-driven plan: every matrix charged with every collective of a training step (``plan --model``).

The step's AllReduces over whole axes (:mod:`.step_workload`'s reductions) go through the plan's search
(:func:`~p2sim.studies.plan.search_plans`: each reduction's best synthesized program and algorithm, with
the bounds); every other collective (a :class:`~p2sim.studies.step_workload.StepPart`) is simulated once
per matrix as ONE lowered step over all its groups at once, so that they contend, with NCCL's choice of
algorithm and protocol, and charged ``count`` times.  Those per-matrix constants join the bound that
``--top-matrices`` ranks matrices by.  The model of overlap: none, the step's communication summed,
unless a compute time per layer is given (then the data reduction overlaps the last micro-batch's
backward, :class:`~p2sim.studies.step_workload.Overlap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..formalism.hierarchy import Lowering, LoweredStep
from ..formalism.placement import Matrix, Placement, count_matrices, enumerate_matrices
from ..formalism.program import parse_program
from ..formalism.semantics import Op
from ..sim import Simulator
from ..util.log import announce
from .jobsize import plural
from .plan import Plan, PlanChoice, PlanRequest, PlanResult, default_placement, search_plans
from .requests import warn_memory, whole_groups
from .search import SearchStats
from .step_workload import ENDS, PAIRS, Overlap, PartTiming, StepPart

__all__ = ["part_groups", "simulate_parts", "run_step_plan"]


def part_groups(part: StepPart, hierarchy: Sequence[int], axes: Sequence[int], matrix: Matrix,
                order: str = "aligned") -> tuple[tuple[int, ...], ...]:
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
                   matrix: Matrix, order: str = "aligned") -> tuple[PartTiming, ...]:
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


def run_step_plan(req: PlanRequest) -> PlanResult:
    """Every matrix's whole step: the reductions' best programs, the other collectives, the overlap."""
    job, topo, work = req.job, req.job.topology, req.step
    assert work is not None, "run_step_plan needs a request with a model's step"
    h, p = job.hierarchy, job.axes
    whole_groups(topo)
    req.limits.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {topo.spec.name}")
    mats = enumerate_matrices(h, p)
    # the other collectives run as NCCL picks for them, whatever --algo forces on the reductions' programs
    sim = replace(req.settings.sim, algo="auto").simulator(topo, job.context)
    order = req.settings.order.value
    if work.parts:
        announce(f"{plural(len(mats), 'matrix')}: {plural(len(work.parts), 'other collective')} of the step "
                 "simulated under each")
    parts_of = {m: simulate_parts(sim, work.parts, h, p, m, order) for m in mats}
    backward = work.backward_seconds
    overlap = None if backward is None else Overlap(backward, work.overlapped)
    if req.reductions:
        constant = {m: sum(pt.seconds * pt.part.count for pt in parts_of[m]) - (backward or 0.0) for m in mats}
        plans, stats, default = search_plans(req, mats, constant)
    else:  # nothing to synthesize (ZeRO with sequence parallelism): the parts alone
        default = default_placement(mats, h, p, job.axis_names, req.data_axis)
        plans = [Plan(m, ()) for m in mats]
        stats = SearchStats(0, 0, len(mats), len(mats), True, False, None, None)
    sims = {"auto": sim}

    def bound(m: Matrix, c: PlanChoice) -> PlanChoice:
        """The choice with what bounds its program's slowest step (Simulator.bindings, its algorithm's)."""
        if req.settings.engine == "baseline":
            return c
        s = sims.get(c.algo) or sims.setdefault(c.algo, replace(req.settings.sim, algo=c.algo).simulator(topo, job.context))
        lw = Lowering.of(Placement.of(h, p, m), c.reduction.axes, order)
        steps = s.bindings(lw, parse_program(c.program), float(c.reduction.bytes))
        return replace(c, bound=max(steps, key=lambda b: b.seconds).text)

    whole = [replace(pl, choices=tuple(bound(pl.matrix, c) for c in pl.choices), parts=parts_of[pl.matrix],
                     overlap=overlap, whole_step=True) for pl in plans]
    whole.sort(key=lambda pl: (pl.total_seconds, pl.matrix))
    largest = max([r.bytes for r in req.reductions] + [pt.size for pt in work.parts])
    warning = warn_memory(job.spec, largest, False, topo.node_count, "give a smaller --reduction size")
    return PlanResult(req, tuple(whole), default.matrix, stats, default.basis, () if warning is None else (warning,))
