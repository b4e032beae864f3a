"""The rank study: every (matrix, program, algorithm) of a job, fastest first, by the bounded search.

Examples
--------
>>> req = RankRequest.build(system="a100", axes={"data": 4, "tensor": 8}, reduce=["data"], workers=1, top=3)
>>> result = run_rank(req)
>>> result.best.matrix, result.best.timing.text, result.stats.exact
(((1, 4), (2, 4)), 'AllReduce(slice=0, Inside)', True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from ..collectives import check_proto
from ..collectives.binding import Binding
from ..formalism.hierarchy import Order
from ..formalism.naming import describe_placement
from ..formalism.placement import (Matrix, Placement, count_matrices, enumerate_matrices, format_matrix,
                                   parse_matrix)
from ..sim import ModelConfig
from ..sim.engines import check_engine
from ..util.log import announce
from ..util.table import Tabular
from ..util.units import format_seconds
from ..util.errors import InputError
from ..util.parsing import as_text, positive_int
from .bindings import program_bindings
from .jobsize import Limits, check_job, estimate, hashed, plural, program_counts, synthesis_cardinalities
from .step_counts import bounded_steps
from .contexts import context_of
from .orders import OrderComparison, compare_orders, orders_agree
from .demand import DEFAULT_REDUCE, Demand, no_model_options
from .plan import DefaultPlacement, default_data_axis, default_placement
from .ranking import MatrixSummary, RankEntry, Ranking, rank_results, split_by_matrix
from .requests import (DEFAULT_SETTINGS, DEFAULT_SYSTEM, Job, RunOptions, SearchOptions, Settings, algorithms, job_size_text, limits_of,
                       reduces_something, whole_groups)
from .search import SearchStats, run_search
from .config_task import ConfigTask

__all__ = ["RankRequest", "RankResult", "run_rank", "scope_note", "DEFAULT_TOP"]

DEFAULT_TOP = 10  # the ranking's entries shown


def scope_note(p: tuple[int, ...], red: tuple[int, ...], names: tuple[str, ...]) -> str:
    """What ``rank`` optimises: the reduction axes' traffic only (empty when every axis is reduced)."""
    others = [names[i] for i in range(len(p)) if i not in red and p[i] > 1]
    if not others:
        return ""
    return (f"optimises the reduction over {', '.join(names[i] for i in sorted(set(red)))} only: the traffic of "
            f"{', '.join(others)} is not counted (p2sim plan weighs every reduction of a training step)")


# rank --model: the question is plan's (every placement by a model's whole step), refused here where the
# request is built, so that rank answers one type (RankResult)
_MODEL_IS_PLANS = ("model: rank ranks the programs of one reduction (--reduce, --bytes); a model's whole step is "
                   "p2sim plan's question: give the same options to p2sim plan --model (p2sim.plan(model=...)), "
                   "which ranks every placement by it")


@dataclass(frozen=True)
class RankRequest:
    job: Job
    demand: Demand  # the one reduction: its axes (as given) and buffer per GPU
    matrices: tuple[Matrix, ...] | None  # None: every matrix
    top: int
    settings: Settings  # the algorithm as asked: auto, ring, tree, nvls, nvls_tree or both
    search: SearchOptions
    limits: Limits
    run: RunOptions
    compare_orders: bool = False

    @classmethod
    def build(cls, system: Any = DEFAULT_SYSTEM, nodes: Any = None, axes: Any = None, reduce: Any = DEFAULT_REDUCE,
              matrix: Any = None, bytes: Any = None, top: Any = DEFAULT_TOP, algo: str = DEFAULT_SETTINGS.algo,  # noqa: A002
              proto: str = DEFAULT_SETTINGS.proto, engine: str = DEFAULT_SETTINGS.engine,
              profile: Any = DEFAULT_SETTINGS.rules.profile.value, max_size: Any = DEFAULT_SETTINGS.rules.max_size,
              order: Any = DEFAULT_SETTINGS.order.value, compare_orders: bool = False, exhaustive: bool = False,
              budget: Any = None, top_matrices: Any = None, workers: Any = None, scheduler: str | None = None,
              scheduler_file: Any = None, max_matrices: Any = None, max_simulations: Any = None, yes: bool = False,
              model: Any = None, train: Any = None, compute_per_layer: Any = None) -> RankRequest:
        """The ranking of one reduction (:meth:`~p2sim.studies.demand.Demand.of_reduce`); ``model`` is refused,
        pointing to plan, which ranks every placement by a model's whole step."""
        if model is not None:
            raise InputError(_MODEL_IS_PLANS)
        no_model_options(train, compute_per_layer)
        job = Job.build(system, nodes, axes)
        demand = Demand.of_reduce(reduce, bytes, job.axis_names, job.topology)
        # rank has always checked the engine before --top, and the protocol before the rules: the first of
        # several bad values is the one refused
        check_engine(engine)
        k = positive_int(as_text(top, "top"), "top")
        algorithms(algo)
        check_proto(proto)
        settings = Settings.of(algo, proto, engine, profile, max_size, order)
        search = SearchOptions.of(exhaustive, budget, top_matrices)
        limits = limits_of(yes, max_matrices, max_simulations)
        mats = None if matrix is None else (parse_matrix(matrix) if isinstance(matrix, str)
                                            else tuple(tuple(r) for r in matrix),)
        return cls(job, demand, mats, k, settings, search, limits,
                   RunOptions.of(workers, scheduler, scheduler_file), bool(compare_orders))


@dataclass(frozen=True, repr=False)
class RankResult(Tabular):
    """The ranking, what the search simulated, and (``compare_orders``) both device orders' best programs.

    ``table()`` (``to_frame()``, ``to_csv()``): the top entries, as the JSON's ``top``.
    """

    request: RankRequest
    reduce_axes: tuple[int, ...]
    ranking: Ranking
    stats: SearchStats
    comparison: tuple[OrderComparison, ...] | None
    warnings: tuple[str, ...] = ()

    @property
    def best(self) -> RankEntry:
        return self.ranking.entries[0]

    @cached_property
    def best_bindings(self) -> tuple[Binding, ...]:
        """What bounds each step of the best program (computed for the answer only)."""
        return program_bindings(self.request.job.context, self.best)

    @property
    def scope(self) -> str:
        job = self.request.job
        return scope_note(job.axes, self.reduce_axes, job.axis_names)

    @cached_property
    def default(self) -> DefaultPlacement:
        """The placement a framework runs unless told otherwise, and its basis in words: plan's
        (:func:`~p2sim.studies.plan.default_placement`: Megatron-LM's rank order where the axes are named as it
        names them, else the data axis outermost and the others packed inside the nodes), with the data axis
        named like data parallelism, else the first.  The answer's gain is measured against it: what following
        p2sim saves over not running it at all."""
        job = self.request.job
        names = job.axis_names
        data = default_data_axis(names)
        axis = names.index(data) if data in names else 0
        return default_placement(enumerate_matrices(job.hierarchy, job.axes), job.hierarchy, job.axes, names, axis)

    @property
    def default_allreduce(self) -> MatrixSummary | None:
        """The default placement's fastest plain AllReduce; None where the search left that placement out
        (``matrix``, ``top_matrices``)."""
        found = [s for s in self.ranking.matrices if s.matrix == self.default.matrix]
        return min(found, key=lambda s: s.allreduce.seconds) if found else None

    @property
    def gain_over_default(self) -> float | None:
        """How many times faster the best program is than the default placement's plain AllReduce (None: that
        placement was not searched)."""
        default = self.default_allreduce
        return None if default is None else default.allreduce.seconds / self.best.seconds

    def default_json(self) -> dict[str, Any]:
        """The JSON's ``default_placement``: the matrix, in words, why it is the default, its plain AllReduce
        (null where it was not searched) and the best program's gain over it."""
        default, allreduce = self.default, self.default_allreduce
        return {"matrix": [list(r) for r in default.matrix], "placement": self.placement(default.matrix),
                "basis": default.basis, "searched": allreduce is not None,
                "allreduce_seconds": None if allreduce is None else allreduce.allreduce.seconds,
                "allreduce_algo": None if allreduce is None else allreduce.algo,
                "is_best": default.matrix == self.best.matrix, "gain": self.gain_over_default}

    def placement(self, matrix: Matrix) -> str:
        job = self.request.job
        return describe_placement(matrix, job.axis_names, job.topology.level_names, job.spec.node_level)

    def table(self) -> list[dict[str, Any]]:
        return [dict(rank=i, **e.to_json()) for i, e in enumerate(self.ranking.top(self.request.top), 1)]

    def summary(self) -> str:
        job, best = self.request.job, self.best
        return (f"rank on {job.spec.name} ({job.topology.node_count} nodes, axes {job.axes_text}): best "
                f"{format_matrix(best.matrix)} {best.timing.text} ({best.algo}) in {format_seconds(best.seconds)}, "
                f"{best.speedup:.2f}x its AllReduce")

    def to_json(self) -> dict[str, Any]:
        req, job = self.request, self.request.job
        topo = job.topology
        doc = {"system": topo.spec.name, "nodes": topo.node_count, "axes": list(job.axes),
               "axis_names": list(job.axis_names), "level_names": list(topo.level_names),
               "reduce_axes": sorted(set(self.reduce_axes)), "scope": self.scope, "order": req.settings.order.value,
               "algo": req.settings.algo, "proto": req.settings.proto, "model": req.settings.engine,
               "bytes_per_gpu": req.demand.bytes_per_gpu,
               "config": ModelConfig.of(topo.spec).to_json(topo.spec),
               "best_bounds": [b.to_json() for b in self.best_bindings],
               "best_placement": {"matrix": [list(r) for r in self.best.matrix],
                                  "placement": self.placement(self.best.matrix)},
               "default_placement": self.default_json(),
               "simulations": len(self.ranking.entries),
               "top": self.table(),
               "matrices": [s.to_json() for s in self.ranking.matrices],
               "search": self.stats.to_json(), "warnings": list(self.warnings)}
        if self.comparison is not None:
            doc["order_comparison"] = [c.to_json() for c in self.comparison]
        return doc


def run_rank(req: RankRequest) -> RankResult:
    """The ranking of every (matrix, program) of the request's one reduction."""
    job, topo = req.job, req.job.topology
    h, p = job.hierarchy, job.axes
    if req.matrices is None:
        req.limits.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {topo.spec.name}")
        mats = enumerate_matrices(h, p)
    else:
        mats = list(req.matrices)
    Placement.of(h, p, mats[0])  # a given matrix is checked before any work
    red = reduces_something(p, req.demand.reduce_axes)
    whole_groups(topo)
    settings = req.settings.each(topo)
    rules = req.settings.rules
    smaller = "--matrix M (one matrix), fewer --nodes or a smaller --max-size"
    where = f"rank on {topo.spec.name} with {topo.node_count} nodes ({plural(len(mats), 'matrix')})"
    ecmp = hashed(topo.spec)  # hashed routes: no two groups alike, each bounded on its own (jobsize)
    check_job(req.limits, mats, red, topo.devices, 1, len(mats) * len(settings), req.run.processes(len(mats)), where,
              smaller, int(ecmp))
    counts = dict(zip(mats, program_counts(mats, red, rules.profile, rules.max_size, req.limits)))
    tasks: list[ConfigTask] = []
    for s in settings:
        base = ConfigTask(spec=topo.spec, nodes=topo.nodes, axes=p, reduce_axes=tuple(red),
                         bytes_per_gpu=req.demand.bytes_per_gpu, settings=s)
        tasks += split_by_matrix(base, mats)
    others: list[ConfigTask] = []
    if req.compare_orders:
        # the other order is simulated only where it changes the groups
        same = {m: orders_agree(Placement.of(h, p, m), red) for m in mats}
        other = Order.P2 if req.settings.order is Order.ALIGNED else Order.ALIGNED
        others = [replace(t, settings=replace(t.settings, order=other)) for t in tasks if not same[t.matrices[0]]]
    total = sum(counts[t.matrices[0]] for t in tasks + others)
    what = (f"{plural(len(mats), 'matrix')}, {plural(sum(counts.values()), 'program')}, "
            f"{plural(len(settings), 'algorithm')}" + (f", {plural(len(others), 'task')} in the other order"
                                                     if others else ""))
    size = job_size_text(req.limits, req.search, req.settings.engine, total, what)
    # what the bounds will build: every matrix with each algorithm, and the other order's matrices (each task
    # bounds one matrix with one algorithm); the buffer fractions this counts are those the bounds compute, kept
    # where this process's bounds find them
    memo = context_of(topo.spec, topo.nodes).row_counts
    steps = bounded_steps(topo, mats, red, [s.order for s in settings], rules.profile, rules.max_size, memo)
    if others:  # in the other order (one for all), with each algorithm, where it changes the groups
        steps += bounded_steps(topo, list(dict.fromkeys(t.matrices[0] for t in others)), red,
                               [others[0].settings.order] * len(settings), rules.profile, rules.max_size, memo)
    cost = replace(estimate(topo.devices, 1, 0, req.run.processes(len(tasks + others)),
                            [synthesis_cardinalities(m, red) for m in mats]), steps=steps)
    req.limits.check_cost(cost, where, smaller)
    warning = req.demand.warn_memory(topo)
    rest_results: list = []
    with req.run.executor(len(tasks + others)) as ex:
        announce(f"{what}: {size} in {plural(len(tasks + others), 'task')} {req.run.where(len(tasks + others))}, "
                 f"{cost.brief()}")
        results, stats = run_search(tasks, ex, req.top, **req.search.kwargs())
        if others:  # the other order: each matrix's best (no top k of its own)
            kept = {r.task.matrices[0] for r in results}
            others = [t for t in others if t.matrices[0] in kept]
            rest_results = run_search(others, ex, 0, exhaustive=req.search.exhaustive)[0] if others else []
    ranking = rank_results(results)
    comparison = None
    if req.compare_orders:
        rest = rank_results(rest_results)
        same = {m: v for m, v in same.items() if m in {s.matrix for s in ranking.matrices}}
        pair = (ranking, rest) if req.settings.order is Order.ALIGNED else (rest, ranking)
        comparison = compare_orders(*pair, same)
    return RankResult(req, tuple(red), ranking, stats, comparison, () if warning is None else (warning,))
