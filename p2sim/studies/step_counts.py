"""What a rank, plan or what-if will bound, counted before it starts: the steps, distinct steps and collectives.

:func:`step_counts` walks each matrix's programs as the simulator's step cache keys them (each
synthesis hierarchy once) and classes each distinct step's groups as the simulator does
(:func:`~p2sim.sim.moved.moved_class_key`), without simulating anything; :func:`bounded_steps`
sums them over a search's algorithms.  The counts are :class:`~p2sim.studies.jobsize.StepCount`
values, which :mod:`p2sim.studies.jobsize` turns into a job's cost and checks against its limits.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..collectives import step_fractions
from ..formalism.hierarchy import Lowering, Order
from ..formalism.placement import Matrix, Placement
from ..formalism.program import Instruction
from ..formalism.synthesis import Profile, synthesize
from ..sim.moved import moved_class_key
from ..topology import Topology
from .jobsize import StepCount

__all__ = ["step_counts", "bounded_steps"]


def bounded_steps(topo: Topology, matrices: Sequence[Matrix], reduce_axes: Sequence[int], orders: Sequence[Order],
                  profile: Profile, max_size: int, memo: dict | None = None) -> StepCount:
    """What a bounded search over ``matrices`` builds with one algorithm per entry of ``orders`` (each
    algorithm's device order): their :func:`step_counts`, and each (matrix, algorithm)'s AllReduce simulated."""
    total = StepCount()
    for o in set(orders):
        counts = step_counts(topo, matrices, reduce_axes, o, profile, max_size, memo)
        total += sum(counts.values(), StepCount()) * sum(1 for x in orders if x is o)
    return total + StepCount(simulated=topo.devices * len(matrices) * len(orders))


def step_counts(topo: Topology, matrices: Sequence[Matrix], reduce_axes: Sequence[int], order: Order | str,
                profile: Profile, max_size: int, memo: dict | None = None) -> dict[Matrix, StepCount]:
    """Each matrix's :class:`StepCount`, counted without bounding anything: the distinct (instruction, buffer
    fractions) of its programs, as the simulator's step cache keys them, each lowered once as an array and its
    groups classed by :func:`_classes_by_volume` (the simulator's own key).  Call after
    :func:`~p2sim.studies.jobsize.program_counts` (the synthesis is cached).  ``memo``: step_fractions' memo to fill (the
    simulator context's ``row_counts``, which the bounds then find filled), else one of its own."""
    memo = {} if memo is None else memo  # step_fractions' per (d) and group count
    shapes: dict[bytes, _Shapes] = {}  # matrices often share a step's groups (1,628 steps, 297 group arrays)
    out: dict[Matrix, StepCount] = {}
    # a matrix's programs, their steps and the distinct (instruction, fractions) among them are its synthesis
    # hierarchy's (matrices of one hierarchy differ only in which GPUs each group holds): walked once per hierarchy
    walked: dict[tuple, tuple[int, dict[Instruction, set[tuple[float, ...]]]]] = {}
    for m in matrices:
        lw = Lowering.of(Placement.of(topo.hierarchy, [math.prod(row) for row in m], m), reduce_axes, order)
        if lw.synthesis.size < 2:
            out[m] = StepCount()
            continue
        key = (lw.synthesis, lw.table.shape[0])  # what step_fractions depend on
        if key not in walked:
            walked[key] = _distinct_steps(lw, profile, max_size, memo)
        steps, by_ins = walked[key]
        count = StepCount(steps)
        for ins, frs in by_ins.items():
            local = lw.synthesis.group_array(ins)
            if local.shape[1] < 2:
                continue
            groups = lw.table[:, local].reshape(-1, local.shape[1])
            classes = _classes_by_volume(topo, groups, list(frs), shapes)
            count += StepCount(0, len(frs), groups.size * len(frs), sum(classes))
        out[m] = count
    return out


def _distinct_steps(lw: Lowering, profile: Profile, max_size: int, memo: dict
                    ) -> tuple[int, dict[Instruction, set[tuple[float, ...]]]]:
    """The program steps of a lowering's programs, and per instruction the distinct buffer fractions of one
    reduction group's groups (a step's fractions are that group's repeated per group: step_fractions)."""
    seen: dict[tuple, tuple[Instruction, tuple[float, ...]]] = {}  # fractions are kept objects: by id first
    steps = 0
    for prog in synthesize(lw.synthesis, profile, max_size):
        for ins, fr in zip(prog.instructions, step_fractions(lw, prog, memo)):
            steps += 1
            seen.setdefault((ins, id(fr)), (ins, fr))
    rows = {ins: lw.synthesis.group_array(ins).shape[0] for ins, _ in seen.values()}  # built once per instruction
    by_ins: dict[Instruction, set[tuple[float, ...]]] = {}
    for ins, fr in seen.values():
        by_ins.setdefault(ins, set()).add(fr[:rows[ins]])
    return steps, by_ins


@dataclass(frozen=True, eq=False)
class _Shapes:
    """A step's groups classed as ``moved_classes`` ranks them, the buffers aside: each group's class id
    (ids from 0, in no particular order: only their count and equality matter), the class count, and per
    count of local groups ``L`` the (class, local group) pairs met (filled as asked)."""

    ids: np.ndarray
    count: int
    pairs: dict[int, np.ndarray]

    @classmethod
    def of(cls, topo: Topology, arr: np.ndarray) -> _Shapes:
        key = moved_class_key(topo, arr, arr.min(axis=1) // topo.gpus_per_node, np.zeros(len(arr)))
        n, width = key.shape
        if width > 16:  # wide rows (a few large groups): a lexsort would make a pass per column
            seen: dict[bytes, int] = {}
            rows = np.ascontiguousarray(key).view(np.uint8).reshape(n, -1)
            ids = np.fromiter((seen.setdefault(r.tobytes(), len(seen)) for r in rows), dtype=np.int64, count=n)
            return cls(ids, len(seen), {})
        order = np.lexsort(key.T[::-1])  # a class per run of equal rows
        ranked = key[order]
        runs = np.cumsum(np.append(True, np.any(ranked[1:] != ranked[:-1], axis=1)))
        ids = np.empty(n, dtype=np.int64)
        ids[order] = runs - 1
        return cls(ids, int(runs[-1]), {})

    def pairs_of(self, local: int) -> np.ndarray:
        hit = self.pairs.get(local)
        if hit is None:
            hit = self.pairs[local] = np.unique(self.ids * local + np.arange(len(self.ids)) % local)
        return hit


def _classes_by_volume(topo: Topology, groups: np.ndarray, volumes: Sequence[Sequence[float]],
                       memo: dict[bytes, _Shapes] | None = None) -> list[int]:
    """How many classes the simulator's ``moved_classes`` finds among a step's groups (a row of GPUs each;
    row ``r`` with buffer ``v[r % len(v)]``) for each ``v`` of ``volumes``: the collectives a bound builds.
    ``memo``: the groups' classes by their bytes, for other steps on the same groups."""
    arr = np.ascontiguousarray(groups, dtype=np.int64)
    digest = hashlib.blake2b(arr.tobytes(), digest_size=16).digest() + repr(arr.shape).encode()
    shapes = None if memo is None else memo.get(digest)
    if shapes is None:
        shapes = _Shapes.of(topo, arr)
        if memo is not None:
            memo[digest] = shapes
    out = []
    for v in volumes:
        ids = {x: i for i, x in enumerate(dict.fromkeys(v))}
        if len(ids) == 1:  # every group the same buffer: a class per shape
            out.append(shapes.count)
            continue
        vol = np.array([ids[x] for x in v], dtype=np.int64)
        pairs = shapes.pairs_of(len(v))  # (class, local group) met
        out.append(len(np.unique(pairs // len(v) * len(ids) + vol[pairs % len(v)])))
    return out
