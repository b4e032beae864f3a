"""Contention between a training step's axes: which collectives run at the same time, and how much each slows.

:mod:`p2sim.studies.step_time` simulates each collective of a step alone (every group of its axes at once)
and charges what the schedule leaves exposed.  Some collectives of different axes run at the same time on
the same GPUs, and where their flows cross the same NIC or link they share it (Megatron-LM's schedule, as
the overlap of :mod:`~p2sim.studies.step_time` models it):

* **the gradient reduction under the backward pass** (``--overlap-grad-reduce``, DDP's AllReduce or the
  distributed optimizer's ReduceScatter): it runs on its own stream under the last micro-batch's backward,
  whose collectives go on meanwhile -- the tensor collectives of each layer, the expert AllToAlls (combine
  and dispatch of the backward), the context ring's K, V, dK, dV, and the pipeline's send of the gradients
  to the previous stage;
* **the parameter AllGather under the forward pass** (``--overlap-param-gather``): likewise under the first
  micro-batch's forward and its collectives;
* **FSDP / ZeRO-3**: each layer's gathers and scatters are prefetched under the layers before, so they run
  under every micro-batch's forward and backward and that pass's collectives.

Each such set is a :class:`Window`: its collectives and how many calls of each one micro-batch makes in it
(``count / m`` of a per-step count; the gradient reduction's and the parameter gather's one call).  The
window's collectives are simulated together (:func:`p2sim.sim.joint.slowdowns`): each as one fluid load of
its window's calls, all at once, sharing links max-min fairly -- the fluid view of traffic spread over the
window: every byte of each axis still crosses the shared links within it.  Each collective's *slowdown* is
its load's time together over its time alone (at least 1: contention never speeds a collective); its calls
in the window take their alone time times it.  Collectives that share no physical link are not run
together, and their slowdown is exactly 1.

Not windows: the steady state's collectives of one GPU run one after another on its compute stream (the
tensor AllGather before a layer's GEMMs, the ring exchange under attention, the ReduceScatter after, the
AllToAlls around the experts: Megatron-LM without ``--tp-comm-overlap`` or an MoE overlap scheme), so they
do not meet on that GPU's links.

Examples
--------
>>> from p2sim.workload import load_model, step_collectives
>>> from p2sim.workload.training import TrainingSpec
>>> cols = step_collectives(load_model("llama3-8b"), TrainingSpec(seq_length=8192, global_batch=64,
...                         data_parallel="zero1"), {"tensor": 8, "pipeline": 4, "data": 8})
>>> [(w.phase, [(c.axis, c.op, calls) for c, calls in w.members]) for w in windows(cols, "zero1", 8)]
... # doctest: +NORMALIZE_WHITESPACE
[('forward', [('tensor', 'AllReduce', 16.0), ('pipeline', 'SendRecv', 1.0), ('data', 'AllGather', 1.0)]),
 ('backward', [('tensor', 'AllReduce', 16.0), ('pipeline', 'SendRecv', 1.0), ('data', 'ReduceScatter', 1.0)])]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..formalism.hierarchy import LoweredStep
from ..sim.joint import alone_seconds, run_built, step_flows, used_links_of
from ..sim.simulator import Simulator
from ..workload.step import StepCollective

__all__ = ["Window", "axis_of", "windows", "window_of", "contended"]

SHARDED = ("zero3", "fsdp")  # the data-parallel modes whose gathers and scatters run every micro-batch


def axis_of(c: StepCollective) -> str:
    """The axis a collective's time is charged to: tensor or pipeline where it spans them, expert for the
    AllToAll, context for the ring's SendRecv, data for the rest (the reductions over data, context, expert)."""
    for a in ("tensor", "pipeline"):
        if a in c.axes:
            return a
    if c.op == "AllToAll":
        return "expert"
    if c.op == "SendRecv" and c.axes == ("context",):
        return "context"
    return "data"


def window_of(c: StepCollective) -> str:
    """The pass a collective runs under: the forward for the forward's and the parameter gather (the
    ``optimizer`` phase's, overlapped with the next step's first forward), else the backward."""
    return "forward" if c.phase in ("forward", "optimizer") else "backward"


@dataclass(frozen=True)
class Window:
    """The collectives that run at the same time under one micro-batch's ``phase`` (forward or backward), each
    with its calls in that micro-batch."""

    phase: str
    members: tuple[tuple[StepCollective, float], ...]


def _concurrent(c: StepCollective) -> bool:
    """A collective that runs under a pass beside the data-parallel ones: the tensor, expert and context
    collectives and the pipeline's sends (not the tied embeddings' AllReduce, after the last backward)."""
    return axis_of(c) in ("tensor", "expert", "context") or (axis_of(c) == "pipeline" and c.op == "SendRecv")


def windows(collectives: Sequence[StepCollective], data_parallel: str, micro_batches: int) -> tuple[Window, ...]:
    """The windows of a step (forward first): only those with a data-parallel collective and another axis's."""
    m = micro_batches
    out = []
    for phase in ("forward", "backward"):
        members = []
        for c in collectives:
            if window_of(c) != phase:
                continue
            if axis_of(c) == "data":
                # one call under one micro-batch, or (sharded) the calls of every micro-batch, one m-th each
                members.append((c, c.count / m if data_parallel in SHARDED else float(c.count)))
            elif _concurrent(c) and c.phase == phase:
                members.append((c, c.count / m))
        axes = {axis_of(c) for c, _ in members}
        if "data" in axes and len(axes) > 1:
            out.append(Window(phase, tuple(members)))
    return tuple(out)


def contended(sim: Simulator, lowered: Callable[[StepCollective], LoweredStep], found: Sequence[Window],
              one_call: Mapping[StepCollective, float]) -> dict[StepCollective, float]:
    """Each window's collectives' slowdowns (at least 1; absent: 1), ``one_call`` each one's time for one call
    alone (as :meth:`~p2sim.sim.simulator.Simulator.step` timed it).

    The data-parallel collectives of a window run on their own stream, the others one after another on the
    compute stream.  Those whose flows share a physical link with the data ones' are run with them in one
    simulation (:func:`p2sim.sim.joint.run_built`): the data ones from the start, the others one after another,
    each starting when the one before would end alone; each other one is slowed by its time there over its
    time alone, each data one by its time there over its time without them.  The others (no shared link) are
    not run: exactly 1."""
    out: dict[StepCollective, float] = {}
    if sim.engine != "des":  # the other engines time groups apart: no contention
        return out
    links = len(sim.topo.capacity)
    for w in found:
        data = [(c, k) for c, k in w.members if axis_of(c) == "data"]
        others = [(c, k) for c, k in w.members if axis_of(c) != "data"]
        flows = {}
        for c, _ in w.members:
            step = lowered(c)
            flows[c] = step_flows(sim, step, (float(c.size),) * step.shape[0])
        data_links = np.unique(np.concatenate([used_links_of(flows[c][0], links) for c, _ in data]))
        sharing = [(c, k) for c, k in others
                   if np.intersect1d(used_links_of(flows[c][0], links), data_links, assume_unique=True).size]
        if not sharing:
            continue
        calls = [k for _, k in data]
        # the data collectives' own times as they run (together where there are several)
        base = (run_built(sim, [flows[c] for c, _ in data], calls) if len(data) > 1
                else (alone_seconds(sim, flows[data[0][0]], data[0][1], one_call[data[0][0]]),))
        alone = [alone_seconds(sim, flows[c], k, one_call[c]) for c, k in sharing]
        starts = [sum(alone[:i]) for i in range(len(sharing))]
        times = run_built(sim, [flows[d] for d, _ in data] + [flows[c] for c, _ in sharing],
                          calls + [k for _, k in sharing], [0.0] * len(data) + starts)
        # a ratio below 1 is the engine's float slack or max-min's rare non-monotone share: contention never
        # speeds a collective, and the search's bound (compute only) relies on it
        for (c, _), t, t0, t1 in zip(sharing, times[len(data):], starts, alone):
            out[c] = max(1.0, (t - t0) / t1) if t1 > 0 else 1.0
        for (d, _), t, t1 in zip(data, times, base):
            out[d] = max(1.0, t / t1) if t1 > 0 else 1.0
    return out
