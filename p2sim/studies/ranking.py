"""Ranking every (matrix, program, algorithm) of a configuration by predicted time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..formalism.placement import Matrix
from ..formalism.program import SEPARATOR
from .executor import Executor, run_all
from .config_task import ConfigResult, ProgramTiming, ConfigTask, run_task

__all__ = ["RankEntry", "MatrixSummary", "Ranking", "rank_tasks", "rank_results"]


@dataclass(frozen=True)
class RankEntry:
    matrix: Matrix
    algo: str
    timing: ProgramTiming
    allreduce_seconds: float
    task: ConfigTask | None = field(default=None, compare=False, repr=False)  # the task that simulated it

    @property
    def seconds(self) -> float:
        return self.timing.seconds

    @property
    def speedup(self) -> float:
        """Over the same matrix's single AllReduce with the same algorithm."""
        return self.allreduce_seconds / self.seconds

    def to_json(self) -> dict[str, Any]:
        return {
            "matrix": [list(r) for r in self.matrix],
            "algo": self.algo,
            "program": self.timing.text,
            "seconds": self.seconds,
            "allreduce_seconds": self.allreduce_seconds,
            "speedup": self.speedup,
            "steps": [
                dict(s.to_json(), instruction=i, span="inside a node" if s.nodes_spanned == 1
                     else f"across {s.nodes_spanned} nodes")
                for s, i in zip(self.timing.steps, self.timing.text.split(SEPARATOR))
            ],
        }


@dataclass(frozen=True)
class MatrixSummary:
    matrix: Matrix
    algo: str
    allreduce: ProgramTiming
    best: ProgramTiming
    programs: tuple[ProgramTiming, ...]  # those simulated
    count: int | None = None  # every program of the matrix (None: all simulated)

    def to_json(self) -> dict[str, Any]:
        return {
            "matrix": [list(r) for r in self.matrix],
            "algo": self.algo,
            "programs": len(self.programs) if self.count is None else self.count,
            "allreduce_seconds": self.allreduce.seconds,
            "best_seconds": self.best.seconds,
            "best_program": self.best.text,
            "speedup": self.allreduce.seconds / self.best.seconds,
        }


@dataclass(frozen=True)
class Ranking:
    entries: tuple[RankEntry, ...]  # every (matrix, algo, program), fastest first
    matrices: tuple[MatrixSummary, ...]

    def top(self, k: int) -> tuple[RankEntry, ...]:
        return self.entries[:k]


def rank_results(results: Sequence[ConfigResult]) -> Ranking:
    entries: list[RankEntry] = []
    summaries: list[MatrixSummary] = []
    for res in results:
        for m in res.matrices():
            ar = res.allreduce(m)
            progs = tuple(res.of(m))
            summaries.append(MatrixSummary(m, res.task.settings.algo, ar, res.best(m), progs, res.count(m)))
            entries += [RankEntry(m, res.task.settings.algo, p, ar.seconds, res.task) for p in progs]
    # ties broken by a total order on the inputs, so the ranking is reproducible
    entries.sort(key=lambda e: (e.seconds, e.algo, e.matrix, e.timing.text))
    summaries.sort(key=lambda s: (s.best.seconds, s.algo, s.matrix))
    return Ranking(tuple(entries), tuple(summaries))


def split_by_matrix(task: ConfigTask, matrices: Sequence[Matrix]) -> list[ConfigTask]:
    """One task per matrix, so that an executor can spread them."""
    return [replace(task, matrices=(m,)) for m in matrices]


def rank_tasks(tasks: Sequence[ConfigTask], executor: Executor, label: str = "simulating") -> Ranking:
    return rank_results(run_all(executor, run_task, list(tasks), label))
