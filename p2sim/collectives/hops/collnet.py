"""NCCL's CollNet: AllReduce reduced in the network's switches (InfiniBand SHARP).

Where every tier a group's reduction tree climbs reduces in its switches (a fabric tier
with ``sharp = true``), NCCL's CollNet algorithms (``src/device/all_reduce.h``,
``src/transport/coll_net.cc``) send each node's data into the network once and get the
reduced result back once -- half of the NIC bytes of a ring:

* **CollNet Direct**: each node has up to eight *heads*, the GPUs with their own NIC.
  Every GPU scatters slice ``k`` of its buffer to head ``k`` (through the NVSwitch); head
  ``k`` reduces the node's slices, sends its slice into SHARP tree ``k`` through its NIC,
  receives the reduced slice and writes it back to every GPU.  Per GPU that is
  ``2(g-1)/g`` of the buffer each way on NVLink (a ring's), and per node the buffer once
  each way on the network.
* **CollNet Chain**: each channel runs a chain through the node's GPUs from the GPU at
  the channel's NIC: reduce up the chain, the head to and from the network, broadcast
  down the chain -- about twice the buffer each way on a middle GPU's links.

The switches aggregate: a leaf sends one reduced stream up per tree, not one per node,
so the uplinks carry a tree's slice once each way per switch group below the tree's root
(:meth:`~p2sim.topology.fabric.Fabric.sharp_tree`).  Both run Simple only, as NCCL runs them.

Since NCCL 2.20.3 CollNet Direct also runs AllGather and ReduceScatter (``all_gather.h``,
``reduce_scatter.h``; Chain is AllReduce only) where every GPU is a head (1:1 GPU:NIC): each head is
a *rail*.  AllGather: each GPU sends its own part into its rail's SHARP tree, which gathers the
rail's parts of every node and sends them back to every node's head; the head copies them to the
node's other GPUs over NVLink.  ReduceScatter is the mirror: the node's GPUs send the head their
rail's data, the head reduces it and sends it up, and gets its own part back.  Per GPU that is
``(g-1)/g`` of the buffer each way on NVLink and ``1/g`` of it from (AllGather) or to
(ReduceScatter) the network, the other way ``1/(g N)``: NIC-bound at ``g`` NICs' rate
(:func:`collnet_rail_tables`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...topology import Topology
from ..caches import CollectiveCaches
from ..channels import Segment, channel_nics, entry_gpus
from ..pattern import HopTable

__all__ = ["NET", "collnet_heads", "collnet_head_count", "collnet_direct_tables", "collnet_chain_tables",
           "collnet_rail_tables", "collnet_possible"]

NET = -2  # a hop's end in the network (a SHARP switch), as SWITCH (-1) is an NVSwitch


def collnet_possible(topo: Topology, segs: Sequence[Segment], caches: CollectiveCaches | None = None) -> bool:
    """Whether every node's NICs reach a SHARP tree over the group's nodes (the heads kept in ``caches``)."""
    f = topo.fabric
    if f is None or len(segs) < 2:
        return False
    nodes = np.array([s.node for s in segs], dtype=np.int64)
    heads = collnet_heads(topo, segs[0], caches=caches)
    return bool(heads) and all(f.sharp_tree(nodes, f.nics.index(nic)) is not None for nic, _ in heads)


def collnet_heads(topo: Topology, seg: Segment, limit: int = 8,
                  caches: CollectiveCaches | None = None) -> list[tuple[str, int]]:
    """A node's heads: (NIC, the GPU that owns it) for each NIC its members are near, distinct GPUs,
    at most ``limit`` (NCCL's collnet graph: one channel per NIC and local GPU, at most 8)."""
    base = seg.node * topo.gpus_per_node
    return [(nic, base + head) for nic, head in _local_heads(topo, seg.local(topo), limit, caches)]


def collnet_head_count(topo: Topology, seg: Segment, limit: int = 8, caches: CollectiveCaches | None = None) -> int:
    """``len(collnet_heads(topo, seg, limit))``, without the list (asked of every node of a group)."""
    return len(_local_heads(topo, seg.local(topo), limit, caches))


def _local_heads(topo: Topology, local: tuple[int, ...], limit: int,
                 caches: CollectiveCaches | None) -> tuple[tuple[str, int], ...]:
    """:func:`_heads_of`, kept in ``caches`` (none: worked out afresh).  Asked of every node of every group NCCL's
    choice weighs (tens of thousands of times at 2,048 nodes), and a node's heads are its local GPUs' on node 0
    moved (every node is the same template)."""
    if caches is None:
        return _heads_of(topo, local, limit)
    memo = caches.collnet_heads
    key = (local, limit)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = _heads_of(topo, local, limit)
    return hit


def _heads_of(topo: Topology, local: tuple[int, ...], limit: int) -> tuple[tuple[str, int], ...]:
    """The heads of the local GPUs ``local`` on node 0 (what :func:`collnet_heads` moves to a node)."""
    rep = Segment(0, local)
    heads: list[tuple[str, int]] = []
    for nic in channel_nics(topo, rep):
        head = entry_gpus(topo, rep, nic)[0]
        if all(head != h for _, h in heads):
            heads.append((nic, head))
    return tuple(heads[:limit])


def _net_table(topo: Topology, segs: Sequence[Segment], heads: Sequence[tuple[str, int]], overhead: float,
               to_net: float = 1.0, from_net: float = 1.0) -> HopTable:
    """Each node's head to the network through its NIC's cable and back: per node an up hop and a down hop,
    of ``to_net`` and ``from_net`` bytes per byte of the flow's share."""
    f = topo.fabric
    assert f is not None
    stride = topo._stride
    gpn = topo.gpus_per_node
    node = np.array([seg.node for seg in segs], dtype=np.int64)
    head = np.array([h for _, h in heads], dtype=np.int64)
    # per node an up hop (head -> network) then a down hop; nodes with the same (local head, NIC) share
    # one template of links, moved by the node's stride
    nic0, h0 = heads[0]
    if all(nic == nic0 for nic, _ in heads) and not (head % gpn != h0 % gpn).any():
        # every node's head at one local place and NIC (a group whose nodes hold the same GPUs): one template,
        # laid out for all nodes by array
        out_part, _, in_part = topo.router.via_parts(h0 % gpn, nic0, nic0, h0 % gpn)
        up, down = np.asarray(out_part, dtype=np.int64), np.asarray(in_part, dtype=np.int64)
        both = np.concatenate([up, down])
        indptr = np.zeros(2 * len(segs) + 1, dtype=np.int64)
        np.cumsum(np.tile(np.array([len(up), len(down)], dtype=np.int64), len(segs)), out=indptr[1:])
        edges = (both[None, :] + node[:, None] * stride[both][None, :]).ravel().astype(np.int64, copy=False)
        return _net_hops(segs, head, indptr, edges, overhead, to_net, from_net)
    lengths = np.zeros(2 * len(segs), dtype=np.int64)
    templates: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    for i, (nic, h) in enumerate(heads):
        key = (h % gpn, nic)
        if key not in templates:
            out_part, _, in_part = topo.router.via_parts(key[0], nic, nic, key[0])
            templates[key] = (np.asarray(out_part, dtype=np.int64), np.asarray(in_part, dtype=np.int64))
        up, down = templates[key]
        lengths[2 * i], lengths[2 * i + 1] = len(up), len(down)
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    edges = np.empty(int(indptr[-1]), dtype=np.int64)
    for key, (up, down) in templates.items():
        rows = np.flatnonzero((head % gpn == key[0]) & np.array([nic == key[1] for nic, _ in heads]))
        for part, off in ((up, 0), (down, 1)):
            if len(part):
                at = indptr[2 * rows + off][:, None] + np.arange(len(part))[None, :]
                edges[at.ravel()] = (part[None, :] + node[rows][:, None] * stride[part][None, :]).ravel()
    return _net_hops(segs, head, indptr, edges, overhead, to_net, from_net)


def _net_hops(segs: Sequence[Segment], head: np.ndarray, indptr: np.ndarray, edges: np.ndarray, overhead: float,
              to_net: float, from_net: float) -> HopTable:
    """:func:`_net_table`'s hops of these routes: per node its head up to the network, then back."""
    n = 2 * len(segs)
    src = np.stack([head, np.full(len(segs), NET)], axis=1).ravel()
    dst = np.stack([np.full(len(segs), NET), head], axis=1).ravel()
    coef = np.tile(np.array([to_net, from_net]), len(segs))
    return HopTable(src, dst, coef, np.ones(n, dtype=bool), np.full(n, overhead), indptr, edges)


def _tree_table(topo: Topology, segs: Sequence[Segment], nic: str, overhead: float = 1.0) -> list[HopTable]:
    f = topo.fabric
    assert f is not None
    nodes = np.array([s.node for s in segs], dtype=np.int64)
    tree = f.sharp_tree(nodes, f.nics.index(nic))
    assert tree is not None
    if not len(tree):
        return []
    return [HopTable(np.array([NET]), np.array([NET]), np.ones(1), np.ones(1, dtype=bool), np.full(1, overhead),
                     np.array([0, len(tree)], dtype=np.int64), tree.astype(np.int64))]


def _intra_table(topo: Topology, src: np.ndarray, dst: np.ndarray, overhead: float) -> HopTable:
    from .ring import _table

    t = _table(topo, src, dst, np.ones(len(src)), None)
    return HopTable(t.src, t.dst, t.coef, t.inter, np.full(len(src), overhead), t.indptr, t.edges)


def _heads_and_others(segs: Sequence[Segment], heads: Sequence[Sequence[tuple[str, int]]],
                      k: int) -> list[tuple[int, np.ndarray]]:
    """Per node: its ``k``-th head GPU and the node's other members (what Direct's NVLink hops join)."""
    return [(hs[k][1], np.array([m for m in seg.members if m != hs[k][1]], dtype=np.int64))
            for seg, hs in zip(segs, heads)]


def _alike(topo: Topology, segs: Sequence[Segment]) -> np.ndarray | None:
    """Each node's first GPU id where every node of the group holds the same local GPUs (so the same heads: a
    node's NVLink hops are one node's moved), else None (then they are built node by node)."""
    first = segs[0].local(topo)
    if any(s.local(topo) != first for s in segs):
        return None
    return np.array([s.node for s in segs], dtype=np.int64) * topo.gpus_per_node


def _local_head_and_others(topo: Topology, seg: Segment, heads: Sequence[tuple[str, int]],
                           k: int) -> tuple[int, np.ndarray]:
    """:func:`_heads_and_others` of one node, as local GPU ids (to be moved to each node alike)."""
    base = seg.node * topo.gpus_per_node
    head = heads[k][1]
    return head - base, np.array([m - base for m in seg.members if m != head], dtype=np.int64)


def _head_hops(topo: Topology, segs: Sequence[Segment], heads: Sequence[Sequence[tuple[str, int]]], k: int,
               bases: np.ndarray | None, ends) -> tuple[np.ndarray, np.ndarray]:
    """The NVLink hops between each node's ``k``-th head and the node's other members, as (sources, destinations):
    ``ends(head, others)`` gives one node's; where every node is alike (``bases``: :func:`_alike`), one node's
    moved to each node by array, else node by node."""
    if bases is not None:
        head, others = _local_head_and_others(topo, segs[0], heads[0], k)
        s, d = ends(head, others)
        return (bases[:, None] + s[None, :]).ravel(), (bases[:, None] + d[None, :]).ravel()
    src, dst = [], []
    for head, others in _heads_and_others(segs, heads, k):
        s, d = ends(head, others)
        src.append(s)
        dst.append(d)
    return np.concatenate(src), np.concatenate(dst)


def collnet_direct_tables(topo: Topology, segs: Sequence[Segment], overhead: float,
                          caches: CollectiveCaches | None = None) -> list[HopTable]:
    """One flow per head position, per byte of its slice: scatter to the head, the head to the
    network and back, broadcast from the head; ``overhead`` is link bytes per data byte."""
    heads = [collnet_heads(topo, s, caches=caches) for s in segs]
    h = min(len(x) for x in heads)
    bases = _alike(topo, segs)

    def ends(head: int, others: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pair = np.stack([others, np.full(len(others), head)], axis=1)  # scatter, then broadcast, per member
        return pair.ravel(), pair[:, ::-1].ravel()

    out = []
    for k in range(h):
        src, dst = _head_hops(topo, segs, heads, k, bases, ends)
        parts = [_intra_table(topo, src, dst, overhead)] if len(src) else []
        parts.append(_net_table(topo, segs, [hs[k] for hs in heads], overhead))
        parts += _tree_table(topo, segs, heads[0][k][0], overhead)
        out.append(HopTable.concat(parts))
    return out


def collnet_chain_tables(topo: Topology, segs: Sequence[Segment],
                         rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]], channels: int) -> list[HopTable]:
    """One flow per channel, per byte of its share: a chain through each node from the GPU at the
    channel's NIC (reduce up, broadcast down: :func:`~p2sim.collectives.hops.tree.node_chains`, as a tree's), its head
    to the network and back."""
    from .ring import kinds
    from .tree import node_chains

    of, _ = kinds(topo, segs)
    out = []
    for c in range(channels):
        src, dst, spread_heads, nics = node_chains(topo, segs, rings, c)
        heads = spread_heads.tolist()
        parts = []
        if len(src):
            parts.append(_intra_table(topo, src, dst, 1.0))
        parts.append(_net_table(topo, segs, [(nics[k], h) for k, h in zip(of, heads)], 1.0))
        parts += _tree_table(topo, segs, nics[of[0]])
        out.append(HopTable.concat(parts))
    return out


def collnet_rail_tables(topo: Topology, segs: Sequence[Segment], op: str, net_overhead: float,
                        caches: CollectiveCaches | None = None) -> list[HopTable]:
    """CollNet Direct's AllGather or ReduceScatter: one flow per rail (head ``k`` of every node), per byte of
    its share (the rail's part of the buffer, ``N`` nodes' parts): AllGather sends the node's own part up
    (``1/N``), gets the rail's whole part back and copies it from the head to each other GPU of the node;
    ReduceScatter is the mirror.  ``net_overhead`` is link bytes per data byte on the network's hops.

    The SHARP tree's uplinks are charged the whole stream both ways: exact for the multicast down
    (AllGather) and the reduced stream up (ReduceScatter), a bound for the other way, whose ports are
    full duplex (so it binds only where other traffic shares them)."""
    heads = [collnet_heads(topo, s, caches=caches) for s in segs]
    h = min(len(x) for x in heads)
    own = 1.0 / len(segs)  # a node's own part of a rail's data
    gather = op == "AllGather"
    bases = _alike(topo, segs)

    def ends(head: int, others: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (np.full(len(others), head), others) if gather else (others, np.full(len(others), head))

    out = []
    for k in range(h):
        src, dst = _head_hops(topo, segs, heads, k, bases, ends)
        up, down = (own, 1.0) if gather else (1.0, own)
        net = [_net_table(topo, segs, [hs[k] for hs in heads], net_overhead, up, down)]
        net += _tree_table(topo, segs, heads[0][k][0], net_overhead)
        intra = [_intra_table(topo, src, dst, 1.0)] if len(src) else []
        # in the data's order: NVLink after the network for an AllGather, before it for a ReduceScatter
        out.append(HopTable.concat(net + intra if gather else intra + net))
    return out
