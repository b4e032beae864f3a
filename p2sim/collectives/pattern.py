"""Traffic patterns: what one collective of one group puts on the links.

A :class:`Pattern` describes a pipelined collective as a fluid: while it makes
progress at rate ``x`` bytes of its buffer per second, it loads directed link
``edges[i]`` with ``coef[i] * x`` bytes per second.  Its transfer takes
``buffer / x`` seconds once the start-up latency ``latency`` has passed.  ``hops``
keeps the per-GPU traffic (sender, receiver, bytes per byte of buffer) so that bytes
sent and received can be accounted for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["Pattern", "Hop", "combine"]


@dataclass(frozen=True)
class Hop:
    """``src`` sends ``coef`` bytes to ``dst`` per byte of the collective's buffer."""

    src: int
    dst: int
    coef: float
    edges: tuple[int, ...]
    inter_node: bool


@dataclass(frozen=True, eq=False)
class Pattern:
    """The link load of one collective per byte of its buffer (see module docstring)."""

    algo: str
    op: str
    members: tuple[int, ...]
    edges: np.ndarray
    coef: np.ndarray
    latency: float
    hops: tuple[Hop, ...]
    analytic_seconds_per_byte: float  # NCCL tuning model: 1 / algorithm bandwidth, no contention

    def network_load(self) -> tuple[np.ndarray, np.ndarray]:
        """The part of (edges, coef) that inter-node hops contribute."""
        return combine(h for h in self.hops if h.inter_node)

    @property
    def crosses_nodes(self) -> bool:
        return any(h.inter_node for h in self.hops)

    @property
    def max_sent(self) -> float:
        """Bytes the busiest member sends per byte of buffer (what a throughput ceiling limits)."""
        return max(self.sent().values())

    def sent(self) -> dict[int, float]:
        """Bytes each member sends per byte of buffer."""
        out: dict[int, float] = {m: 0.0 for m in self.members}
        for h in self.hops:
            out[h.src] += h.coef
        return out

    def received(self) -> dict[int, float]:
        out: dict[int, float] = {m: 0.0 for m in self.members}
        for h in self.hops:
            out[h.dst] += h.coef
        return out


def combine(hops: Iterable[Hop]) -> tuple[np.ndarray, np.ndarray]:
    """Sum the per-hop coefficients onto directed edges (sorted edge ids)."""
    loads: dict[int, float] = {}
    for h in hops:
        for e in h.edges:
            loads[e] = loads.get(e, 0.0) + h.coef
    edges = np.fromiter(sorted(loads), dtype=np.int64, count=len(loads))
    coef = np.fromiter((loads[e] for e in edges), dtype=float, count=len(loads))
    return edges, coef
