"""The what-if study: the best matrix and program at every point of varied systems.

Each point (:mod:`.variations`) is searched on its own, exactly (the bounded search's
answer equals simulating everything); a point reports its winner and whether the winner
changed from the previous point of its series (the first varied parameter, the others
fixed).  A request may fix the placement (``matrix``) and the program (``program``, on one
matrix): every point then simulates that program, so the points differ only by the system
-- "this placement, this program: what does the change buy?".

Examples
--------
>>> req = WhatifRequest.build(system="h100", vary=["nic.bandwidth=12.5,50"], workers=1)
>>> [(r["label"], r["program"]) for r in run_whatif(req).rows]
[('nic.bandwidth=12.5', 'AllReduce(slice=0, Inside)'), ('nic.bandwidth=50', 'AllReduce(slice=0, Inside)')]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from collections.abc import Iterator
from typing import Any

from ..collectives.binding import Binding
from ..collectives.caches import structure_key
from ..collectives.choice import serves
from ..formalism.placement import Matrix, Placement, check_sizes, count_matrices, enumerate_matrices, format_matrix, parse_matrix
from ..formalism.program import parse_program
from ..formalism.synthesis import placement_lowerings, validate_program
from ..topology import find_spec
from ..topology.spec import SystemSpec
from ..util.algorithms import algorithm, forced
from ..util.errors import InputError
from ..util.log import announce
from ..util.table import Tabular
from ..util.parsing import as_text, byte_size
from .bindings import not_bound_by, program_bindings
from .contexts import context_of
from .jobsize import (JobCost, Limits, StepCount, check_job, estimate, hashed, plural, program_counts, program_steps,
                      synthesis_cardinalities)
from .step_counts import bounded_steps
from .ranking import RankEntry, Ranking, rank_results, split_by_matrix
from .demand import DEFAULT_REDUCE, Demand, no_model_options
from .requests import (DEFAULT_SETTINGS, DEFAULT_SYSTEM, EVERY_PROGRAM, RunOptions, SearchOptions, Settings, axis_names_of,
                       job_size_text, limits_of, optional_int, reduces_something, whole_groups)
from .plan import PlanRequest
from .search import SearchStats, run_searches
from .step_plan import run_step_plan
from .whatif_step import at_point, check_step_options, point_request, points_cost, step_row
from ..workload import load_model
from ..workload.train_text import StepSettings, split_step_settings, training_of
from .config_task import ALLREDUCE_TEXT, ConfigTask
from .variations import Point, Variation, parse_vary, points, resolve_axes, winner_key

__all__ = ["WhatifRequest", "WhatifResult", "run_whatif"]


@dataclass(frozen=True)
class WhatifRequest:
    """A what-if: the varied points, what each makes fast (``demands``, built here once per point) and how it
    is searched (``matrix`` and ``program`` fixed, or every one; with ``--model`` each point's ``plans``)."""

    spec: SystemSpec
    nodes: int
    axes: str | None  # as given: a '*' resolves per point
    variations: tuple[Variation, ...]
    vary_texts: tuple[str, ...]  # as given, for headers
    points: tuple[Point, ...]
    # what each point makes fast: the one reduction of --reduce and --bytes there (P2's default buffer grows with
    # the node count), or with --model the model's step on that point's axes (its plan's)
    demands: tuple[Demand, ...]
    sizes: tuple[tuple[int, ...], ...]  # each point's axis sizes (a '*' resolved there)
    axis_names: tuple[str, ...]
    settings: Settings
    limits: Limits
    run: RunOptions
    exhaustive: bool = False
    matrix: Matrix | None = None  # None: every matrix
    program: str = EVERY_PROGRAM  # a program's text (on one matrix), or every synthesized one
    plans: tuple[PlanRequest, ...] = ()  # --model: plan's request at each point

    @classmethod
    def build(cls, system: Any = DEFAULT_SYSTEM, nodes: Any = None, axes: Any = None, reduce: Any = DEFAULT_REDUCE, vary: Any = (),
              bytes: Any = None, algo: str = DEFAULT_SETTINGS.algo, proto: str = DEFAULT_SETTINGS.proto, engine: str = DEFAULT_SETTINGS.engine,  # noqa: A002
              profile: Any = DEFAULT_SETTINGS.rules.profile.value, max_size: Any = DEFAULT_SETTINGS.rules.max_size, order: Any = DEFAULT_SETTINGS.order.value,
              exhaustive: bool = False, workers: Any = None, scheduler: str | None = None, scheduler_file: Any = None,
              max_matrices: Any = None, max_simulations: Any = None, yes: bool = False, matrix: Any = None,
              program: Any = EVERY_PROGRAM, model: Any = None, train: Any = None,
              compute_per_layer: Any = None) -> WhatifRequest:
        """``vary``: texts like ``"nic.bandwidth=25,50"`` and ``"nodes=2,4"`` (or one such text); ``matrix``
        and ``program`` fix the placement and its program (as ``simulate`` takes them).  ``model`` (with
        ``train``, ``compute_per_layer``): the model's whole step at each point, as ``plan --model`` answers
        it; ``reduce``, ``bytes``, ``matrix`` and ``program`` are the step's to decide, refused beside it."""
        if model is None:
            no_model_options(train, compute_per_layer)
        else:
            check_step_options(reduce=reduce, bytes=bytes, matrix=matrix, program=program)
            # what no point decides is refused as itself, before the points (whose errors name their point)
            spec_model = load_model(model)
            rest, extra = split_step_settings(train)  # zero=fsdp is the training's; the step's own split off
            if extra != StepSettings():
                # they time a step's compute (p2sim step, plan --model --axes); a point weighs its communication,
                # which they do not change: taken, they would change nothing in the answer
                raise InputError("train: recompute, dtype=fp8, tp_overlap and dispatcher change a step's compute, "
                                 "not its communication, which whatif --model weighs at each point; leave them out "
                                 "(p2sim step and plan --model --axes time them)")
            training_of(rest)
        spec = system if isinstance(system, SystemSpec) else find_spec(system)
        n = optional_int(nodes, "nodes")
        n = spec.default_nodes if n is None else n
        vary = [vary] if isinstance(vary, str) else list(vary)
        if not vary:
            raise InputError("vary: give at least one --vary CLASS.bandwidth=V,.. or nodes=N,..")
        variations = tuple(parse_vary(v, spec) for v in vary)
        pts = tuple(points(spec, n, variations))
        settings = Settings.of(algo, proto, engine, profile, max_size, order)
        limits = limits_of(yes, max_matrices, max_simulations)
        mat = None if matrix is None else (parse_matrix(matrix) if isinstance(matrix, str)
                                           else tuple(tuple(r) for r in matrix))
        text = as_text(program, "program")
        text = EVERY_PROGRAM if text is None else text  # an empty --program is parsed (and refused), not taken as all
        if text != EVERY_PROGRAM:
            parse_program(text)  # its syntax before any point is built
        run = RunOptions.of(workers, scheduler, scheduler_file)
        given_axes = as_text(axes, "axes")
        common = dict(spec=spec, nodes=n, axes=given_axes, variations=variations, vary_texts=tuple(vary), points=pts,
                      settings=settings, limits=limits, run=run, exhaustive=bool(exhaustive), matrix=mat, program=text)
        if model is not None:
            # every point's plan (the model's step on the axes there) checked before any is run
            plans = tuple(point_request(pt, given_axes, (model, train, compute_per_layer), settings,
                                        SearchOptions(bool(exhaustive)), limits, run) for pt in pts)
            return cls(demands=tuple(r.demand for r in plans), sizes=tuple(r.job.axes for r in plans),
                       axis_names=plans[-1].job.axis_names, plans=plans, **common)
        if bytes is not None:
            byte_size(as_text(bytes, "bytes"))  # refused as itself, before the points (whose errors name their point)
        sizes, demands = _point_demands(pts, given_axes, reduce, bytes, settings, mat)
        return cls(demands=demands, sizes=sizes, axis_names=axis_names_of(given_axes, len(sizes[0])), **common)


@dataclass(frozen=True, repr=False)
class WhatifResult(Tabular):
    """One row per point: its buffer, the best matrix, algorithm and program, and whether the winner changed.

    ``table()``: the points, as the JSON's ``points``.
    """

    request: WhatifRequest
    axis_names: tuple[str, ...]
    reduce_axes: tuple[int, ...]
    level_names: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    stats: tuple[SearchStats, ...]
    warnings: tuple[str, ...] = ()

    @property
    def placements(self) -> list[tuple[int, list[list[int]], list[str]]]:
        """Each distinct best matrix per node count (matrices of different node counts never compare),
        in order of first appearance, with the points it wins: (nodes, matrix, labels)."""
        out: dict[tuple[int, str], tuple[int, list[list[int]], list[str]]] = {}
        for r in self.rows:
            out.setdefault((r["nodes"], str(r["matrix"])), (r["nodes"], r["matrix"], []))[2].append(r["label"])
        return list(out.values())

    @property
    def placement_changes(self) -> bool:
        """Whether the best placement differs between points of one node count."""
        nodes = [n for n, _, _ in self.placements]
        return len(nodes) != len(set(nodes))

    def table(self) -> list[dict[str, Any]]:
        return list(self.rows)

    def summary(self) -> str:
        targets = ", ".join(v.target for v in self.request.variations)
        change = "the best placement changes" if self.placement_changes else "one best placement per node count"
        return f"whatif on {self.request.spec.name}, varying {targets}: {len(self.rows)} points, {change}"

    def to_json(self) -> dict[str, Any]:
        req = self.request
        return {"system": req.spec.name,
                "vary": [{"target": v.target, "values": list(v.values)} for v in req.variations],
                "axis_names": list(self.axis_names), "level_names": list(self.level_names),
                "order": req.settings.order.value, "algo": req.settings.algo, "model": req.settings.engine,
                "points": self.table(),
                "best_placements": [{"nodes": n, "matrix": m, "points": p} for n, m, p in self.placements],
                "placement_changes": self.placement_changes}


def _check_program(req: WhatifRequest, hierarchy: Any, axes: tuple[int, ...], red: tuple[int, ...],
                   mats: list[Matrix]) -> int:
    """A given program, as ``simulate`` checks it: on one matrix, valid there, run by the forced algorithm.
    Returns its step count."""
    if len(mats) > 1:
        options = "; ".join(f'"{format_matrix(m)}"' for m in mats)
        raise InputError(f"matrix: axes {','.join(map(str, axes))} have {len(mats)} matrices; "
                         f"a --program needs one: name it with --matrix ({options})")
    lowering = placement_lowerings(hierarchy, axes, red, (mats[0],), req.settings.order)[0]
    prog = parse_program(req.program)
    validate_program(lowering.synthesis, prog)
    ops = [ins.op.value for ins in prog.instructions]
    algo = req.settings.algo
    if algo not in ("auto", "both") and not any(serves(algo, op) for op in ops):
        raise InputError(f"algo: {algo} runs none of the program's collectives ({', '.join(dict.fromkeys(ops))}): "
                         f"it runs {', '.join(algorithm(forced(algo)[0]).collectives)} (NCCL's tuning.cc)")
    return len(prog.instructions)


def _winner(ranking: Ranking, program: str | None) -> RankEntry:
    """A point's answer: its fastest entry, or the given program's fastest (by algorithm)."""
    return next(e for e in ranking.entries if program is None or e.timing.text == program)


def _run_step(req: WhatifRequest) -> WhatifResult:
    """whatif --model: plan --model's step machinery at each point."""
    contexts = [preq.job.context for preq in req.plans]
    # the whole what-if's cost (every point's whole step) said and checked before any point runs (issue 43)
    cost = points_cost(req.plans)
    req.limits.check_cost(cost, f"whatif --model of {plural(len(req.points), 'point')}",
                          "fewer --vary values, fewer --nodes or a smaller --max-size")
    announce(f"whatif --model: {plural(len(req.points), 'point')}, {cost.brief()}")
    results: list[Any] = [None] * len(req.points)
    for _, k in _in_run_order(contexts):
        announce(f"whatif --model at {req.points[k].label}")
        results[k] = run_step_plan(req.plans[k], cost.costs[k])
    rows = [step_row(pt, result) for pt, result in zip(req.points, results)]
    keys = [(pt.nodes, result.best.matrix) for pt, result in zip(req.points, results)]
    for row, changed in zip(rows, _mark_changes(req, keys)):
        row["winner_changed"] = changed
    return WhatifResult(req, req.axis_names, (), req.plans[-1].job.topology.level_names, tuple(rows),
                        tuple(r.stats for r in results))


def _in_run_order(contexts: list[Any]) -> Iterator[tuple[int, int]]:
    """Each point's index in :func:`_run_order` (with its place there): once the caller has run the point, the
    next point takes its structures where they are the same (it varies only NIC or uplink rates), and the
    point's caches are cleared (one point's caches at a time)."""
    order = _run_order(contexts)
    for i, k in enumerate(order):
        yield i, k
        following = contexts[order[i + 1]] if i + 1 < len(order) else None
        if following is not None and following is not contexts[k]:
            following.adopt(contexts[k])
        contexts[k].clear()


def _shared_groups(contexts: list[Any]) -> list[list[int]]:
    """The points in groups of one :func:`~p2sim.collectives.caches.structure_key` (:func:`_run_order`'s), each
    point's context building into the group's first's structures (:meth:`~p2sim.collectives.caches.CollectiveCaches.share`):
    a group's points are searched together.  A point's answer does not depend on which points it runs with."""
    order = _run_order(contexts)
    groups: list[list[int]] = []
    for k in order:
        first = next((g for g in groups if contexts[g[0]] is contexts[k] or contexts[k].share(contexts[g[0]])), None)
        if first is None:
            groups.append([k])
        else:
            first.append(k)
    return groups


def _run_order(contexts: list[Any]) -> list[int]:
    """The order the points run in: those whose topologies build the same structures (an equal
    :func:`~p2sim.collectives.caches.structure_key`: they differ only in NIC or uplink rates) one after another,
    each taking the one before's (:meth:`~p2sim.collectives.caches.CollectiveCaches.adopt`); the groups in order
    of their first point, and each in the points' order.  A point's answer does not depend on when it runs."""
    groups: list[tuple[tuple, list[int]]] = []
    for k, ctx in enumerate(contexts):
        key = structure_key(ctx.topo)
        same = next((ks for g, ks in groups if g == key), None)
        if same is None:
            groups.append((key, [k]))
        else:
            same.append(k)
    return [k for _, ks in groups for k in ks]


def _point_demands(pts: tuple[Point, ...], axes: str | None, reduce: Any, nbytes: Any, settings: Settings,
                   matrix: Matrix | None) -> tuple[tuple[tuple[int, ...], ...], tuple[Demand, ...]]:
    """Each point's axis sizes (a '*' resolved there) and its one reduction (:meth:`Demand.of_reduce`; ``nbytes``
    None: P2's buffer there), every point checked that it can be answered at all before any is counted (counting
    takes seconds)."""
    topos = []
    for pt in pts:
        with at_point(pt):
            topo = context_of(pt.spec, pt.nodes).topo
            settings.each(topo)  # each point's system and node count can run them
            whole_groups(topo)
            topos.append(topo)
    sizes, demands, checked = [], [], set()
    for pt, topo in zip(pts, topos):
        with at_point(pt):
            p = resolve_axes(axes, topo.devices)
            demand = Demand.of_reduce(reduce, nbytes, axis_names_of(axes, len(p)), topo)
            reduces_something(p, demand.reduce_axes)
            if pt.nodes not in checked:  # once per node count, as its points are counted together (run_whatif)
                checked.add(pt.nodes)
                check_sizes(topo.hierarchy, p)  # the axes fill this point's devices
                if matrix is not None:
                    Placement.of(topo.hierarchy, p, matrix)  # it fits this point's levels and axes
        sizes.append(p)
        demands.append(demand)
    return tuple(sizes), tuple(demands)


@dataclass(frozen=True)
class _Tasks:
    """The plain what-if's job: every point's tasks (``owners``: each task's point) and what they cost."""

    tasks: list[ConfigTask]
    owners: list[int]
    simulations: int
    cost: JobCost
    reduce_axes: tuple[int, ...]  # the points' (alike: the indices as given, validated at each)


def _count(req: WhatifRequest, contexts: list[Any], given: tuple[str, ...] | None) -> _Tasks:
    """Every point's matrices, programs and tasks, each node count's checked against the limits once."""
    settings = req.settings.each()
    rules = req.settings.rules
    tasks, owners, simulations = [], [], 0
    counted: dict[int, tuple[list, list[int], list[int]]] = {}  # per node count: matrices, programs and steps
    gpu_steps, hashed_steps, gpus, cards = 0, 0, 0, []  # hashed: on ECMP fabrics (jobsize.ECMP_STEP_FACTOR)
    # a bounded search (every program): its cost counted as rank counts it (step_counts.bounded_steps)
    bounded = StepCount() if given is None and SearchOptions(req.exhaustive).bounded(req.settings.engine) else None
    shapes: dict[tuple, StepCount] = {}
    for k, (pt, ctx, p, demand) in enumerate(zip(req.points, contexts, req.sizes, req.demands)):
        topo, red = ctx.topo, reduces_something(p, demand.reduce_axes)  # sorted, as the tasks take them (as rank)
        if pt.nodes not in counted:
            if req.matrix is None:
                req.limits.check_matrices(count_matrices(topo.hierarchy, p),
                                          f"axes {','.join(map(str, p))} on {req.spec.name} with {pt.nodes} nodes")
                mats = enumerate_matrices(topo.hierarchy, p)
            else:
                mats = [req.matrix]
            builds = sum(1 for q in req.points if q.nodes == pt.nodes)  # each point builds its own structures
            ecmp_builds = sum(1 for q in req.points if q.nodes == pt.nodes and hashed(q.spec))
            check_job(req.limits, mats, red, topo.devices, builds, len(mats) * len(settings),
                      req.run.processes(len(mats) * builds * len(settings)), _where(req, pt.nodes), SMALLER, ecmp_builds)
            if given is None:
                counted[pt.nodes] = (mats, program_counts(mats, red, rules.profile, rules.max_size, req.limits),
                                     program_steps(mats, red, rules.profile, rules.max_size, req.limits))
            else:
                # the given program, and the plain AllReduce beside it (given): each a simulation, each its steps
                with at_point(pt):
                    steps_given = _check_program(req, topo.hierarchy, p, red, mats)
                counted[pt.nodes] = (mats, [len(given)], [steps_given + (len(given) - 1)])
            cards += [synthesis_cardinalities(m, red) for m in mats]
        mats, counts, steps = counted[pt.nodes]
        if bounded is not None:
            # what its bounds build: alike for points of one node count and fabric shape (rates do not change
            # which groups are one group moved), counted once for them
            shape = (pt.nodes, topo.gpus_per_node, hashed(pt.spec),
                     None if topo.fabric is None else tuple(topo.fabric.sizes))
            if shape not in shapes:
                shapes[shape] = bounded_steps(topo, mats, red, [s.order for s in settings], rules.profile,
                                              rules.max_size, ctx.row_counts)
            bounded += shapes[shape]
        gpu_steps += topo.devices * sum(steps) * len(settings)
        hashed_steps += topo.devices * sum(steps) * len(settings) if hashed(pt.spec) else 0
        gpus = max(gpus, topo.devices)
        simulations += sum(counts) * len(settings)
        for s in settings:
            base = ConfigTask(spec=pt.spec, nodes=pt.nodes, axes=p, reduce_axes=tuple(red),
                              bytes_per_gpu=demand.bytes_per_gpu, settings=s, programs=given)
            split = split_by_matrix(base, mats)
            tasks += split
            owners += [k] * len(split)
    cost = estimate(gpus, len(req.points), gpu_steps, req.run.processes(len(tasks)), cards, hashed_steps)
    return _Tasks(tasks, owners, simulations, cost if bounded is None else replace(cost, steps=bounded), red)


SMALLER = "fewer --vary values, fewer --nodes or a smaller --max-size"  # what a too large what-if can do


def _where(req: WhatifRequest, nodes: int) -> str:
    return f"whatif on {req.spec.name} over {plural(len(req.points), 'point')} ({plural(nodes, 'node')} at the largest)"


def _row(pt: Point, ranking: Ranking, best: RankEntry, stats: SearchStats, bounds: tuple[Binding, ...],
         demand: Demand, req: WhatifRequest) -> dict[str, Any]:
    """A point's row (``winner_changed`` is marked by :func:`_mark_changes`)."""
    notes = [n for n in (not_bound_by(v.target, bounds) for v in req.variations) if n]
    return {"point": dict(pt.settings), "label": pt.label, "nodes": pt.nodes, "bytes_per_gpu": demand.bytes_per_gpu,
            "matrix": [list(r) for r in best.matrix],
            "algo": best.algo, "program": best.timing.text, "seconds": best.seconds,
            "speedup_over_allreduce": best.speedup, "winner_changed": False,
            "bounds": [b.text for b in bounds], "not_bound": notes,
            "best_per_matrix": [s.to_json() for s in ranking.matrices], "search": stats.to_json()}


def _mark_changes(req: WhatifRequest, keys: list[tuple]) -> list[bool]:
    """Whether each point's winner (its key) differs from the previous point of its series: the first parameter
    varied with the others fixed, as in the plot."""
    winners: dict[tuple, tuple] = {}
    first = req.variations[0].target
    changed = []
    for pt, key in zip(req.points, keys):
        series = tuple((t, v) for t, v in pt.settings if t != first)
        previous = winners.get(series)
        winners[series] = key
        changed.append(previous is not None and key != previous)
    return changed


def run_whatif(req: WhatifRequest) -> WhatifResult:
    if req.plans:
        return _run_step(req)
    # each point's context held here: the point's tasks find it again in this process
    contexts = [context_of(pt.spec, pt.nodes) for pt in req.points]
    # a given program, and the plain AllReduce that its speedup is over
    text = None if req.program == EVERY_PROGRAM else parse_program(req.program).text
    job = _count(req, contexts, None if text is None else tuple(dict.fromkeys((text, ALLREDUCE_TEXT))))
    what = f"{plural(len(req.points), 'point')}, {plural(len(req.settings.each()), 'algorithm')}"
    size = job_size_text(req.limits, SearchOptions(req.exhaustive), req.settings.engine, job.simulations, what)
    req.limits.check_cost(job.cost, _where(req, max(pt.nodes for pt in req.points)), SMALLER)
    largest = max(range(len(req.points)), key=lambda k: (req.demands[k].largest, -k))  # the first of the largest
    warning = req.demands[largest].warn_memory(contexts[largest].topo)
    tasks = job.tasks
    rows: list[Any] = [None] * len(req.points)
    stats: list[Any] = [None] * len(req.points)
    bests: list[Any] = [None] * len(req.points)
    with req.run.executor(len(tasks)) as ex:
        announce(f"{what}: {size} in {plural(len(tasks), 'task')} {req.run.where(len(tasks))}, {job.cost.brief()}")
        for group in _shared_groups(contexts):  # each point's winner and matrices' bests: exact, with or without bounds
            mine = [[t for t, o in zip(tasks, job.owners) if o == k] for k in group]
            # a given program is the one simulation of its point: nothing to bound; otherwise the points of one
            # structure key are bounded together, a matrix's tasks one after another (they share its structures)
            outs = run_searches(mine, ex, 1, exhaustive=req.exhaustive or text is not None, label="what-if")
            for k, (results, stats[k]) in zip(group, outs):
                ranking = rank_results(results)
                bests[k] = _winner(ranking, text)
                rows[k] = _row(req.points[k], ranking, bests[k], stats[k], program_bindings(contexts[k], bests[k]),
                               req.demands[k], req)
            for k in group:  # one group's caches at a time
                contexts[k].clear()
    for row, changed in zip(rows, _mark_changes(req, [winner_key(b.matrix, b.algo, b.timing.text) for b in bests])):
        row["winner_changed"] = changed
    return WhatifResult(req, req.axis_names, job.reduce_axes, contexts[largest].topo.level_names,
                        tuple(rows), tuple(stats), () if warning is None else (warning,))
