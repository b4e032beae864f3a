"""A training step's collectives on the system: each call's time alone, and their contention.

:func:`simulate` times one call of each collective of a step (every group of its axes at once, as ``plan --model``
simulates its parts: :func:`p2sim.studies.step_plan.simulate_parts`) under a placement -- Megatron-LM's default
rank order (:func:`default_placement_rows`) or another (:func:`order_rows`, a plan's matrix); :func:`contention`
the slowdowns of those that run at the same time as another axis's on shared links
(:mod:`p2sim.studies.step_contention`).  Both are kept for the process by what they depend on, so that the
configurations a search tries share what their groups and sizes share.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from ..formalism.hierarchy import LoweredStep
from ..formalism.mesh import megatron_matrix
from ..formalism.semantics import Op
from ..sim.sim_settings import SimSettings
from ..sim.simulator import Simulator
from ..topology import Topology
from ..util.errors import InputError
from ..workload.step import StepCollective
from .step_contention import contended, windows
from .step_plan import part_groups
from .step_workload import ENDS, GROUPS, PAIRS, StepPart

__all__ = ["simulate", "contention", "default_placement_rows", "order_rows"]


def _simulator(topo: Topology, engine: str) -> Simulator:
    """A simulator of ``topo`` with NCCL's choice and ``engine`` (the one place the step builds one)."""
    return Simulator(topo, SimSettings(engine=engine))


class _Kept:
    """What the step keeps of one topology for the process: one call's seconds and the contention slowdowns, by
    the job, the axes' sizes and the collective (numbers only: nothing here holds the topology)."""

    def __init__(self) -> None:
        self.simulated: dict[tuple[Any, ...], float] = {}
        self.contended: dict[tuple[Any, ...], float] = {}


# by the topology object itself, weakly: a configuration search's many configurations share what is kept, and a
# dropped topology's entries go with it (an id() key could be reused by a later topology and return its times)
_KEPT: weakref.WeakKeyDictionary[Topology, _Kept] = weakref.WeakKeyDictionary()


def _kept(topo: Topology) -> _Kept:
    hit = _KEPT.get(topo)
    if hit is None:
        hit = _KEPT[topo] = _Kept()
    return hit


class _Last:
    """The last topology's lowering of its last job (a step's collectives and their contention lower alike) and
    its contention simulators by engine: one slot, holding that topology, dropped when another comes."""

    def __init__(self) -> None:
        self.topo: Topology | None = None
        self.lowering: dict[tuple[Any, ...], Any] = {}
        self.simulators: dict[str, Simulator] = {}

    def of(self, topo: Topology) -> _Last:
        if self.topo is not topo:
            self.topo, self.lowering, self.simulators = topo, {}, {}
        return self


_LAST = _Last()


def simulate(topo: Topology, hierarchy: tuple[int, ...], per_node: int, node_gpus: int, sizes: dict[str, int],
              collectives: Sequence[StepCollective], engine: str, matrix: Any = None) -> dict[StepCollective, float]:
    """One call's seconds of each collective under Megatron-LM's default rank order.

    Each is kept for the process by what its time depends on: the job, the axes' sizes (its groups), its
    operation, axes and size -- not its count or phase, nor the compute's parameters -- so that the
    configurations a search tries share the collectives their groups and sizes share."""
    if matrix is not None:
        matrix = (tuple(matrix[0]), tuple(tuple(r) for r in matrix[1]))
    job = (hierarchy, per_node, node_gpus, tuple(sorted(sizes.items())), engine, matrix)
    kept = _kept(topo).simulated
    missing = [c for c in collectives if job + (c.op, c.axes, c.size) not in kept]
    if missing:
        for c, s in _simulate_now(topo, hierarchy, per_node, node_gpus, sizes, missing, engine, matrix).items():
            kept[job + (c.op, c.axes, c.size)] = s
    return {c: kept[job + (c.op, c.axes, c.size)] for c in collectives}


# Megatron-LM's default order tp-cp-ep-dp-pp, outermost first: a matrix's axes that share a level nest in its
# rows' order, the first outermost, so the rows go pipeline first and tensor last (tensor on consecutive GPUs)
_OUTERMOST_FIRST = ("pipeline", "data", "expert", "context", "tensor")


def default_placement_rows(hierarchy: Sequence[int], sizes: Mapping[str, int]) -> tuple[list[str], Any, str]:
    """Megatron-LM's default rank order as (row names, matrix, why not): the rows outermost first, so that axes
    sharing a level nest as Megatron numbers ranks (tensor fastest).

    >>> from p2sim.formalism.mesh import megatron_match
    >>> from p2sim.formalism.placement import Placement
    >>> names, m, _ = default_placement_rows((8, 8), {"tensor": 4, "context": 1, "pipeline": 8, "data": 2, "expert": 1})
    >>> names, m, megatron_match(Placement.of((8, 8), [8, 2, 4], m), names)
    (['pipeline', 'data', 'tensor'], ((8, 1), (1, 2), (1, 4)), 'rank order tp-cp-ep-dp-pp matches this placement')
    """
    names = [a for a in _OUTERMOST_FIRST if sizes[a] > 1] or ["data"]
    matrix, why = megatron_matrix(hierarchy, [sizes[a] for a in names], names)
    return names, matrix, why


def order_rows(hierarchy: Sequence[int], sizes: Mapping[str, int], order: str) -> tuple[list[str], Any, str]:
    """The placement of a Megatron-LM rank order (``"tp-cp-ep-pp-dp"``: tensor fastest) as (row names, matrix,
    why not), rows outermost first; consecutive ranks on consecutive GPUs, as :func:`megatron_matrix` fills them.

    >>> from p2sim.formalism.mesh import megatron_match
    >>> from p2sim.formalism.placement import Placement
    >>> sizes = {"tensor": 8, "context": 1, "pipeline": 4, "data": 4, "expert": 1}
    >>> names, m, _ = order_rows((16, 8), sizes, "tp-cp-ep-pp-dp")
    >>> names, m, megatron_match(Placement.of((16, 8), [4, 4, 8], m), names)
    (['data', 'pipeline', 'tensor'], ((4, 1), (4, 1), (1, 8)), 'rank order tp-cp-ep-pp-dp matches this placement')
    """
    full = {"tp": "tensor", "cp": "context", "ep": "expert", "pp": "pipeline", "dp": "data"}
    names = [full[d] for d in reversed(order.split("-")) if sizes[full[d]] > 1] or ["data"]
    matrix, why = megatron_matrix(hierarchy, [sizes[a] for a in names], names, order)
    return names, matrix, why


def _lowering_of(topo: Topology, hierarchy: tuple[int, ...], per_node: int, node_gpus: int, sizes: dict[str, int],
                 matrix: Any = None):
    """Each collective's lowered step (every group of its axes, as the system's GPUs) under the placement.

    ``matrix``: ``(row names, rows)``, the placement as a plan lists it (axes sharing a level nest in the rows'
    order, the first outermost); None: Megatron-LM's default, rows the axes of size > 1 in :data:`AXES` order."""
    why = ""
    if matrix is not None:
        names, matrix = list(matrix[0]), matrix[1]
        axis_sizes = [sizes[a] for a in names]
    else:
        names, matrix, why = default_placement_rows(hierarchy, sizes)
        axis_sizes = [sizes[a] for a in names]
    if matrix is None:
        raise InputError(f"axes: {','.join(f'{a}={sizes[a]}' for a in names)} on {topo.spec.name}: no placement in "
                         f"Megatron-LM's rank order ({why})")
    index = {a: i for i, a in enumerate(names)}
    memo: dict[tuple[str, tuple[str, ...]], LoweredStep] = {}

    def device(rank: int) -> int:  # the job's rank on the system's GPUs: its share of each node, first GPUs first
        return rank // per_node * node_gpus + rank % per_node

    def lowered(c: StepCollective) -> LoweredStep:
        hit = memo.get((c.op, c.axes))  # the groups do not depend on the size, count or phase
        if hit is not None:
            return hit
        pattern = GROUPS
        if c.op == "SendRecv" and c.axes == ("pipeline",):
            pattern = PAIRS
        elif c.op == "AllReduce" and c.axes == ("pipeline",):
            pattern = ENDS
        part = StepPart(tuple(sorted(index[a] for a in c.axes)), c.op, c.size, c.count, pattern, (c.phase,))
        groups = tuple(tuple(device(r) for r in g) for g in part_groups(part, hierarchy, axis_sizes, matrix))
        memo[(c.op, c.axes)] = step = LoweredStep(Op(c.op), groups)
        return step

    return lowered


def _lowering(topo: Topology, hierarchy: tuple[int, ...], per_node: int, node_gpus: int, sizes: dict[str, int],
              matrix: Any = None):
    """:func:`_lowering_of`, kept for the last job (a step's collectives and their contention lower alike)."""
    frozen = None if matrix is None else (tuple(matrix[0]), tuple(tuple(r) for r in matrix[1]))
    key = (hierarchy, per_node, node_gpus, tuple(sorted(sizes.items())), frozen)
    last = _LAST.of(topo).lowering
    if key not in last:
        last.clear()
        last[key] = _lowering_of(topo, hierarchy, per_node, node_gpus, sizes, matrix)
    return last[key]


def _simulate_now(topo: Topology, hierarchy: tuple[int, ...], per_node: int, node_gpus: int, sizes: dict[str, int],
                  collectives: Sequence[StepCollective], engine: str, matrix: Any = None) -> dict[StepCollective, float]:
    lowered = _lowering(topo, hierarchy, per_node, node_gpus, sizes, matrix)
    sim = _simulator(topo, engine)
    out = {}
    for c in collectives:
        step = lowered(c)
        out[c] = sim.step(step, (float(c.size),) * len(step.groups)).seconds
    return out


def contention(topo: Topology, hierarchy: tuple[int, ...], per_node: int, node_gpus: int, sizes: dict[str, int],
                collectives: Sequence[StepCollective], one_call: Mapping[StepCollective, float], data_parallel: str,
                micro_batches: int, engine: str, matrix: Any = None) -> dict[StepCollective, float]:
    """The slowdown of each collective that runs at the same time as another axis's
    (:mod:`p2sim.studies.step_contention`), kept for the process by the job, the axes' sizes and each window's
    collectives with their calls (as :func:`_simulate` keeps one call's time)."""
    found = windows(collectives, data_parallel, micro_batches)
    if not found:
        return {}
    if matrix is not None:
        matrix = (tuple(matrix[0]), tuple(tuple(r) for r in matrix[1]))
    job = (hierarchy, per_node, node_gpus, tuple(sorted(sizes.items())), engine, matrix)
    kept = _kept(topo)
    contended_ = kept.contended
    out: dict[StepCollective, float] = {}
    missing = []
    for w in found:
        keys = [job + (w.phase, tuple((c.op, c.axes, c.size, calls) for c, calls in w.members), i)
                for i in range(len(w.members))]
        if all(k in contended_ for k in keys):
            out.update({c: contended_[k] for (c, _), k in zip(w.members, keys)})
        else:
            missing.append((w, keys))
    if missing:
        lowered = _lowering(topo, hierarchy, per_node, node_gpus, sizes, matrix)
        # one simulator per system for the contention: its exact per-group caches (rings, structures) stay, what
        # the first group of a shape decided is dropped before each job, so that each job's windows are decided
        # as a fresh simulator would decide them (the same answer whichever configurations came before)
        simulators = _LAST.of(topo).simulators
        sim = simulators.get(engine)
        if sim is None:
            sim = simulators[engine] = _simulator(topo, engine)
        for w, keys in missing:
            # each window decided as a fresh simulator would decide it, whichever windows (of this job, or of
            # others) were simulated before or are found kept: each is kept alone, so each is run alone
            sim.context.forget_order()
            slow = contended(sim, lowered, [w], one_call)
            for (c, _), k in zip(w.members, keys):
                contended_[k] = out[c] = slow.get(c, 1.0)
    return out
