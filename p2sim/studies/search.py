"""Search with lower bounds: simulate only the programs that can still win, and stay exact.

``rank`` wants the k fastest (matrix, program, algorithm) and, per (matrix, algorithm),
the AllReduce's time and the best program's; ``plan`` and ``whatif`` the latter.  Every
program gets a lower bound of its event-driven time first
(:meth:`~p2sim.sim.Simulator.lower_bound`: per step, each group alone at its uncontended
rate after its start-up latency, and every link's bytes at its capacity -- microseconds
where a simulation takes milliseconds).  :func:`search` then simulates each matrix's
AllReduce and the other programs in increasing order of bound, and skips a program whose
bound, less :data:`~p2sim.sim.simulator.BOUND_SLACK`, exceeds both the k-th best time
simulated so far and its matrix's best: its simulated time could enter neither.  Both
thresholds only fall, so a skipped program stays skipped, and the top k and every
matrix's best and AllReduce are those of simulating everything (ties included: a skipped
program is strictly slower).

Bounds built for a search (:func:`bound_all` with ``top``) come after every matrix's
AllReduce is simulated: the first thresholds are then known (the k-th best of those times,
and each matrix's own), and they only fall, so a program whose bound passes both is skipped
whatever the rest of its steps add.  :meth:`~p2sim.sim.Simulator.lower_bound` sums a
program's steps bounded before first and stops once the sum passes its cut
(:class:`BoundJob`): most programs that cannot win never build their other steps (on a
2,048-node SuperPOD ranking, 1,303 distinct steps bounded instead of 3,959).  The programs
simulated, the results and the statistics are those of whole bounds; only bounds past the
cut may be partial sums.

Options that give up exactness for time, stated in the result: ``budget`` (seconds; the
search stops after the round that passes it) and ``keep`` (search only these matrices).

Examples
--------
>>> from p2sim.studies.executor import SerialExecutor
>>> from p2sim.topology import load_system
>>> topo = load_system("a100", 2)
>>> from p2sim.studies.requests import Settings
>>> task = ConfigTask(spec=topo.spec, nodes=2, axes=(4, 8), reduce_axes=(0,), bytes_per_gpu=2.0**32,
...                  settings=Settings(algo="ring"))
>>> results, stats = search(bound_all([task], SerialExecutor()), SerialExecutor(), top=3)
>>> stats.programs, stats.simulated, stats.exact
(50, 50, True)

Here every program can still beat its matrix's AllReduce, so all are simulated; on the
512-GPU system of ``benchmarks/rank_scale.py`` 1981 of 113,382 are.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..formalism.placement import Matrix
from ..sim.simulator import BOUND_SLACK, Simulator
from .executor import Executor, run_all
from .config_task import ALLREDUCE_TEXT, ConfigResult, ProgramTiming, ConfigTask, run_task, task_context

__all__ = ["Bounds", "BoundJob", "SearchStats", "allreduce_task", "bound_task", "bound_all", "kth_best", "search",
           "run_search", "run_searches", "matrix_bounds"]


@dataclass(frozen=True)
class Bounds:
    """One task's programs with their lower bounds, and each matrix's simulated AllReduce."""

    task: ConfigTask
    # (matrix, program text, lower bound), synthesis order; bounded for a search (BoundJob), a program that
    # cannot win may have the bound of some of its steps only
    programs: tuple[tuple[Matrix, str, float], ...]
    allreduce: tuple[ProgramTiming, ...]  # one per matrix (its bound above is its simulated time)


@dataclass(frozen=True)
class SearchStats:
    """What a search simulated and what it skipped."""

    programs: int  # (matrix, algorithm, program) considered
    simulated: int
    matrices: int  # (matrix, algorithm) pairs
    searched: int  # of them, those whose programs were searched (all unless ``keep``)
    exact: bool  # the result equals simulating every program of the searched matrices
    stopped_by_budget: bool
    budget_seconds: float | None
    next_bound: float | None  # the least bound left unsimulated that could still have won (when not exact)

    @property
    def bounded_out(self) -> int:
        return self.programs - self.simulated

    def to_json(self) -> dict[str, Any]:
        return {"programs": self.programs, "simulated": self.simulated, "bounded_out": self.bounded_out,
                "matrices": self.matrices, "searched_matrices": self.searched, "exact": self.exact,
                "stopped_by_budget": self.stopped_by_budget, "budget_seconds": self.budget_seconds,
                "next_bound_seconds": self.next_bound}


@dataclass(frozen=True)
class BoundJob:
    """A task to bound for a search that knows every matrix's AllReduce already: its programs' bounds are
    needed only up to the time the search skips them at (:meth:`cut`)."""

    task: ConfigTask
    allreduce: tuple[ProgramTiming, ...]  # the task's matrices' AllReduces, simulated (allreduce_task)
    kth: float  # the search's k-th best time among all tasks' AllReduces (kth_best)

    def cut(self, matrix: Matrix) -> float:
        """The search skips a program of ``matrix`` whose bound less BOUND_SLACK passes both the k-th best
        time and its matrix's best so far; at first those are ``kth`` and the matrix's AllReduce, and they
        only fall."""
        return max(self.kth, next(ar.seconds for ar in self.allreduce if ar.matrix == matrix))


def kth_best(times: Sequence[float], top: int) -> float:
    """The k-th least of ``times`` (sorted ascending), or what a search compares with when there are fewer:
    infinity (every program may still enter the top k), and minus infinity for ``top`` 0 (none does)."""
    return times[top - 1] if 0 < top <= len(times) else (math.inf if top > 0 else -math.inf)


def allreduce_task(task: ConfigTask) -> tuple[ProgramTiming, ...]:
    """Every matrix's AllReduce simulated (the task's programs must include it, as synthesis gives them)."""
    ctx = task_context(task)
    syn = task.synthesis(ctx.topo)
    sim = Simulator(ctx.topo, task.settings.sim, context=ctx)
    out = []
    for mp in syn.matrices:
        prog = next(p for p in mp.programs if p.text == ALLREDUCE_TEXT)
        r = sim.simulate(mp.lowering, prog, task.bytes_per_gpu)
        out.append(ProgramTiming(mp.matrix, r.text, r.total_seconds, r.steps))
    return tuple(out)


def bound_task(task: ConfigTask | BoundJob) -> Bounds:
    """Every program's lower bound, and every matrix's AllReduce simulated.

    Given a :class:`BoundJob`, its AllReduces are taken as simulated, and a program's bound stops
    once it passes the job's :meth:`~BoundJob.cut` (:meth:`~p2sim.sim.Simulator.lower_bound`): such
    a program is skipped by :func:`search` whatever its full bound, and the least bound of each
    matrix (its AllReduce's time or below) is unchanged.
    """
    job = task if isinstance(task, BoundJob) else None
    task = task.task if isinstance(task, BoundJob) else task
    ctx = task_context(task)
    topo = ctx.topo
    syn = task.synthesis(topo)
    sim = Simulator(topo, task.settings.sim, context=ctx)
    given = {} if job is None else {ar.matrix: ar for ar in job.allreduce}
    progs, ars = [], []
    for mp in syn.matrices:
        cut = math.inf if job is None else job.cut(mp.matrix)
        others = [p for p in mp.programs if p.text != ALLREDUCE_TEXT]
        bounds = dict(zip(others, sim.lower_bounds(mp.lowering, others, task.bytes_per_gpu, cut)))
        for prog in mp.programs:
            if prog.text == ALLREDUCE_TEXT:
                ar = given.get(mp.matrix)
                if ar is None:
                    r = sim.simulate(mp.lowering, prog, task.bytes_per_gpu)
                    ar = ProgramTiming(mp.matrix, r.text, r.total_seconds, r.steps)
                ars.append(ar)
                progs.append((mp.matrix, prog.text, ar.seconds))
            else:
                progs.append((mp.matrix, prog.text, bounds[prog]))
    return Bounds(task, tuple(progs), tuple(ars))


def bound_all(tasks: Sequence[ConfigTask], executor: Executor, label: str = "bounding", top: int | None = None
              ) -> list[Bounds]:
    """Every task bounded (:func:`bound_task`).  With ``top`` (for a :func:`search` of the ``top`` best),
    every matrix's AllReduce is simulated first, and then each program bounded only as far as the search
    needs (:class:`BoundJob`)."""
    if top is None:
        return run_all(executor, bound_task, list(tasks), label)
    ars = run_all(executor, allreduce_task, list(tasks), "simulating AllReduce")
    kth = kth_best(sorted(t.seconds for a in ars for t in a), top)
    return run_all(executor, bound_task, [BoundJob(t, a, kth) for t, a in zip(tasks, ars)], label)


def _turns(lists: Sequence[Sequence[Any]]) -> list[tuple[int, int]]:
    """(list, position) of every item, the lists taken in turn: each one's first item, then each one's second..."""
    return [(i, j) for j in range(max(map(len, lists), default=0)) for i, items in enumerate(lists) if j < len(items)]


def bound_together(task_lists: Sequence[Sequence[ConfigTask]], executor: Executor, top: int
                   ) -> list[list[Bounds]]:
    """:func:`bound_all` of each list with ``top`` (each list's own k-th best AllReduce), the lists' tasks run
    in turn (:func:`_turns`): a task's bounds are its own whatever ran before it (:func:`task_context`), so
    each list's are those of bounding it alone."""
    turns = _turns(task_lists)
    ars = run_all(executor, allreduce_task, [task_lists[i][j] for i, j in turns], "simulating AllReduce")
    mine: list[list[Any]] = [[None] * len(ts) for ts in task_lists]
    for (i, j), a in zip(turns, ars):
        mine[i][j] = a
    kth = [kth_best(sorted(t.seconds for a in per for t in a), top) for per in mine]
    jobs = [BoundJob(task_lists[i][j], mine[i][j], kth[i]) for i, j in turns]
    out: list[list[Any]] = [[None] * len(ts) for ts in task_lists]
    for (i, j), b in zip(turns, run_all(executor, bound_task, jobs, "bounding")):
        out[i][j] = b
    return out


def search(bounds: Sequence[Bounds], executor: Executor, top: int, keep: set[tuple[int, Matrix]] | None = None,
           budget: float | None = None, started: float | None = None, batch: int = 64,
           label: str = "simulating") -> tuple[list[ConfigResult], SearchStats]:
    """The programs to simulate, simulated in rounds of ``batch`` in order of bound; see the module docstring.

    ``keep`` restricts the search to these (task index, matrix) pairs (the others keep
    their AllReduce only); ``budget`` stops it after the round that passes ``started +
    budget`` (``started``: when the caller's work began; default now).  Returns one
    :class:`ConfigResult` per task, with the programs simulated, and the statistics.
    """
    started = time.perf_counter() if started is None else started
    done: list[dict[tuple[Matrix, str], ProgramTiming]] = [
        {(ar.matrix, ar.text): ar for ar in b.allreduce} for b in bounds]
    best = {(i, ar.matrix): ar.seconds for i, b in enumerate(bounds) for ar in b.allreduce}
    found = sorted(ar.seconds for b in bounds for ar in b.allreduce)  # every simulated time, ascending
    order = sorted(((bound, b.task.settings.algo, m, text, i) for i, b in enumerate(bounds)
                    for m, text, bound in b.programs if (keep is None or (i, m) in keep) and (m, text) not in done[i]),
                   key=lambda c: c[:4])

    def threshold() -> float:
        return kth_best(found, top)

    pos, stopped, next_bound = 0, False, None
    while pos < len(order):
        kth, worst = threshold(), max(best.values())
        chosen: list[tuple] = []
        while pos < len(order) and len(chosen) < batch:
            c = order[pos]
            low = c[0] * (1.0 - BOUND_SLACK)
            if low > kth and low > worst:
                pos = len(order)  # bounds only grow from here: nothing left can win
                break
            pos += 1
            if low <= kth or low <= best[(c[4], c[2])]:
                chosen.append(c)
        if not chosen:
            break
        if budget is not None and time.perf_counter() - started > budget:
            stopped, next_bound = True, chosen[0][0]
            break
        # one task per (task, matrix) of the round: each simulates its chosen programs
        by_task: dict[tuple[int, Matrix], list[str]] = {}
        for _, _, m, text, i in chosen:
            by_task.setdefault((i, m), []).append(text)
        keys = list(by_task)
        subtasks = [replace(bounds[i].task, matrices=(m,), programs=tuple(by_task[(i, m)])) for i, m in keys]
        for (i, m), res in zip(keys, run_all(executor, run_task, subtasks, label)):
            for p in res.programs:
                done[i][(p.matrix, p.text)] = p
                best[(i, p.matrix)] = min(best[(i, p.matrix)], p.seconds)
                found.append(p.seconds)
        found.sort()
    results = []
    for i, b in enumerate(bounds):
        # in the task's own program order, as simulating everything would list them
        rank = {(m, t): k for k, (m, t, _) in enumerate(b.programs)}
        timings = sorted(done[i].values(), key=lambda p: rank[(p.matrix, p.text)])
        counts: dict[Matrix, int] = {}
        for m, _, _ in b.programs:
            counts[m] = counts.get(m, 0) + 1
        results.append(ConfigResult(b.task, tuple(timings), tuple(counts.items())))
    total = sum(len(b.programs) for b in bounds)
    pairs = sum(len(b.allreduce) for b in bounds)
    searched = pairs if keep is None else len(keep)
    stats = SearchStats(total, sum(len(d) for d in done), pairs, searched, not stopped and keep is None, stopped,
                        budget, next_bound)
    return results, stats


def matrix_bounds(bounds: Sequence[Bounds]) -> dict[Matrix, float]:
    """Each matrix's least bound over its programs and algorithms (its AllReduce's time included)."""
    out: dict[Matrix, float] = {}
    for b in bounds:
        for m, _, bound in b.programs:
            out[m] = min(out.get(m, math.inf), bound)
    return out


def run_search(tasks: Sequence[ConfigTask], executor: Executor, top: int, exhaustive: bool = False,
               budget: float | None = None, top_matrices: int | None = None, score=matrix_bounds,
               always: frozenset[Matrix] = frozenset(), label: str = "simulating", backwards: bool = False
               ) -> tuple[list[ConfigResult], SearchStats]:
    """Simulate a sweep's tasks: every program (``exhaustive``, or an engine without a bound), or
    by :func:`search` after bounding every program.

    ``backwards`` bounds the tasks in the reverse order (the same bounds and results).
    ``top_matrices`` searches only the K matrices with the least ``score`` (by default
    :func:`matrix_bounds`; ties by matrix) and those in ``always``; the results then hold
    only those matrices.
    """
    started = time.perf_counter()
    if exhaustive or {t.settings.engine for t in tasks} != {"des"}:
        if budget is not None or top_matrices is not None:
            from ..util.errors import InputError

            field = "budget" if budget is not None else "top-matrices"
            raise InputError(f"{field}: --budget and --top-matrices prune with the des engine's lower bounds; "
                             "they need --engine des and no --exhaustive")
        results = run_all(executor, run_task, list(tasks), label)
        n = sum(len(r.programs) for r in results)
        pairs = sum(len(r.matrices()) for r in results)
        return results, SearchStats(n, n, pairs, pairs, True, False, None, None)
    # backwards: the tasks bounded last to first (each task's bounds are its own, whatever ran before it), so that
    # a what-if point starts with the structures the point before built last, which its caches still hold
    order = list(tasks)[::-1] if backwards else list(tasks)
    bounds = bound_all(order, executor, top=top)
    bounds = bounds[::-1] if backwards else bounds
    keep = None
    if top_matrices is not None:
        scores = score(bounds)
        chosen = set(sorted(scores, key=lambda m: (scores[m], m))[:top_matrices]) | set(always)
        if len(chosen) < len(scores):
            keep = {(i, m) for i, b in enumerate(bounds) for m in {x for x, _, _ in b.programs} if m in chosen}
    results, stats = search(bounds, executor, top, keep, budget, started, label=label)
    if keep is not None:
        results = [r for r in (ConfigResult(r.task, tuple(p for p in r.programs if (i, p.matrix) in keep), r.counts)
                               for i, r in enumerate(results)) if r.programs]
    return results, stats


def run_searches(task_lists: Sequence[Sequence[ConfigTask]], executor: Executor, top: int, exhaustive: bool = False,
                 label: str = "simulating") -> list[tuple[list[ConfigResult], SearchStats]]:
    """:func:`run_search` of each list (no budget, every matrix), with every list's tasks bounded together, in
    turn (:func:`bound_together`): a what-if's points, whose tasks on one matrix then run one after another
    and find the structures the point before built for it (points that share them:
    :meth:`~p2sim.collectives.caches.CollectiveCaches.share`).  Each list's results and statistics are those
    of its own :func:`run_search`."""
    if exhaustive or any({t.settings.engine for t in ts} != {"des"} for ts in task_lists):
        return [run_search(ts, executor, top, exhaustive=exhaustive, label=label) for ts in task_lists]
    return [search(b, executor, top, label=label) for b in bound_together(task_lists, executor, top)]
