"""Whole-step plans: rank matrices by the total communication of a training step.

A step has several reductions, each over some axes with a volume and a count (for
example one per layer).  For every matrix each reduction uses its best synthesized
program (and algorithm); the plan's time is the sum of count x time.  Two baselines
are reported beside the best plan: the usual default placement (data parallelism
outermost, model axes packed innermost) with its best programs, and that placement
with plain AllReduce for everything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..util.errors import InputError
from ..util.parsing import axis_indices, byte_size, positive_int
from ..formalism.placement import Matrix
from .sweep import ConfigResult, SweepTask

__all__ = ["Reduction", "parse_reduction", "default_matrix", "PlanChoice", "Plan", "plan_tasks", "build_plans",
           "plan_scores"]


@dataclass(frozen=True)
class Reduction:
    axes: tuple[int, ...]
    bytes: int
    count: int = 1

    @property
    def label(self) -> str:
        return f"{','.join(map(str, self.axes))}:{self.bytes}B x {self.count}"


_RED = re.compile(r"^\s*([\w,\s-]+?)\s*:\s*([^x]+?)\s*(?:x\s*(\S+))?\s*$")


def parse_reduction(text: str, names: Sequence[str] = ()) -> Reduction:
    """Parse ``"0:4GiB"``, ``"1:512MiB x 24"``, ``"0,2:1GiB"`` or, with axis names, ``"tensor:512MiB x 24"``.

    Examples
    --------
    >>> parse_reduction("1:512MiB x 24")
    Reduction(axes=(1,), bytes=536870912, count=24)
    >>> parse_reduction("data,pipeline:1GiB", ("data", "tensor", "pipeline")).axes
    (0, 2)
    """
    m = _RED.match(text)
    if not m:
        raise InputError(f"reduction: {text!r} is not AXES:SIZE[ x COUNT], e.g. \"1:512MiB x 24\"")
    axes = axis_indices(m.group(1), tuple(names), "reduction axes")
    count = 1 if m.group(3) is None else positive_int(m.group(3), "reduction count")
    return Reduction(tuple(sorted(set(axes))), byte_size(m.group(2), "reduction size"), count)


def default_matrix(matrices: Sequence[Matrix], data_axis: int) -> Matrix:
    """The usual placement: model axes as far inside as they go, data parallelism outside.

    Among the matrices, the one whose model-axis factors are largest at the innermost
    level, then the next level out, and so on.
    """
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

    return max(matrices, key=lambda m: (key(m), [-v for row in m for v in row]))


@dataclass(frozen=True)
class PlanChoice:
    reduction: Reduction
    algo: str
    program: str
    seconds: float  # one reduction
    allreduce_seconds: float  # one plain AllReduce (best algorithm)

    def to_json(self) -> dict[str, Any]:
        return {"axes": list(self.reduction.axes), "bytes": self.reduction.bytes, "count": self.reduction.count,
                "algo": self.algo, "program": self.program, "seconds": self.seconds,
                "allreduce_seconds": self.allreduce_seconds}


@dataclass(frozen=True)
class Plan:
    matrix: Matrix
    choices: tuple[PlanChoice, ...]

    @property
    def total_seconds(self) -> float:
        return sum(c.seconds * c.reduction.count for c in self.choices)

    @property
    def allreduce_total_seconds(self) -> float:
        return sum(c.allreduce_seconds * c.reduction.count for c in self.choices)

    def to_json(self) -> dict[str, Any]:
        return {"matrix": [list(r) for r in self.matrix], "total_seconds": self.total_seconds,
                "allreduce_total_seconds": self.allreduce_total_seconds,
                "reductions": [c.to_json() for c in self.choices]}


def plan_tasks(base: SweepTask, reductions: Sequence[Reduction], algos: Sequence[str],
               matrices: Sequence[Matrix]) -> list[SweepTask]:
    return [
        replace(base, reduce_axes=r.axes, bytes_per_gpu=float(r.bytes), algo=a, matrices=(m,))
        for r in reductions for a in algos for m in matrices
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
            best = min(((res.best(m), res.task.algo) for res in options), key=lambda x: (x[0].seconds, x[1]))
            ar = min(res.allreduce(m).seconds for res in options)
            choices.append(PlanChoice(r, best[1], best[0].text, best[0].seconds, ar))
        plans.append(Plan(m, tuple(choices)))
    plans.sort(key=lambda p: (p.total_seconds, p.matrix))
    return plans
