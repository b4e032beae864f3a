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
from ..sim.simulator import BOUND_SLACK
from .executor import Executor, run_all
from .config_task import ALLREDUCE_TEXT, ConfigResult, ProgramTiming, ConfigTask, run_task, task_context

__all__ = ["Bounds", "SearchStats", "bound_task", "bound_all", "search", "run_search", "matrix_bounds"]


@dataclass(frozen=True)
class Bounds:
    """One task's programs with their lower bounds, and each matrix's simulated AllReduce."""

    task: ConfigTask
    programs: tuple[tuple[Matrix, str, float], ...]  # (matrix, program text, lower bound), synthesis order
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


def bound_task(task: ConfigTask) -> Bounds:
    """Every program's lower bound, and every matrix's AllReduce simulated."""
    ctx = task_context(task)
    topo = ctx.topo
    syn = task.synthesis(topo)
    sim = task.settings.sim.simulator(topo, ctx)
    progs, ars = [], []
    for mp in syn.matrices:
        for prog in mp.programs:
            if prog.text == ALLREDUCE_TEXT:
                r = sim.simulate(mp.lowering, prog, task.bytes_per_gpu)
                ars.append(ProgramTiming(mp.matrix, r.text, r.total_seconds, r.steps))
                progs.append((mp.matrix, prog.text, r.total_seconds))
            else:
                progs.append((mp.matrix, prog.text, sim.lower_bound(mp.lowering, prog, task.bytes_per_gpu)))
    return Bounds(task, tuple(progs), tuple(ars))


def bound_all(tasks: Sequence[ConfigTask], executor: Executor, label: str = "bounding") -> list[Bounds]:
    return run_all(executor, bound_task, list(tasks), label)


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
        return found[top - 1] if 0 < top <= len(found) else (math.inf if top > 0 else -math.inf)

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
               always: frozenset[Matrix] = frozenset(), label: str = "simulating"
               ) -> tuple[list[ConfigResult], SearchStats]:
    """Simulate a sweep's tasks: every program (``exhaustive``, or an engine without a bound), or
    by :func:`search` after bounding every program.

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
    bounds = bound_all(tasks, executor)
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
