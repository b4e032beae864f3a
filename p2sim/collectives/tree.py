"""NCCL tree AllReduce expansion.

Inside each node the group's GPUs form a chain towards the node's first GPU;
across nodes two complementary binary trees join those heads, each carrying half of
the data: the second tree is the mirror of the first (even node count) or its shift
by one (odd).  Reduce-up and broadcast-down run concurrently and pipelined, so per
byte of buffer every chain hop carries 1 byte each way and every tree edge 1/2 byte
each way per tree.

The binary tree is NCCL's: rank 0 is the root; for any other rank ``r`` with lowest
set bit ``b``, the parent is ``(r ^ b) | (b << 1)``, or ``r ^ b`` when that is out of
range.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from ..topology import Topology
from .latency import BASE_LATENCY_S, tree_latency
from .pattern import Hop, Pattern, combine

__all__ = ["btree_parent", "double_tree", "tree_pattern"]


def btree_parent(rank: int, n: int) -> int | None:
    """Parent of ``rank`` in NCCL's binary tree over ``n`` ranks (``None`` for the root)."""
    if rank == 0:
        return None
    low = rank & -rank
    up = (rank ^ low) | (low << 1)
    return up if up < n else rank ^ low


def double_tree(n: int) -> tuple[list[int | None], list[int | None]]:
    """Parents of every rank in the two complementary trees."""
    first = [btree_parent(r, n) for r in range(n)]
    if n % 2 == 0:
        to, back = (lambda r: n - 1 - r), (lambda r: n - 1 - r)
    else:
        to, back = (lambda r: (r + 1) % n), (lambda r: (r - 1) % n)
    second: list[int | None] = []
    for r in range(n):
        p = btree_parent(back(r), n)
        second.append(None if p is None else to(p))
    return first, second


def tree_pattern(topo: Topology, members: Sequence[int], base: float = BASE_LATENCY_S) -> Pattern:
    """Expand a tree AllReduce over ``members``."""
    segments = [list(s) for _, s in groupby(sorted(members), key=topo.node_of)]
    hops: list[Hop] = []

    def link(a: int, b: int, coef: float) -> None:
        for s, d in ((a, b), (b, a)):  # reduce up and broadcast down
            r = topo.route(s, d)
            hops.append(Hop(s, d, coef, r.edges, r.inter_node))

    for seg in segments:
        for child, parent in zip(seg[1:], seg):
            link(child, parent, 1.0)
    heads = [seg[0] for seg in segments]
    if len(heads) > 1:
        for parents in double_tree(len(heads)):
            for r, p in enumerate(parents):
                if p is not None:
                    link(heads[r], heads[p], 0.5)
    edges, coef = combine(hops)
    intra = max((topo.route(h.src, h.dst).latency for h in hops if not h.inter_node), default=0.0)
    inter = max((topo.route(h.src, h.dst).latency for h in hops if h.inter_node), default=0.0)
    per_node = max(len(s) for s in segments)
    bottleneck = min(float(topo.capacity[list(h.edges)].min()) for h in hops)
    return Pattern(
        algo="tree",
        op="AllReduce",
        members=tuple(members),
        edges=edges,
        coef=coef,
        latency=tree_latency(per_node, len(segments), intra, inter, base),
        hops=tuple(hops),
        # NCCL's tuning: tree algorithm bandwidth = 0.5 x bus bandwidth
        analytic_seconds_per_byte=2.0 / bottleneck,
    )
