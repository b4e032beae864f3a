"""What one collective puts on the links: its channels' fluid flows.

A collective runs on channels, each carrying an equal share of the buffer over its own
ring or tree (NCCL's structure).  Channels that take exactly the same links are one
:class:`Flow` (they would progress in lockstep anyway); a collective is a few flows.
While a flow progresses at ``x`` bytes of its share per second it loads directed link
``edges[i]`` with ``coef[i] * x`` bytes per second, and each of its ``caps``
``(capacity, coef)`` is a private limit ``coef * x <= capacity`` (per-channel
throughput).  A collective's ``shared_caps`` bound all its flows together (a limit on
the whole collective, such as the LL protocol's).  ``hops`` keep the per-GPU traffic
(sender, receiver, bytes per byte of the flow's share).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Hop", "Flow", "Collective", "combine", "make_flow"]


@dataclass(frozen=True)
class Hop:
    """``src`` sends ``coef`` bytes of data to ``dst`` per byte of its flow's share, over ``edges``.

    ``overhead`` is link bytes per data byte on this hop (NVLS's efficiency); a flow's
    protocol overhead applies on top (:func:`make_flow`).
    """

    src: int
    dst: int
    coef: float
    edges: tuple[int, ...]
    inter_node: bool
    overhead: float = 1.0


@dataclass(frozen=True, eq=False)
class Flow:
    """Channels of one collective that take the same links (see module docstring)."""

    share: float  # of the collective's buffer
    channels: int  # NCCL channels it carries
    edges: np.ndarray
    coef: np.ndarray
    hops: tuple[Hop, ...]
    caps: tuple[tuple[float, float], ...] = ()  # (bytes/s, coef): private virtual links


@dataclass(frozen=True, eq=False)
class Collective:
    """One collective of one group: algorithm, protocol, channels and flows.

    ``bus_factor`` is NCCL's ratio of bus to algorithm bandwidth for this algorithm
    (``busBw = algBw x bus_factor``); ``latency`` the start-up time in seconds.
    """

    algo: str
    proto: str
    op: str
    members: tuple[int, ...]
    nodes: int
    channels: int
    flows: tuple[Flow, ...]
    latency: float
    bus_factor: float
    shared_caps: tuple[tuple[float, tuple[float, ...]], ...] = ()  # (bytes/s, coef per flow)

    @property
    def crosses_nodes(self) -> bool:
        return self.nodes > 1

    def link_load(self) -> tuple[np.ndarray, np.ndarray]:
        """Link bytes per byte of buffer when every flow progresses in proportion to its share."""
        return combine_weighted((f.edges, f.coef, f.share) for f in self.flows)

    def sent(self) -> dict[int, float]:
        """Data bytes each member sends per byte of buffer (to GPUs, or to an NVSwitch for NVLS)."""
        out: dict[int, float] = {m: 0.0 for m in self.members}
        for f in self.flows:
            for h in f.hops:
                if h.src in out:
                    out[h.src] += h.coef * f.share
        return out

    def received(self) -> dict[int, float]:
        """Data bytes each member receives per byte of buffer."""
        out: dict[int, float] = {m: 0.0 for m in self.members}
        for f in self.flows:
            for h in f.hops:
                if h.dst in out:
                    out[h.dst] += h.coef * f.share
        return out

    def algbw(self, capacity: np.ndarray) -> float:
        """Uncontended bytes of buffer per second: every flow at its share, no other traffic."""
        edges, coef = self.link_load()
        rate = float(np.min(capacity[edges] / coef)) if len(edges) else np.inf
        for f in self.flows:
            for cap, c in f.caps:
                rate = min(rate, cap / (c * f.share))
        for cap, per_flow in self.shared_caps:
            load = sum(c * f.share for c, f in zip(per_flow, self.flows))
            if load > 0:
                rate = min(rate, cap / load)
        return rate


def combine(hops: Iterable[Hop]) -> tuple[np.ndarray, np.ndarray]:
    """Sum the per-hop link loads (data times overhead) onto directed edges (sorted edge ids)."""
    loads: dict[int, float] = {}
    for h in hops:
        for e in h.edges:
            loads[e] = loads.get(e, 0.0) + h.coef * h.overhead
    return _arrays(loads)


def combine_weighted(parts: Iterable[tuple[np.ndarray, np.ndarray, float]]) -> tuple[np.ndarray, np.ndarray]:
    loads: dict[int, float] = {}
    for edges, coef, w in parts:
        for e, c in zip(edges.tolist(), coef.tolist()):
            loads[e] = loads.get(e, 0.0) + c * w
    return _arrays(loads)


def _arrays(loads: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    edges = np.fromiter(sorted(loads), dtype=np.int64, count=len(loads))
    coef = np.fromiter((loads[e] for e in edges), dtype=float, count=len(loads))
    return edges, coef


def make_flow(hops: Sequence[Hop], share: float, channels: int, scale: float = 1.0,
              caps: tuple[tuple[float, float], ...] = ()) -> Flow:
    """A flow of ``hops``; ``scale`` multiplies its link load (a protocol's overhead)."""
    edges, coef = combine(hops)
    return Flow(share, channels, edges, coef * scale, tuple(hops), caps)
