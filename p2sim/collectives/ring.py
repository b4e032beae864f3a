"""NCCL ring expansion of the five collectives.

Ring order: the group's GPUs sorted by index, so that the GPUs of a node are
consecutive and the ring leaves and enters each node once.  When the ring spans
nodes whose GPUs use several NICs, NCCL runs one channel per NIC; channel ``c``
rotates each node's segment to start at its ``c``-th GPU, so that the node is
entered and left through different GPUs (and NICs), each channel carrying an equal
share of the data.  Every channel also runs in the reverse direction (NCCL's ring
search pairs rings with their reverses on NVLink), half of the data each way, so
that both directions of a full-duplex point-to-point link carry traffic.  On
switches and NICs this changes no link's load; on an NVLink ring it halves it.

Per byte of buffer ``S`` each ring hop carries (nccl-tests' bus factors):
AllReduce ``2(n-1)/n``, ReduceScatter and AllGather ``(n-1)/n`` (``S`` = the larger
of input and output), Broadcast and Reduce ``1`` along a pipelined chain from / to
the root.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from ..topology import Topology
from .latency import BASE_LATENCY_S, ring_latency
from .pattern import Hop, Pattern, combine

__all__ = ["ring_pattern", "ring_order", "channels"]


def ring_order(topo: Topology, members: Sequence[int], channel: int = 0) -> list[int]:
    """The ring order of a channel: node segments in node order, each rotated by ``channel``."""
    out: list[int] = []
    for _, seg in groupby(sorted(members), key=topo.node_of):
        s = list(seg)
        r = channel % len(s)
        out += s[r:] + s[:r]
    return out


def channels(topo: Topology, members: Sequence[int]) -> int:
    """One channel per distinct NIC that a node's group members use (1 inside a node)."""
    nodes = {topo.node_of(m) for m in members}
    if len(nodes) < 2:
        return 1
    first = min(nodes)
    nics = {topo.nic_of(m) for m in members if topo.node_of(m) == first}
    return max(1, len(nics))


def ring_pattern(topo: Topology, op: str, members: Sequence[int], base: float = BASE_LATENCY_S) -> Pattern:
    """Expand a ring collective of ``op`` over ``members`` (first member = root)."""
    n = len(members)
    root = members[0]
    nodes = len({topo.node_of(m) for m in members})
    chans = channels(topo, members)
    hops: list[Hop] = []
    share = 2 * chans
    for c in range(chans * 2):
        order = ring_order(topo, members, c // 2)
        if c % 2:
            order = order[::-1]
        if op in ("Broadcast", "Reduce"):
            i = order.index(root)
            order = order[i:] + order[:i]
            pairs = list(zip(order, order[1:]))  # chain from the root
            if op == "Reduce":
                order = order[1:] + order[:1]
                pairs = list(zip(order, order[1:]))  # chain ending at the root
            factor = 1.0
        else:
            pairs = list(zip(order, order[1:] + order[:1]))
            factor = (2.0 if op == "AllReduce" else 1.0) * (n - 1) / n
        for a, b in pairs:
            r = topo.route(a, b)
            hops.append(Hop(a, b, factor / share, r.edges, r.inter_node))
    edges, coef = combine(hops)
    intra = max((topo.route(h.src, h.dst).latency for h in hops if not h.inter_node), default=0.0)
    inter = max((topo.route(h.src, h.dst).latency for h in hops if h.inter_node), default=0.0)
    # NCCL's tuning model: bus bandwidth = slowest hop (no sharing), algorithm time = factor / busBw
    factor_max = max(h.coef for h in hops) * share
    bottleneck = min(float(topo.capacity[list(h.edges)].min()) for h in hops) * chans
    return Pattern(
        algo="ring",
        op=op,
        members=tuple(members),
        edges=edges,
        coef=coef,
        latency=ring_latency(op, n, nodes, intra, inter, base),
        hops=tuple(hops),
        analytic_seconds_per_byte=factor_max / bottleneck,
    )
