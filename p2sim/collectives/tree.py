"""NCCL tree AllReduce expansion, one tree channel at a time.

Each graph channel runs NCCL's double binary tree across the nodes (two complementary
trees, each carrying half of the channel's data: the second tree is the mirror of the
first for an even node count, its shift by one for odd) and a chain inside each node.
A channel's chain starts at the GPU nearest the channel's NIC; that GPU talks to the
parent and children nodes through that NIC (NCCL's TREE pattern; trees keep the same
NIC on every node).  Reduce-up and broadcast-down run concurrently and pipelined, so
per byte of the channel's share every chain hop carries 1 byte each way and every tree
edge 1/2 byte each way per tree.  On two nodes each node is the root of one tree and
a leaf of the other, so the network carries each byte once each way -- half of what a
ring sends -- which is why a tree's bus bandwidth can exceed the NICs' rate there.

The binary tree is NCCL's (``src/graph/trees.cc``): rank 0 is the root; for any other
rank ``r`` with lowest set bit ``b``, the parent is ``(r ^ b) | (b << 1)``, or ``r ^ b``
when that is out of range.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..topology import Topology
from .channels import Segment, entry_gpus, node_nics
from .pattern import Hop

__all__ = ["btree_parent", "double_tree", "tree_hops", "link_pair"]


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


def link_pair(topo: Topology, a: int, b: int, coef: float, nics: dict[int, str] | None = None) -> list[Hop]:
    """Both directions between ``a`` and ``b`` (reduce up, broadcast down), through the given NICs."""
    out = []
    for s, d in ((a, b), (b, a)):
        p, q = topo.node_of(s), topo.node_of(d)
        r = topo.route(s, d) if p == q or nics is None else topo.route_via(s, d, nics[p], nics[q])
        out.append(Hop(s, d, coef, r.edges, r.inter_node))
    return out


def tree_hops(topo: Topology, segs: Sequence[Segment], rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]],
              channels: int) -> list[list[Hop]]:
    """The hops of each tree channel, per byte of its share of the buffer."""
    lists = [node_nics(topo, s) or (topo.nic_of(s.members[0]),) for s in segs]
    out = []
    for c in range(channels):
        hops: list[Hop] = []
        heads, nics = [], {}
        for seg, nl in zip(segs, lists):
            base = seg.members[0] - seg.members[0] % topo.gpus_per_node
            ring = [base + g for g in rings[seg.node][0][0]]
            nic = nl[c % len(nl)]
            if len(segs) == 1:  # no network: every channel runs the same chain
                head = ring[0]
            else:
                near = entry_gpus(topo, seg, nic)
                head = near[(c // len(nl)) % len(near)]
            i = ring.index(head)
            chain = ring[i:] + ring[:i]
            for child, parent in zip(chain[1:], chain):
                hops += link_pair(topo, child, parent, 1.0)
            heads.append(head)
            nics[seg.node] = nic
        if len(heads) > 1:
            for parents in double_tree(len(heads)):
                for r, p in enumerate(parents):
                    if p is not None:
                        hops += link_pair(topo, heads[r], heads[p], 0.5, nics)
        out.append(hops)
    return out
