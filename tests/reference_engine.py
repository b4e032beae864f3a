"""The dense fluid engine and max-min solver as they were before the incremental engine.

The reference that the incremental engine is tested against: it was checked against SimGrid
3.32 to 1e-8.  ``max_min_rates``, ``FluidNetwork`` and ``run_flows`` are copied unchanged from
p2sim/sim/maxmin.py and p2sim/sim/engine.py at commit 43f1599; it recomputes a dense max-min
over every active flow and every link at each join and finish.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import simpy

from p2sim.sim.engine import FlowRecord, FlowSpec, RateSample

_DONE = 1e-9  # relative remaining volume treated as finished (floating-point slack)
_SATURATED = 1e-12


def max_min_rates(usage: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates.

    Parameters
    ----------
    usage : ndarray, shape (flows, links)
        Non-negative load coefficients; every flow must use at least one link.
    capacity : ndarray, shape (links,)
        Positive capacities; ``inf`` is allowed (never saturates).

    Returns
    -------
    ndarray, shape (flows,): rates (``inf`` for a flow on infinite links only).

    Examples
    --------
    >>> max_min_rates(np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([10.0, 4.0])).tolist()
    [6.0, 4.0]
    >>> max_min_rates(np.array([[2.0], [1.0]]), np.array([9.0])).tolist()  # weighted
    [3.0, 3.0]
    """
    flows = usage.shape[0]
    rates = np.zeros(flows)
    frozen = np.zeros(flows, dtype=bool)
    left = capacity.astype(float).copy()
    while not frozen.all():
        active = ~frozen
        load = usage[active].sum(axis=0)
        used = load > 0
        if not used.any():
            rates[active] = np.inf
            break
        inc = float(np.min(left[used] / load[used]))
        if not np.isfinite(inc):
            rates[active] = np.inf
            break
        rates[active] += inc
        left[used] -= inc * load[used]
        saturated = used & (left <= _SATURATED * np.where(np.isfinite(capacity), capacity, 1.0))
        hit = active & (usage[:, saturated] > 0).any(axis=1)
        if not hit.any():  # numerical corner: freeze the flows on the tightest link
            tight = np.argmin(np.where(used, left / np.where(used, load, 1.0), np.inf))
            hit = active & (usage[:, tight] > 0)
        frozen |= hit
    return rates


class FluidNetwork:
    """Active fluid flows sharing links max-min fairly, driven by a SimPy environment.

    Joins at one instant are batched: the first schedules a zero-delay update, which
    SimPy runs after every other event of that instant, so the rates are computed
    once per instant rather than once per joining flow.
    """

    def __init__(self, env: simpy.Environment, flows: Sequence[FlowSpec], capacity: np.ndarray,
                 record: bool = False) -> None:
        self.env = env
        self.flows = flows
        self.record = record
        self.samples: list[RateSample] = []
        # one dense usage matrix over every link any flow touches, built once
        self.links = np.unique(np.concatenate([f.edges for f in flows])) if flows else np.zeros(0, np.int64)
        self.capacity = capacity[self.links]
        self.usage = np.zeros((len(flows), len(self.links)))
        for i, f in enumerate(flows):
            self.usage[i, np.searchsorted(self.links, f.edges)] = f.coef
        self.volume = np.array([f.volume for f in flows], dtype=float)
        self.remaining = self.volume.copy()
        self.rate = np.zeros(len(flows))
        self.active = np.zeros(len(flows), dtype=bool)
        self.done: dict[int, simpy.Event] = {}
        self._last = 0.0
        self._generation = 0
        self._pending = False

    def join(self, index: int) -> simpy.Event:
        done = self.env.event()
        if self.volume[index] <= 0:
            done.succeed()
            return done
        self._advance()
        self.active[index] = True
        self.rate[index] = 0.0
        self.done[index] = done
        if not self._pending:
            self._pending = True
            self._generation += 1  # cancels the pending timer; the update below replaces it
            self.env.timeout(0).callbacks.append(lambda _ev: self._update())
        return done

    def _advance(self) -> None:
        dt = self.env.now - self._last
        if dt > 0:
            self.remaining[self.active] -= self.rate[self.active] * dt
        self._last = self.env.now

    def _update(self) -> None:
        self._pending = False
        self._advance()
        self._reschedule()

    def _reschedule(self) -> None:
        self._generation += 1
        ids = np.flatnonzero(self.active)
        if ids.size == 0:
            return
        usage = self.usage[ids]
        rates = max_min_rates(usage, self.capacity)
        self.rate[ids] = rates
        if self.record:
            finite = np.where(np.isfinite(rates), rates, 0.0)
            load = finite @ usage
            keep = load > 0
            self.samples.append(RateSample(self.env.now, self.links[keep], load[keep]))
        with np.errstate(divide="ignore", invalid="ignore"):
            eta = np.where(np.isinf(rates), 0.0, self.remaining[ids] / rates)
        horizon = float(np.min(eta))
        if np.isfinite(horizon):
            gen = self._generation
            self.env.timeout(max(horizon, 0.0)).callbacks.append(lambda _ev: self._on_timer(gen))

    def _on_timer(self, generation: int) -> None:
        if generation != self._generation:
            return  # superseded by a later join or finish
        self._advance()
        ids = np.flatnonzero(self.active)
        fin = ids[np.isinf(self.rate[ids]) | (self.remaining[ids] <= _DONE * self.volume[ids])]
        for i in fin.tolist():
            self.active[i] = False
            self.done.pop(i).succeed()
        self._reschedule()


def run_flows(
    flows: Sequence[FlowSpec], capacity: np.ndarray, record: bool = False
) -> tuple[float, list[FlowRecord], list[RateSample]]:
    """Run flows that all start at time 0; return (makespan, per-flow records, rate samples)."""
    env = simpy.Environment()
    net = FluidNetwork(env, flows, capacity, record)
    records: list[FlowRecord | None] = [None] * len(flows)

    def collective(i: int):
        spec = flows[i]
        yield env.timeout(spec.latency)
        start = env.now
        yield net.join(i)
        records[i] = FlowRecord(spec.label, start, env.now)

    for i in range(len(flows)):
        env.process(collective(i))
    env.run()
    if any(r is None for r in records):
        raise RuntimeError("a flow never finished (a link without capacity?)")
    out = [r for r in records if r is not None]
    return (max((r.end for r in out), default=0.0), out, net.samples)
