"""Steps of different collectives run at the same time: their flows share the links, max-min fairly, in one run.

A :class:`~p2sim.sim.simulator.Simulator` times one lowered step (one collective over all its groups) at a
time.  A training step also runs collectives of different axes at once -- the data-parallel gradient
ReduceScatter under the last micro-batch's backward, whose expert AllToAlls, tensor collectives and
pipeline sends go on meanwhile -- and where they cross the same NIC or link each is slowed.
:func:`slowdowns` lays out every step's flows as the simulator does (each group's collective with NCCL's
choice of algorithm and protocol at the step's buffer, each collective's caps its own virtual links), runs
them in one fluid simulation, and answers each step's time together over its time alone.

Each :class:`Load` carries ``calls``: the flows' volumes are multiplied by it (``calls`` calls of the same
collective as one fluid load, their start-up latency once), so that a window's whole traffic of an axis is
weighed against another axis's; both the alone and the together times are of those loads.

Loads whose flows share no physical link (a topology link: NVLink, PCIe, NIC, switch port; the caps are
each collective's own) with another's are not run again: max-min sharing splits over the components of the
flow-link graph, so each such load's time together *is* its time alone, exactly, and it is answered as
such.  Only the ``des`` engine models contention; the ``analytic`` and ``baseline`` engines time groups
apart, so there every load's together time is its alone time.

Examples
--------
Two AllToAlls over the same two nodes' NICs (one per axis, say) take longer together; two on disjoint
nodes do not:

>>> from p2sim.formalism.semantics import Op
>>> from p2sim.topology import load_system
>>> from p2sim.sim.simulator import Simulator
>>> sim = Simulator(load_system("a100", nodes=4))
>>> a = Load(LoweredStep(Op.ALL_TO_ALL, ((0, 16),)), 2.0**28)
>>> b = Load(LoweredStep(Op.ALL_TO_ALL, ((1, 17),)), 2.0**28)
>>> c = Load(LoweredStep(Op.ALL_TO_ALL, ((32, 48),)), 2.0**28)
>>> [round(s, 2) for s in slowdowns(sim, [a, b])]
[2.0, 2.0]
>>> slowdowns(sim, [a, c])
(1.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..formalism.hierarchy import LoweredStep
from .engine import FlowArrays, run_flow_arrays
from .flows import flow_specs, moved_flow_arrays
from .moved import moved_classes, used_links
from .simulator import _FEW_GROUPS, Simulator

__all__ = ["Load", "slowdowns", "step_flows", "run_built", "alone_seconds", "used_links_of"]


@dataclass(frozen=True)
class Load:
    """One lowered step with one buffer for all its groups (bytes, as the simulator's ``volumes``), run as
    ``calls`` calls' worth of bytes in one fluid load."""

    step: LoweredStep
    volume: float
    calls: float = 1.0


def step_flows(sim: Simulator, step: LoweredStep, volumes: Sequence[float]) -> tuple[FlowArrays, np.ndarray]:
    """The flows of one step as :meth:`Simulator.step` runs them on the ``des`` engine, and the capacities of
    their virtual links (numbered from ``len(topo.capacity)`` on): the same two layouts, group by group for few
    groups, per class of moved groups for many."""
    topo = sim.topo
    links = len(topo.capacity)
    op = step.op.value
    if step.shape[0] <= _FEW_GROUPS:
        flows, extra = flow_specs(sim.collectives(op, step.groups, volumes), volumes, links)
        return FlowArrays.of(flows), np.asarray(extra, dtype=float)
    classes = []
    for g, v, shifts, members in moved_classes(topo, step, volumes):
        algo, proto = sim.expander.choose(op, g, v, sim.algo, sim.proto)
        classes.append((sim.expander.collective(algo, proto, op, g, v), v, shifts, members))
    flows, capacity = moved_flow_arrays(topo, op, step, classes)
    return flows, capacity[links:]


def _joined(parts: Sequence[tuple[FlowArrays, np.ndarray, float, float]], links: int) -> tuple[FlowArrays, np.ndarray]:
    """Flows of several steps as one set: each step's virtual links moved past the earlier steps', its
    volumes times its calls, its start ``offset`` seconds later."""
    indptr, edges, coef, volume, latency, extra = [np.zeros(1, dtype=np.int64)], [], [], [], [], []
    at = flows_at = 0
    labels = []
    for flows, caps, calls, offset in parts:
        e = flows.edges.copy()
        e[e >= links] += at
        edges.append(e)
        coef.append(flows.coef)
        volume.append(flows.volume * calls)
        latency.append(flows.latency + offset if offset else flows.latency)
        indptr.append(flows.indptr[1:] + indptr[-1][-1])
        extra.append(caps)
        labels.append((flows_at, flows))
        at += len(caps)
        flows_at += len(flows)

    def label(i: int) -> str:
        start, f = next((s, f) for s, f in reversed(labels) if s <= i)
        return f.label(i - start)

    return FlowArrays(np.concatenate(indptr), np.concatenate(edges), np.concatenate(coef), np.concatenate(volume),
                      np.concatenate(latency), label), np.concatenate(extra)


def used_links_of(flows: FlowArrays, links: int) -> np.ndarray:
    """The physical links (ids below ``links``) the flows load, ascending, each once."""
    return used_links(flows.edges[(flows.edges < links) & (flows.coef != 0)], links)


def run_built(sim: Simulator, built: Sequence[tuple[FlowArrays, np.ndarray]], calls: Sequence[float],
              offsets: Sequence[float] | None = None) -> tuple[float, ...]:
    """Steps' flows (:func:`step_flows`) run together, each its ``calls`` calls' bytes, starting ``offsets``
    seconds in (None: all at 0): the time each step's last flow ends."""
    links = len(sim.topo.capacity)
    offsets = [0.0] * len(built) if offsets is None else offsets
    joined, extra = _joined([(f, caps, k, o) for (f, caps), k, o in zip(built, calls, offsets)], links)
    _, _, ends, _ = run_flow_arrays(joined, np.concatenate([sim.topo.capacity, extra]))
    out, at = [], 0
    for f, _ in built:
        out.append(float(ends[at:at + len(f)].max()) if len(f) else 0.0)
        at += len(f)
    return tuple(out)


def alone_seconds(sim: Simulator, built: tuple[FlowArrays, np.ndarray], calls: float, one_call: float) -> float:
    """A step's time alone as ``calls`` calls' bytes in one load, from ``one_call``, its time for one call
    (:meth:`Simulator.step`'s): where all its flows start after one latency ``l`` the rates between events
    do not depend on the volumes, so the events come ``calls`` times as far apart after ``l``:
    ``l + calls (one_call - l)``; otherwise run."""
    flows = built[0]
    if calls == 1.0:
        return one_call
    lat = flows.latency
    if len(lat) and (lat == lat[0]).all():
        return float(lat[0]) + calls * (one_call - float(lat[0]))
    return run_built(sim, [built], [calls])[0]


def slowdowns(sim: Simulator, loads: Sequence[Load]) -> tuple[float, ...]:
    """Each load's seconds together with the others over its seconds alone (the time its last flow ends).

    A load that shares no physical link with another is 1.0 without a run (exact: max-min sharing splits over
    the components of the flow-link graph); each set of loads joined by shared links is run once together and
    each of its loads once alone.  Every engine but ``des`` times groups apart: 1.0 for all."""
    topo = sim.topo
    links = len(topo.capacity)
    n = len(loads)
    out = [1.0] * n
    if sim.engine != "des" or n < 2:
        return tuple(out)
    built = [step_flows(sim, ld.step, (ld.volume,) * ld.step.shape[0]) for ld in loads]
    used = [used_links_of(f, links) for f, _ in built]
    parent = list(range(n))  # union-find over the loads, joined by a shared physical link

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if root(i) != root(j) and np.intersect1d(used[i], used[j], assume_unique=True).size:
                parent[root(j)] = root(i)
    components: dict[int, list[int]] = {}
    for i in range(n):
        components.setdefault(root(i), []).append(i)
    for members in components.values():
        if len(members) < 2:
            continue
        together = run_built(sim, [built[i] for i in members], [loads[i].calls for i in members])
        for i, t in zip(members, together):
            alone = run_built(sim, [built[i]], [loads[i].calls])[0]
            out[i] = t / alone if alone > 0 else 1.0
    return tuple(out)
