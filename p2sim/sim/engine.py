"""The discrete-event fluid engine: the only module that imports SimPy.

Each flow waits out its start-up latency, then joins the :class:`FluidNetwork` as a fluid
flow.  The network keeps every active flow's remaining bytes; whenever flows join or finish
it advances all flows to the current time, updates the max-min fair rates incrementally
(:class:`~p2sim.sim.maxmin.MaxMin`: only the flows whose rates can change are re-solved), and
schedules one timer for the next completion.  SimPy thus jumps from flow event to flow
event, never simulating chunks, and holds one event per distinct start time and one timer --
no process per flow.

Simulated time always advances or a flow completes: the flow a timer was set for finishes
when it fires, even where the clock cannot represent the remaining time (a horizon below
the float spacing of a clock at 1e14 s), so no magnitude of latency, bandwidth or volume can
stall the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import simpy

from ..util.arrays import unique_inverse
from ..util.errors import InputError
from .maxmin import MaxMin
from .symmetry import quotient

__all__ = ["FlowSpec", "FlowArrays", "FlowRecord", "RateSample", "run_flows", "run_flow_arrays", "sparse_usage"]

_DONE = 1e-9  # relative remaining volume treated as finished (floating-point slack)
# flows loading at least this many (flow, link) pairs are first reduced to their classes of
# symmetric flows (p2sim.sim.symmetry); below it the search costs more than it saves (every
# step of benchmarks/simulate_appendix.py stays below, with at most a few hundred)
_SYMMETRY_MIN = 1 << 12


@dataclass(frozen=True)
class FlowSpec:
    """A fluid flow: ``volume`` bytes of progress loading ``edges`` with ``coef`` per byte."""

    edges: np.ndarray
    coef: np.ndarray
    volume: float
    latency: float
    label: str = ""


@dataclass(frozen=True, eq=False)
class FlowArrays:
    """Many flows as arrays: flow ``i`` loads ``edges[indptr[i]:indptr[i + 1]]`` with ``coef``,
    moves ``volume[i]`` bytes after ``latency[i]`` s; ``label(i)`` names it (made only when a
    message or a trace needs it)."""

    indptr: np.ndarray
    edges: np.ndarray
    coef: np.ndarray
    volume: np.ndarray
    latency: np.ndarray
    label: Callable[[int], str]

    def __len__(self) -> int:
        return len(self.volume)

    @classmethod
    def of(cls, flows: Sequence[FlowSpec]) -> FlowArrays:
        n = len(flows)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(f.edges) for f in flows], out=indptr[1:])
        edges = np.concatenate([np.asarray(f.edges, dtype=np.int64) for f in flows]) if n else np.zeros(0, np.int64)
        coef = np.concatenate([np.asarray(f.coef, dtype=float) for f in flows]) if n else np.zeros(0)
        return cls(indptr, edges, coef, np.array([f.volume for f in flows], dtype=float),
                   np.array([f.latency for f in flows], dtype=float), lambda i: flows[i].label)


@dataclass(frozen=True)
class FlowRecord:
    label: str
    start: float  # when the transfer began (after latency)
    end: float


@dataclass(frozen=True)
class RateSample:
    """From ``time`` on, link ``edges[i]`` carries ``load[i]`` bytes/s."""

    time: float
    edges: np.ndarray
    load: np.ndarray


class FluidNetwork:
    """Active fluid flows sharing links max-min fairly, driven by a SimPy environment.

    Joins at one instant are batched: the first schedules a zero-delay update, which
    SimPy runs after every other event of that instant, so the rates are updated once
    per instant rather than once per joining flow.
    """

    def __init__(self, env: simpy.Environment, flows: FlowArrays, capacity: np.ndarray,
                 record: bool = False, usage: tuple | None = None) -> None:
        self.env = env
        self.n = len(flows)
        self.record = record
        self.samples: list[RateSample] = []
        self.starts = np.full(self.n, np.nan)
        self.ends = np.full(self.n, np.nan)
        # sparse usage over the links any flow touches (local indices), each link once per flow
        # (repeats merged, zero coefficients dropped), in one vectorised pass
        self.links, self._usage = usage if usage is not None else _usage(flows)
        self.solver = MaxMin(*self._usage, np.asarray(capacity, dtype=float)[self.links])
        self.volume = np.asarray(flows.volume, dtype=float)
        self.remaining = self.volume.copy()
        self.rate = self.solver.rate  # shared, updated in place by the solver
        self.active = np.zeros(self.n, dtype=bool)
        self._joining: list[int] = []
        self._last = 0.0
        self._generation = 0
        self._pending = False

    def arrive(self, indices: Sequence[int]) -> None:
        """Flows ``indices`` start their transfer now."""
        now = self.env.now
        for i in indices:
            self.starts[i] = now
            if self.volume[i] <= 0:
                self.ends[i] = now
            else:
                self._joining.append(i)
        if self._joining and not self._pending:
            self._advance()
            self._pending = True
            self._generation += 1  # cancels the pending timer; the update below replaces it
            self.env.timeout(0).callbacks.append(lambda _ev: self._update())

    def _advance(self) -> None:
        dt = self.env.now - self._last
        if dt > 0:
            self.remaining[self.active] -= self.rate[self.active] * dt
        self._last = self.env.now

    def _update(self) -> None:
        self._pending = False
        self._advance()
        self._resolve([])
        self._reschedule()

    def _resolve(self, finished: list[int]) -> None:
        joined, self._joining = self._joining, []
        if not joined and not finished:
            return
        self.solver.update(joined=joined, finished=finished)
        self.active[joined] = True
        self.active[finished] = False

    def _reschedule(self) -> None:
        self._generation += 1
        ids = np.flatnonzero(self.active)
        if ids.size == 0:
            return
        rates = self.rate[ids]
        if self.record:
            self._sample(ids)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            eta = np.where(np.isinf(rates), 0.0, self.remaining[ids] / rates)
        horizon = float(np.min(eta))
        if np.isfinite(self.env.now + horizon):  # else no flow can finish at a representable time
            gen = self._generation
            target = ids[eta <= horizon]  # what this timer is for: they finish when it fires
            self.env.timeout(max(horizon, 0.0)).callbacks.append(lambda _ev: self._on_timer(gen, target))

    def _sample(self, ids: np.ndarray) -> None:
        indptr, local, coef = self._usage
        rates = np.zeros(self.n)
        rates[ids] = np.where(np.isfinite(self.rate[ids]), self.rate[ids], 0.0)
        owner = np.repeat(np.arange(self.n), np.diff(indptr))
        load = np.bincount(local, weights=coef * rates[owner], minlength=len(self.links))
        keep = load > 0
        self.samples.append(RateSample(self.env.now, self.links[keep], load[keep]))

    def _on_timer(self, generation: int, target: np.ndarray) -> None:
        if generation != self._generation:
            return  # superseded by a later join or finish
        self._advance()
        ids = np.flatnonzero(self.active)
        done = np.isinf(self.rate[ids]) | (self.remaining[ids] <= _DONE * self.volume[ids])
        done[np.searchsorted(ids, target)] = True  # even if the clock could not advance enough
        fin = ids[done]
        self.ends[fin] = self.env.now
        self._resolve(fin.tolist())
        self._reschedule()


def sparse_usage(flows: Sequence[FlowSpec]) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The links the flows touch (sorted ids), and per flow its local links and coefficients
    (CSR ``indptr, local, coef``): each link once per flow, repeats summed, zero coefficients dropped."""
    return _usage(FlowArrays.of(flows))


def _usage(flows: FlowArrays) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    n = len(flows)
    links, local = unique_inverse(flows.edges)
    coef = flows.coef
    keep = coef > 0
    whole = bool(keep.all())
    if whole:  # the usual case: every incidence kept, as laid out
        indptr = np.asarray(flows.indptr, dtype=np.int64)
    else:
        owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(flows.indptr))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner[keep], minlength=n), out=indptr[1:])
        local, coef = local[keep], coef[keep]
    # each flow's links strictly ascending (between flows anything goes): already one entry per link, in order
    rising = local[1:] > local[:-1]
    ends = indptr[1:-1]
    rising[ends[(ends > 0) & (ends < len(local))] - 1] = True
    if rising.all():
        return links, (indptr.copy() if whole else indptr, local, coef)
    width = max(len(links), 1)
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    keys, inv = unique_inverse(owner * width + local)
    coef = np.bincount(inv, weights=coef, minlength=len(keys))
    owner, local = np.divmod(keys, width)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=n))]).astype(np.int64)
    return links, (indptr, local, coef)


def _short(label: str) -> str:
    return repr(label if len(label) <= 60 else label[:57] + "...")


def run_flows(
    flows: Sequence[FlowSpec], capacity: np.ndarray, record: bool = False
) -> tuple[float, list[FlowRecord], list[RateSample]]:
    """Run flows that all start at time 0; return (makespan, per-flow records, rate samples).

    Raises :class:`~p2sim.util.errors.InputError` for a flow that can never finish (a link of zero
    bandwidth, or a finish time beyond the float range) or a non-finite latency or volume.

    Examples
    --------
    Two 100-byte flows share a 10 bytes/s link; the second starts 2 s late:

    >>> link = np.array([0])
    >>> t, recs, _ = run_flows([FlowSpec(link, np.ones(1), 100.0, 0.0),
    ...                         FlowSpec(link, np.ones(1), 100.0, 2.0)], np.array([10.0]))
    >>> t, [(r.start, r.end) for r in recs]
    (20.0, [(0.0, 18.0), (2.0, 20.0)])
    """
    t, starts, ends, samples = run_flow_arrays(FlowArrays.of(flows), capacity, record)
    return t, [FlowRecord(f.label, float(a), float(b)) for f, a, b in zip(flows, starts, ends)], samples


def run_flow_arrays(flows: FlowArrays, capacity: np.ndarray, record: bool = False
                    ) -> tuple[float, np.ndarray, np.ndarray, list[RateSample]]:
    """:func:`run_flows` of flows given as arrays: (makespan, starts, ends, rate samples)."""
    bad = ~(np.isfinite(flows.latency) & (flows.latency >= 0) & np.isfinite(flows.volume) & (flows.volume >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"flow {_short(flows.label(i))}: latency {flows.latency[i]} s and volume "
                         f"{flows.volume[i]} bytes must be finite and non-negative")
    usage = _usage(flows)
    if not record and len(usage[1][2]) >= _SYMMETRY_MIN:
        links, (indptr, local, coef) = usage
        # the links in use by their local ids (as the quotient would number them): no second pass to find them
        q = quotient(indptr, local, coef, np.asarray(capacity, dtype=float)[links], flows.volume, flows.latency)
        if q is not None:  # one flow per class of flows that share links alike (p2sim.sim.symmetry)
            rep = q.flow_rep
            classes = FlowArrays(q.indptr, q.links, q.coef, flows.volume[rep], flows.latency[rep],
                                 lambda a: flows.label(int(rep[a])))
            t, starts, ends, _ = _run(classes, q.capacity, False, None)
            return t, starts[q.of_flow], ends[q.of_flow], []
    return _run(flows, capacity, record, usage)


def _run(flows: FlowArrays, capacity: np.ndarray, record: bool,
         usage: tuple | None) -> tuple[float, np.ndarray, np.ndarray, list[RateSample]]:
    env = simpy.Environment()
    net = FluidNetwork(env, flows, capacity, record, usage)
    by_latency: dict[float, list[int]] = {}
    for i, latency in enumerate(flows.latency.tolist()):
        by_latency.setdefault(latency, []).append(i)
    for latency in sorted(by_latency):
        group = by_latency[latency]
        env.timeout(latency).callbacks.append(lambda _ev, group=group: net.arrive(group))
    env.run()
    stuck = np.flatnonzero(np.isnan(net.ends))
    if stuck.size:
        i = int(stuck[0])
        why = ("its rate is 0 (a link of zero bandwidth)" if net.rate[i] == 0 else
               f"at {net.rate[i]:.3g} bytes/s its {net.remaining[i]:.3g} bytes end past the largest float time")
        raise InputError(f"flow {_short(flows.label(i))} never finishes: {why}")
    ends = net.ends.astype(float)
    return (float(ends.max()) if len(ends) else 0.0), net.starts.astype(float), ends, net.samples
