"""Whole-step plans: rank matrices by the total communication of a training step.

A step has several reductions, each over some axes with a volume and a count (for
example one per layer).  For every matrix each reduction uses its best synthesized
program (and algorithm); the plan's time is the sum of count x time.  Two baselines
are reported beside the best plan: the usual default placement (data parallelism
outermost, model axes packed innermost) with its best programs, and that placement
with plain AllReduce for everything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..formalism.mesh import megatron_matrix
from ..formalism.naming import describe_placement, is_default
from ..formalism.placement import Matrix, count_matrices, enumerate_matrices, format_matrix
from ..util.errors import InputError
from ..util.table import Tabular
from ..util.units import format_seconds
from ..util.log import announce
from ..util.parsing import as_text, axis_indices
from .contexts import context_of
from .jobsize import (SIMULATED_SECONDS_PER_GPU, STEP_SECONDS_PER_GPU, JobCost, Limits, StepCount,
                      estimate, hashed, plural, program_counts, program_steps, say_synthesis,
                      synthesis_cardinalities)
from .step_counts import bounded_steps
from .demand import Demand, Reduction, no_model_options, parse_reduction
from .requests import (DEFAULT_SETTINGS, DEFAULT_SYSTEM, Job, RunOptions, SearchOptions, Settings, job_size_text,
                       limits_of, whole_groups)
from .search import SearchStats, run_search
from .config_task import ConfigResult, ConfigTask
from .step_workload import Overlap, PartTiming, axis_rows, overlap_text

__all__ = ["Reduction", "parse_reduction", "data_axis_of", "default_matrix", "default_data_axis", "DefaultPlacement", "default_placement", "PlanChoice", "Plan", "plan_tasks", "build_plans",
           "plan_scores", "PlanRequest", "PlanResult", "plan_cost", "run_plan"]


def default_matrix(matrices: Sequence[Matrix], data_axis: int, names: Sequence[str] | None = None) -> Matrix:
    """The usual placement: model axes as far inside as they go, data parallelism outside.

    Among the matrices, the one whose model-axis factors are largest at the innermost
    level, then the next level out, and so on; ties go by the axes in order of their names
    (``names``), so the answer does not depend on the order the axes were given in.
    """
    order = sorted(range(len(matrices[0])), key=lambda i: (names[i], i) if names else i)

    def key(m: Matrix) -> tuple[int, ...]:
        levels = len(m[0])
        inner = []
        for j in reversed(range(levels)):
            prod = 1
            for i, row in enumerate(m):
                if i != data_axis:
                    prod *= row[j]
            inner.append(prod)
        return tuple(inner)

    return max(matrices, key=lambda m: (key(m), [-v for i in order for v in m[i]]))


DATA_AXIS_NAMES = ("data", "dp", "data_parallel", "ddp", "fsdp")  # what frameworks call data parallelism


def default_data_axis(names: Sequence[str]) -> str:
    """The data-parallel axis when none is given: the one named like it, else the first."""
    return next((n for n in names if n.lower() in DATA_AXIS_NAMES), "0")


@dataclass(frozen=True)
class DefaultPlacement:
    """The placement a framework runs unless told otherwise, and why p2sim takes it (``basis``, in words)."""

    matrix: Matrix
    basis: str


def default_placement(matrices: Sequence[Matrix], levels: Sequence[int], sizes: Sequence[int],
                      names: Sequence[str], data_axis: int) -> DefaultPlacement:
    """The default placement the answers' gains are measured against.

    Where the axes are named as frameworks name them, Megatron-LM's default rank order
    (tensor innermost, then context, expert, data, pipeline outermost), whatever order the
    axes were given in: that is what a user who does not run p2sim gets.  Otherwise, or where
    the data axis is not the one Megatron calls data, or Megatron's order is no placement of
    these sizes, the model axes packed innermost with data outside (:func:`default_matrix`).

    Examples
    --------
    >>> mats = enumerate_matrices([2, 8], [2, 2, 4])
    >>> default_placement(mats, [2, 8], [2, 2, 4], ("data", "pipeline", "tensor"), 0).matrix
    ((1, 2), (2, 1), (1, 4))
    >>> default_placement(mats, [2, 8], [2, 2, 4], ("a", "b", "c"), 0).basis
    'model axes packed innermost, a outermost (no Megatron-LM dimension is named a (name axes tensor, context, expert, data, pipeline))'
    """
    found, why = megatron_matrix(levels, sizes, names)
    dp = next((i for i, n in enumerate(names) if n.lower() in DATA_AXIS_NAMES and sizes[i] > 1), None)
    if found is not None and dp not in (None, data_axis):
        found, why = None, f"the data axis is {names[data_axis]}, not {names[dp]}, which Megatron-LM calls data"
    if found is not None and found in matrices:
        return DefaultPlacement(found, f"{why}: tensor innermost, then context, expert, data, pipeline outermost, as "
                                       "the axes are named as Megatron-LM names them")
    if found is not None:
        why = f"{why} is not among the matrices searched"
    return DefaultPlacement(default_matrix(matrices, data_axis, names),
                            f"model axes packed innermost, {names[data_axis]} outermost ({why})")


@dataclass(frozen=True)
class PlanChoice:
    reduction: Reduction
    algo: str
    program: str
    seconds: float  # one reduction
    allreduce_seconds: float  # one plain AllReduce (best algorithm)
    bound: str = ""  # what bounds the program's slowest step (a model's plan says it; empty: not asked)

    def to_json(self) -> dict[str, Any]:
        return {"axes": list(self.reduction.axes), "bytes": self.reduction.bytes, "count": self.reduction.count,
                "algo": self.algo, "program": self.program, "seconds": self.seconds,
                "allreduce_seconds": self.allreduce_seconds, **({"bound": self.bound} if self.bound else {})}


@dataclass(frozen=True)
class Plan:
    """A matrix's plan: each reduction's best program and, for a model's whole step (``whole_step``), the
    other collectives' times (``parts``) and the data reduction's overlap with backward compute."""

    matrix: Matrix
    choices: tuple[PlanChoice, ...]
    parts: tuple[PartTiming, ...] = ()
    overlap: Overlap | None = None
    whole_step: bool = False

    @property
    def total_seconds(self) -> float:
        if not self.whole_step:
            return sum(c.seconds * c.reduction.count for c in self.choices)
        return self._step_seconds(False)

    @property
    def allreduce_total_seconds(self) -> float:
        if not self.whole_step:
            return sum(c.allreduce_seconds * c.reduction.count for c in self.choices)
        return self._step_seconds(True)

    def _data(self, c: PlanChoice | PartTiming) -> bool:
        if self.overlap is None:
            return False
        if isinstance(c, PlanChoice):
            return ("AllReduce", c.reduction.axes, c.reduction.bytes) in self.overlap.keys
        return (c.part.op, c.part.axes, c.part.size) in self.overlap.keys

    def _step_seconds(self, allreduce: bool) -> float:
        """Every collective's count x time, summed, the data reduction's part hidden by backward compute."""
        data = rest = 0.0
        for c in self.choices:
            t = (c.allreduce_seconds if allreduce else c.seconds) * c.reduction.count
            data, rest = (data + t, rest) if self._data(c) else (data, rest + t)
        for pt in self.parts:
            t = pt.seconds * pt.part.count
            data, rest = (data + t, rest) if self._data(pt) else (data, rest + t)
        return rest + (data if self.overlap is None else max(0.0, data - self.overlap.backward_seconds))

    @property
    def hidden_seconds(self) -> float:
        """The data reduction's seconds hidden behind backward compute (0 without an overlap)."""
        if self.overlap is None:
            return 0.0
        data = (sum(c.seconds * c.reduction.count for c in self.choices if self._data(c))
                + sum(pt.seconds * pt.part.count for pt in self.parts if self._data(pt)))
        return min(data, self.overlap.backward_seconds)

    def axis_seconds(self) -> dict[tuple[int, ...], float]:
        """Communication seconds per step by the axes each collective spans (count x time, no overlap)."""
        out: dict[tuple[int, ...], float] = {}
        for c in self.choices:
            out[c.reduction.axes] = out.get(c.reduction.axes, 0.0) + c.seconds * c.reduction.count
        for pt in self.parts:
            out[pt.part.axes] = out.get(pt.part.axes, 0.0) + pt.seconds * pt.part.count
        return out

    def to_json(self) -> dict[str, Any]:
        out = {"matrix": [list(r) for r in self.matrix], "total_seconds": self.total_seconds,
               "allreduce_total_seconds": self.allreduce_total_seconds,
               "reductions": [c.to_json() for c in self.choices]}
        if self.whole_step:
            out.update(parts=[pt.to_json() for pt in self.parts], hidden_seconds=self.hidden_seconds)
        return out


def plan_tasks(base: ConfigTask, reductions: Sequence[Reduction], settings: Sequence[Settings],
               matrices: Sequence[Matrix]) -> list[ConfigTask]:
    """One task per reduction, algorithm (``settings``: one per algorithm) and matrix."""
    return [
        replace(base, reduce_axes=r.axes, bytes_per_gpu=float(r.bytes), settings=s, matrices=(m,))
        for r in reductions for s in settings for m in matrices
    ]


def plan_scores(reductions: Sequence[Reduction]):
    """A lower bound of each matrix's plan (count x least bound per reduction, summed), for
    :func:`~p2sim.studies.search.run_search`'s ``--top-matrices``."""
    def score(bounds) -> dict[Matrix, float]:
        least: dict[tuple, float] = {}
        for b in bounds:
            for m, _, bound in b.programs:
                key = (b.task.reduce_axes, b.task.bytes_per_gpu, m)
                least[key] = min(least.get(key, float("inf")), bound)
        out: dict[Matrix, float] = {}
        for (axes, nbytes, m), v in least.items():
            count = sum(r.count for r in reductions if r.axes == axes and float(r.bytes) == nbytes)
            out[m] = out.get(m, 0.0) + count * v
        return out

    return score


def build_plans(reductions: Sequence[Reduction], results: Sequence[ConfigResult],
                matrices: Sequence[Matrix]) -> list[Plan]:
    """Plans for every matrix, fastest first (ties by matrix)."""
    by_key: dict[tuple, list[ConfigResult]] = {}
    for res in results:
        by_key.setdefault((res.task.reduce_axes, res.task.bytes_per_gpu, res.task.matrices), []).append(res)
    plans = []
    for m in matrices:
        choices = []
        for r in reductions:
            options = by_key[(r.axes, float(r.bytes), (m,))]
            best = min(((res.best(m), res.task.settings.algo) for res in options), key=lambda x: (x[0].seconds, x[1]))
            ar = min(res.allreduce(m).seconds for res in options)
            choices.append(PlanChoice(r, best[1], best[0].text, best[0].seconds, ar))
        plans.append(Plan(m, tuple(choices)))
    plans.sort(key=lambda p: (p.total_seconds, p.matrix))
    return plans


def data_axis_of(data_axis: Any, names: Sequence[str], sizes: Sequence[int]) -> tuple[int, bool]:
    """The data-parallel axis (``--data-axis``, by index or name; default: :func:`default_data_axis`), and whether
    there is one: False where the axes are named, none like data, and none was given (the axis is then only the
    one the default placement puts outermost)."""
    text = as_text(default_data_axis(names) if data_axis is None else data_axis, "data-axis")
    (axis, *more) = axis_indices(text, names, "data-axis")
    if more:
        raise InputError(f"data-axis: {text!r} names {len(more) + 1} axes; give one")
    if not 0 <= axis < len(sizes):
        raise InputError(f"data-axis: {axis} is out of range 0..{len(sizes) - 1}")
    return axis, data_axis is not None or any(n.lower() in DATA_AXIS_NAMES for n in names) or is_default(names)


@dataclass(frozen=True)
class PlanRequest:
    job: Job
    demand: Demand  # the reductions, and for a model's step (--model) its other collectives and overlap
    data_axis: int
    settings: Settings
    search: SearchOptions
    limits: Limits
    run: RunOptions
    # False where the axes are named, none like data and no --data-axis is given: data_axis is then only the
    # axis the default placement puts outermost (default_data_axis), no data axis
    has_data_axis: bool = True

    @classmethod
    def build(cls, system: Any = DEFAULT_SYSTEM, nodes: Any = None, axes: Any = None, reductions: Any = (),
              data_axis: Any = None, algo: str = DEFAULT_SETTINGS.algo, proto: str = DEFAULT_SETTINGS.proto,
              engine: str = DEFAULT_SETTINGS.engine, profile: Any = DEFAULT_SETTINGS.rules.profile.value,
              max_size: Any = DEFAULT_SETTINGS.rules.max_size, order: Any = DEFAULT_SETTINGS.order.value,
              exhaustive: bool = False, budget: Any = None, top_matrices: Any = None, workers: Any = None,
              scheduler: str | None = None, scheduler_file: Any = None, max_matrices: Any = None, max_simulations: Any = None,
              yes: bool = False, model: Any = None, train: Any = None, compute_per_layer: Any = None) -> PlanRequest:
        """``reductions``: texts like ``"data:8GiB"`` and ``"tensor:64MiB x 24"``, or :class:`Reduction` values;
        ``model`` (with ``train`` and ``compute_per_layer``): a model's whole step, its AllReduces first, then
        the reductions given (:meth:`~p2sim.studies.demand.Demand.of_model`)."""
        job = Job.build(system, nodes, axes)
        if model is None:
            no_model_options(train, compute_per_layer)
            demand = Demand.of_reductions(reductions, job.axis_names, job.axes)
        else:
            demand = Demand.of_model(model, train, compute_per_layer, job.axis_names, job.axes, reductions)
        axis, named = data_axis_of(data_axis, job.axis_names, job.axes)
        settings = Settings.of(algo, proto, engine, profile, max_size, order)
        return cls(job, demand, axis, settings, SearchOptions.of(exhaustive, budget, top_matrices),
                   limits_of(yes, max_matrices, max_simulations), RunOptions.of(workers, scheduler, scheduler_file),
                   named)

    @classmethod
    def of(cls, job: Job, demand: Demand, settings: Settings, search: SearchOptions = SearchOptions(),
           limits: Limits = Limits(), run: RunOptions = RunOptions()) -> PlanRequest:
        """The plan of ``demand`` on ``job`` from values built already (whatif's points, check's step), with the
        default data axis."""
        axis, named = data_axis_of(None, job.axis_names, job.axes)
        return cls(job, demand, axis, settings, search, limits, run, named)

    @property
    def reductions(self) -> tuple[Reduction, ...]:
        return self.demand.reductions


@dataclass(frozen=True, repr=False)
class PlanResult(Tabular):
    """Every matrix's plan, fastest first, beside the default placement's.

    ``table()``: the plans, as the JSON's ``plans``, each with its placement in words.
    """

    request: PlanRequest
    plans: tuple[Plan, ...]
    default: Matrix
    stats: SearchStats
    default_basis: str = ""  # why that placement is the default (Megatron-LM's order, or the fallback and why)
    warnings: tuple[str, ...] = ()
    cut: int = 0  # matrices of a model's step cut before their programs were bounded (step_plan.cut_matrices)
    # with a model: each placement listed by its step's time (step_placements.placement_steps), fastest first
    step_times: tuple[Any, ...] = ()

    @property
    def best(self) -> Plan:
        return self.plans[0]

    @property
    def default_plan(self) -> Plan:
        return next(pl for pl in self.plans if pl.matrix == self.default)

    @property
    def savings(self) -> dict[str, float]:
        best, dplan = self.best, self.default_plan
        return {
            "vs_default_placement": 1 - best.total_seconds / dplan.total_seconds,
            "vs_default_allreduce": 1 - best.total_seconds / dplan.allreduce_total_seconds,
            "vs_best_placement_allreduce": 1 - best.total_seconds / min(pl.allreduce_total_seconds for pl in self.plans),
        }

    def placement(self, matrix: Matrix) -> str:
        job = self.request.job
        return describe_placement(matrix, job.axis_names, job.topology.level_names, job.spec.node_level)

    def _row(self, pl: Plan) -> dict[str, Any]:
        steps = {p.matrix: p.step_seconds for p in self.step_times}
        # a model's plan leads with the step's time it is ranked by (step_plan.run_step_plan)
        lead = {"step_seconds": steps[pl.matrix]} if pl.matrix in steps else {}
        return dict(lead, **pl.to_json(), placement=self.placement(pl.matrix))

    def table(self) -> list[dict[str, Any]]:
        return [self._row(pl) for pl in self.plans]

    def summary(self) -> str:
        job, best = self.request.job, self.best
        steps = {p.matrix: p.step_seconds for p in self.step_times}
        if best.matrix in steps and self.default in steps:  # a model's plan: ranked by the step's time
            ratio = steps[best.matrix] / steps[self.default] - 1
            return (f"plan on {job.spec.name} ({job.topology.node_count} nodes, axes {job.axes_text}), "
                    f"{self.request.demand.workload.model.name}'s step: best {format_matrix(best.matrix)} in "
                    f"{format_seconds(steps[best.matrix])} a step, {abs(ratio):.1%} {'less' if ratio <= 0 else 'more'} "
                    f"than the default placement {format_matrix(self.default)}")
        return (f"plan on {job.spec.name} ({job.topology.node_count} nodes, axes {job.axes_text}), "
                f"{len(self.request.reductions)} reductions: best {format_matrix(best.matrix)} in "
                f"{format_seconds(best.total_seconds)} a step, {self.savings['vs_default_placement']:.1%} less than "
                f"the default placement {format_matrix(self.default)}")

    def to_json(self) -> dict[str, Any]:
        req, job = self.request, self.request.job
        topo = job.topology
        return {"system": topo.spec.name, "nodes": topo.node_count, "axes": list(job.axes),
                "axis_names": list(job.axis_names), "level_names": list(topo.level_names), "data_axis": req.data_axis,
                "order": req.settings.order.value, "algo": req.settings.algo, "model": req.settings.engine,
                "reductions": [{"axes": list(r.axes), "bytes": r.bytes, "count": r.count} for r in req.reductions],
                "plans": self.table(), "best": self._row(self.best), "default": self._row(self.default_plan), "best_placement": self.placement(self.best.matrix),
                "default_placement": self.placement(self.default), "default_basis": self.default_basis,
                "savings": self.savings,
                "warnings": list(self.warnings),
                "search": dict(self.stats.to_json(), cut_matrices=self.cut), **self._step_json()}

    def _step_json(self) -> dict[str, Any]:
        """With a model: ``step``, the workload and the best and default plans by axis (the report's rows)."""
        work, job = self.request.demand.workload, self.request.job
        if work is None:  # named reductions: no model, no step to describe
            return {}
        rows = [axis_rows(pl, job.axis_names, job.topology.level_names, job.spec.node_level)
                for pl in (self.best, self.default_plan)]
        return {"step": dict(work.to_json(), overlap=overlap_text(work), best_axes=rows[0], default_axes=rows[1],
                             best_seconds=self.best.total_seconds, default_seconds=self.default_plan.total_seconds,
                             hidden_seconds=self.best.hidden_seconds,
                             by_step_time=[p.to_json() for p in self.step_times])}


def plan_cost(req: PlanRequest, mats: Sequence[Matrix], more: StepCount = StepCount(),
              again: Sequence[Reduction] = (), say: bool = True) -> tuple[JobCost, int]:
    """The estimated cost of searching ``mats``' best programs per reduction, checked against the limits before
    the synthesis (its least: the synthesis and each AllReduce) and after (what the bounds build), and the
    programs' count.  A whole step's plan adds ``more`` (its other collectives simulated) and bounds the
    reductions ``again`` twice (once to cut matrices, :func:`~.step_plan.cut_matrices`).  ``say``: announce a
    long synthesis first (not where the whole step's estimate announced it already)."""
    job, topo = req.job, req.job.topology
    settings = req.settings.each(topo)
    rules = req.settings.rules
    smaller = "fewer --nodes, fewer --reduction options or a smaller --max-size"
    where = f"plan on {topo.spec.name} with {topo.node_count} nodes ({plural(len(mats), 'matrix')})"
    cards = [synthesis_cardinalities(m, r.axes) for r in req.reductions for m in mats]
    processes = req.run.processes(len(mats) * len(req.reductions) * len(settings))
    ecmp = hashed(topo.spec)  # hashed routes: each group bounded on its own (jobsize.ECMP_STEP_FACTOR)
    # the other collectives simulated (more), as GPU-steps of flows cost alike (jobsize's constants)
    extra = round(more.simulated * SIMULATED_SECONDS_PER_GPU / STEP_SECONDS_PER_GPU)
    first = topo.devices * len(mats) * len(req.reductions) * len(settings) + extra
    least = estimate(topo.devices, 1, first, processes, cards, first if ecmp else 0)
    req.limits.check_cost(least, where, smaller)
    if say:
        say_synthesis(least, cards)
    programs = sum(sum(program_counts(mats, r.axes, rules.profile, rules.max_size, req.limits))
                   for r in req.reductions)
    steps_of = {r: sum(program_steps(mats, r.axes, rules.profile, rules.max_size, req.limits))
                for r in req.reductions}
    gpu_steps = topo.devices * len(settings) * (sum(steps_of.values()) + sum(steps_of[r] for r in again))
    cost = estimate(topo.devices, 1, gpu_steps + extra, processes, cards, gpu_steps if ecmp else 0)
    if req.search.bounded(req.settings.engine):  # what its bounds build, counted as rank counts it
        memo = context_of(topo.spec, topo.nodes).row_counts  # filled for this process's bounds
        counted = {r: bounded_steps(topo, mats, r.axes, [s.order for s in settings], rules.profile, rules.max_size,
                                    memo) for r in req.reductions}
        cost = replace(cost, steps=sum(counted.values(), more) + sum((counted[r] for r in again), StepCount()))
    req.limits.check_cost(cost, where, smaller)
    return cost, programs


def search_plans(req: PlanRequest, mats: Sequence[Matrix], extra: Mapping[Matrix, float] | None = None
                 ) -> tuple[list[Plan], SearchStats, DefaultPlacement]:
    """Each matrix's best program per reduction (searched with the bounds), as plans fastest first, with the
    default placement; ``extra`` adds each matrix's other collectives to the bound ``--top-matrices`` ranks by."""
    job, topo = req.job, req.job.topology
    h, p = job.hierarchy, job.axes
    settings = req.settings.each(topo)
    # a whole step's said it (step_plan_cost)
    cost, programs = plan_cost(req, mats, say=not req.demand.whole_step)
    total = programs * len(settings)
    what = (f"{plural(len(mats), 'matrix')}, {plural(len(req.reductions), 'reduction')} with "
            f"{plural(programs, 'program')} in all, {plural(len(settings), 'algorithm')}")
    size = job_size_text(req.limits, req.search, req.settings.engine, total, what)
    base = ConfigTask(spec=topo.spec, nodes=topo.nodes, axes=p, reduce_axes=(0,), bytes_per_gpu=1.0,
                     settings=settings[0])
    tasks = plan_tasks(base, req.reductions, settings, mats)
    default = default_placement(mats, h, p, job.axis_names, req.data_axis)
    score = plan_scores(req.reductions)
    if extra is not None:
        least = score

        def score(bounds):  # type: ignore[no-redef]
            return {m: v + extra.get(m, 0.0) for m, v in least(bounds).items()}
    with req.run.executor(len(tasks)) as ex:
        announce(f"{what}: {size} in {plural(len(tasks), 'task')} {req.run.where(len(tasks))}, {cost.brief()}")
        # each matrix's best program per reduction: exact, with or without the bounds
        results, stats = run_search(tasks, ex, 0, score=score, always=frozenset([default.matrix]),
                                    label="planning", **req.search.kwargs())
    mats = [m for m in mats if m in {r.task.matrices[0] for r in results}]
    return build_plans(req.reductions, results, mats), stats, default


def run_plan(req: PlanRequest) -> PlanResult:
    work = req.demand.workload
    if work is not None:  # a model's step (with no AllReduce, ZeRO-1 + sp: max of nothing) is step_plan's
        raise InputError(f"plan: the request is {work.model.name}'s whole step: run_plan plans AllReduces only; "
                         "run it with p2sim.studies.step_plan.run_step_plan (as p2sim.api.plan does)")
    job, topo = req.job, req.job.topology
    h, p = job.hierarchy, job.axes
    whole_groups(topo)
    req.limits.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {topo.spec.name}")
    plans, stats, default = search_plans(req, enumerate_matrices(h, p))
    warning = req.demand.warn_memory(topo, "give a smaller --reduction size")
    return PlanResult(req, tuple(plans), default.matrix, stats, default.basis,
                      () if warning is None else (warning,))
