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

import numpy as np

from ...topology import Topology
from ..caches import CollectiveCaches
from ..channels import Segment, channel_entry, channel_nics
from ..pattern import Hop, HopTable

__all__ = ["btree_parent", "double_tree", "tree_hops", "tree_tables", "link_pair", "node_chains"]


def btree_parent(rank: int, n: int) -> int | None:
    """Parent of ``rank`` in NCCL's binary tree over ``n`` ranks (``None`` for the root)."""
    if rank == 0:
        return None
    low = rank & -rank
    up = (rank ^ low) | (low << 1)
    return up if up < n else rank ^ low


def double_tree_arrays(n: int, caches: CollectiveCaches | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`double_tree` as arrays (``-1`` for a root), computed once per ``n`` and kept in ``caches``
    (none: computed afresh)."""
    hit = None if caches is None else caches.double_trees.get(n)
    if hit is None:
        hit = tuple(np.array([-1 if p is None else p for p in t], dtype=np.int64) for t in double_tree(n))
        for t in hit:
            t.flags.writeable = False
        if caches is not None:
            caches.double_trees[n] = hit
    return hit


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
        r = topo.router.route(s, d) if p == q or nics is None else topo.router.route_via(s, d, nics[p], nics[q])
        out.append(Hop(s, d, coef, r.edges, r.inter_node))
    return out


def node_chains(topo: Topology, segs: Sequence[Segment], rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]],
                c: int, across: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]:
    """Channel ``c``'s chain through each node of the group, as NCCL's tree and CollNet Chain run it: from the
    node's head round its first ring, the head being the GPU nearest the channel's NIC (``across``: the channel
    takes each node's NICs in turn, then the GPUs near it: :func:`~p2sim.collectives.channels.channel_entry`) or,
    on one node, the ring's first GPU.

    Returns every node's chain links, child to parent (reduce) then parent to child (broadcast), as (sources,
    destinations), each node's head, and per kind of node (:func:`~p2sim.collectives.hops.ring.kinds`) its NIC
    (``None`` on one node: no network)."""
    from .ring import _base, _spread, kinds

    of, reps = kinds(topo, segs)
    chains, heads, nics = [], [], []
    for rep in reps:
        base = _base(topo, rep)
        ring = [base + g for g in rings[rep.node][0][0]]
        if across:
            nic, head = channel_entry(topo, rep, channel_nics(topo, rep), c)
        else:  # one node: no network (and maybe no NIC at all), every channel runs the same chain
            nic, head = None, ring[0]
        i = ring.index(head)
        chain = ring[i:] + ring[:i]
        # per link of the chain: child to parent (reduce), parent to child (broadcast)
        chains.append(np.array([[x - base for x in pair] for child, parent in zip(chain[1:], chain)
                                for pair in ((child, parent), (parent, child))], dtype=np.int64).reshape(-1, 2))
        heads.append(np.array([head - base], dtype=np.int64))
        nics.append(nic)
    return (_spread(topo, segs, of, [ch[:, 0] for ch in chains]), _spread(topo, segs, of, [ch[:, 1] for ch in chains]),
            _spread(topo, segs, of, heads), nics)


def tree_tables(topo: Topology, segs: Sequence[Segment], rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]],
                channels: int, caches: CollectiveCaches | None = None) -> list[HopTable]:
    """:func:`tree_hops` as tables: the hops of each tree channel, in the same order."""
    from .ring import _table, kinds

    of, _ = kinds(topo, segs)
    nic_index = {nic: i for i, nic in enumerate(topo.nics)}
    trees = double_tree_arrays(len(segs), caches) if len(segs) > 1 else ()
    out = []
    for c in range(channels):
        chain_src, chain_dst, heads, nics = node_chains(topo, segs, rings, c, across=len(segs) > 1)
        nic_kind = [nic_index.get(nic, -1) for nic in nics]
        src = [chain_src]
        dst = [chain_dst]
        coef = [np.ones(len(src[0]))]
        conn = [np.zeros(len(src[0]), dtype=np.int64)]  # inside the nodes: no network, no hash
        if len(segs) > 1:
            for t, parents in enumerate(trees):
                r = np.flatnonzero(parents >= 0)
                pair = np.stack([heads[r], heads[parents[r]]], axis=1)  # up, then down
                src.append(pair.ravel())
                dst.append(pair[:, ::-1].ravel())
                coef.append(np.full(2 * len(r), 0.5))
                # NCCL runs the double tree's two trees on two channels (connect.cc: a channel's copy takes
                # the other tree), each with its own connections: queue pairs hashed apart
                conn.append(np.full(2 * len(r), 2 * c + t, dtype=np.int64))
        nic_of_node = {seg.node: nic_kind[k] for seg, k in zip(segs, of)}
        out.append(_table(topo, np.concatenate(src), np.concatenate(dst), np.concatenate(coef), nic_of_node,
                          np.concatenate(conn)))
    return out


def tree_hops(topo: Topology, segs: Sequence[Segment], rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]],
              channels: int) -> list[list[Hop]]:
    """The hops of each tree channel, per byte of its share of the buffer."""
    return [list(t.hops()) for t in tree_tables(topo, segs, rings, channels)]
