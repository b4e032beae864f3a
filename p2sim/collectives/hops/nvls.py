"""NVLink SHARP (NVLS): the NVSwitch reduces and multicasts.

With NVLS (NVSwitch gen3 and later, Hopper GPUs and later) a GPU reads a reduced chunk
from the switch with one ``multimem.ld_reduce`` and writes a chunk to every GPU with one
``multimem.st``.  An AllReduce over ``n`` GPUs: each GPU owns ``1/n`` of the buffer, so
it sends its whole buffer ``S`` towards the switch (every chunk to its owner's
reduction) and receives its reduced ``S/n``; then it multicasts that ``S/n`` and
receives every owner's result, ``S``.  Per GPU and direction that is ``S (n+1)/n``
through its NVLink port -- about the buffer once, where a ring moves ``2(n-1)/n S``
each way.  ReduceScatter is the first half (up ``S``, down ``S/n``), AllGather the second
(up ``S/n``, down ``S``).  NVLS reaches ``nvlsEfficiency`` of NVLink (85% on Hopper).

NCCL's NVLS search (``src/graph/search.cc``) picks the *heads*: at most ``NCCL_MAX_NVLS_ARITY``
(32) GPUs of the domain, each reducing ``1/heads`` of every channel's data (``ld_reduce`` through the
switch) and multicasting it back, so a head's port carries ``1/heads`` more than another GPU's.  In a
domain of up to 32 GPUs every GPU is a head; an NVL72 rack has 32 heads for 72 GPUs.

Across nodes NCCL combines it with a tree (NVLS-Tree): inside each node NVLS reduces
the buffer to the head GPUs -- one per NIC, for the first NICs in NCCL's order, at most 32 and
as many as fit the GPUs' NVLink (:func:`nvls_head_count`); each head runs a double binary tree
across the nodes for its slice through its NIC, and NVLS multicasts the results back.  Every
NVLS channel splits its data over all heads (``src/device/all_reduce.h``, NVLS_TREE: a loop of
``nHeads`` chunks), so each head's NIC carries ``1/heads`` of the traffic between nodes, on
every channel.  NCCL runs 16 NVLS channels on Hopper and 24 or 32 on Blackwell
(``src/transport/nvls.cc``).

Switch traffic is written as hops to or from :data:`SWITCH`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...topology import Topology
from ..caches import CollectiveCaches
from ..channels import Segment, channel_nics, entry_gpus, nvlink_gbps, nvls_switch  # re-exported here
from ..nccl_tables import NVLS_MAX_ARITY, nvls_head_speed
from ..pattern import Hop, HopTable
from .tree import double_tree_arrays

__all__ = ["SWITCH", "nvls_switch", "nvls_hops", "nvls_table", "nvls_tree_hops", "nvls_tree_tables", "nvls_heads",
           "fewest_nvls_heads", "port_table", "nvls_head_count", "nvlink_gbps"]

SWITCH = -1  # the NVSwitch as a hop's source or destination


def port_table(topo: Topology, members: Sequence[int], switch: str, up: float | np.ndarray,
               down: float | np.ndarray, efficiency: float) -> HopTable:
    """Each member's hops to (``up`` bytes) and from (``down``) its node's ``switch`` (a node-0 name),
    in member order, up before down; the links' loads divided by ``efficiency``.  ``up`` and ``down``
    are one figure for all members or one per member."""
    m = np.asarray(members, dtype=np.int64)
    node, local = np.divmod(m, topo.gpus_per_node)
    ups, downs = topo.router.switch_ports(switch.split("/", 1)[1])
    per = topo._edges_per_node
    cols = []  # (src, dst, coef, edge) per direction, interleaved per member
    if np.any(np.asarray(up) > 0):
        cols.append((m, np.full(len(m), SWITCH), np.broadcast_to(np.asarray(up, dtype=float), len(m)),
                     ups[local] + node * per))
    if np.any(np.asarray(down) > 0):
        cols.append((np.full(len(m), SWITCH), m, np.broadcast_to(np.asarray(down, dtype=float), len(m)),
                     downs[local] + node * per))
    k = len(cols)
    src = np.stack([c[0] for c in cols], axis=1).ravel()
    dst = np.stack([c[1] for c in cols], axis=1).ravel()
    coef = np.stack([c[2] for c in cols], axis=1).ravel()
    edges = np.stack([c[3] for c in cols], axis=1).ravel()
    n = k * len(m)
    return HopTable(src, dst, coef, np.zeros(n, dtype=bool), np.full(n, 1 / efficiency),
                    np.arange(n + 1, dtype=np.int64), edges)


def nvls_hops(topo: Topology, op: str, seg: Segment, switch: str, efficiency: float) -> list[Hop]:
    """One node's NVLS collective, per byte of buffer (its link loads divided by ``efficiency``)."""
    return list(nvls_table(topo, op, seg, switch, efficiency).hops())


def nvls_table(topo: Topology, op: str, seg: Segment, switch: str, efficiency: float) -> HopTable:
    """:func:`nvls_hops` as a table.  AllReduce: every member's whole buffer is read up by the heads'
    ``ld_reduce`` and the whole result multicast down; a head also takes its reduced ``1/heads`` in and
    stores it out.  Up to 32 GPUs every member is a head (``S (n+1)/n`` each way); beyond, the first
    :func:`nvls_head_count` members are (NCCL's NVLS search, at most NCCL_MAX_NVLS_ARITY heads)."""
    n = len(seg.members)
    if op == "AllReduce" and n > NVLS_MAX_ARITY:
        h = nvls_head_count(topo, seg, n)
        extra = np.where(np.arange(n) < h, 1 / h, 0.0)
        return port_table(topo, seg.members, switch, 1 + extra, 1 + extra, efficiency)
    up, down = {"AllReduce": (1 + 1 / n, 1 + 1 / n), "ReduceScatter": (1.0, 1 / n),
                "AllGather": (1 / n, 1.0)}[op]
    return port_table(topo, seg.members, switch, up, down, efficiency)


def nvls_head_count(topo: Topology, seg: Segment, wanted: int) -> int:
    """How many of ``wanted`` heads NCCL's NVLS search finds in this node: at most NCCL_MAX_NVLS_ARITY
    (32), and as many as fit its GPUs' NVLink at the search's slowest speed (:func:`nvls_head_speed`)."""
    want = min(wanted, NVLS_MAX_ARITY)
    link = nvlink_gbps(topo, seg)
    return want if math.isinf(link) else nvls_head_speed(topo.spec.nccl.arch, want, link)[0]


def nvls_heads(topo: Topology, segs: Sequence[Segment]) -> list[list[tuple[int, str]]]:
    """Per node, the NVLS-Tree heads and their NICs: for each NIC in NCCL's order, the first
    member near it that is not a head yet (ncclTopoSearchRecNet: one NIC and its GPU per channel, no
    GPU twice), at most :func:`nvls_head_count` of them: 32 for an NVL72 rack's 72 NICs, 8 for an
    8-GPU board's 8, fewer with fewer NICs."""
    found: dict[tuple[int, ...], list[tuple[int, str]]] = {}
    out = []
    for seg in segs:
        rep = _node0_heads(topo, seg.local(topo), found)
        base = seg.node * topo.gpus_per_node
        out.append([(base + h, nic) for h, nic in rep])
    return out


def fewest_nvls_heads(topo: Topology, segs: Sequence[Segment]) -> int:
    """The fewest heads any node of the group has (connect.cc's minHeadNum), without moving each node's."""
    found: dict[tuple[int, ...], list[tuple[int, str]]] = {}
    return min(len(_node0_heads(topo, local, found)) for local in {seg.local(topo) for seg in segs})


def _node0_heads(topo: Topology, local: tuple[int, ...],
                 found: dict[tuple[int, ...], list[tuple[int, str]]]) -> list[tuple[int, str]]:
    """:func:`nvls_heads` of the node-0 segment of these local GPUs, kept in ``found``: every node is node 0's
    template (as in collnet_heads), so nodes with the same local members share one search."""
    hit = found.get(local)
    if hit is not None:
        return hit
    seg = Segment(0, local)
    heads: list[tuple[int, str]] = []
    for nic in channel_nics(topo, seg):
        h = next((m for m in entry_gpus(topo, seg, nic) if m not in {x for x, _ in heads}), None)
        if h is not None:
            heads.append((h, nic))
    hit = found[local] = heads[:nvls_head_count(topo, seg, len(heads))]
    return hit


def nvls_tree_hops(topo: Topology, segs: Sequence[Segment], switches: Sequence[str],
                   efficiency: float) -> list[list[Hop]]:
    """NVLS-Tree AllReduce: one flow per head slot, per byte of its slice."""
    return [list(t.hops()) for t in nvls_tree_tables(topo, segs, switches, efficiency)]


def nvls_tree_tables(topo: Topology, segs: Sequence[Segment], switches: Sequence[str],
                     efficiency: float, caches: CollectiveCaches | None = None) -> list[HopTable]:
    """:func:`nvls_tree_hops` as tables: per node every member's port to the switch (its part of the
    slice up, the result down), then the head's (reduced in, multicast out); then the double binary
    tree across the nodes' heads, through their NICs."""
    from .ring import _table

    heads = nvls_heads(topo, segs)
    count = min(len(h) for h in heads)
    nic_index = {nic: i for i, nic in enumerate(topo.nics)}
    trees = double_tree_arrays(len(segs), caches)
    same_switch = len(set(s.split("/", 1)[1] for s in switches)) == 1
    out = []
    for j in range(count):
        tops = np.array([hs[j][0] for hs in heads], dtype=np.int64)
        parts = []
        if same_switch:  # every node's members then its head, in node order, in one pass
            seq = np.concatenate([np.append(np.asarray(seg.members, dtype=np.int64), top)
                                  for seg, top in zip(segs, tops.tolist())])
            parts.append(port_table(topo, seq, switches[0], 1.0, 1.0, efficiency))
        else:
            for seg, sw, top in zip(segs, switches, tops.tolist()):
                parts.append(port_table(topo, list(seg.members) + [top], sw, 1.0, 1.0, efficiency))
        src, dst, conn = [], [], []
        for t, parents in enumerate(trees):
            r = np.flatnonzero(parents >= 0)
            pair = np.stack([tops[r], tops[parents[r]]], axis=1)  # up, then down, per tree edge
            src.append(pair.ravel())
            dst.append(pair[:, ::-1].ravel())
            conn.append(np.full(2 * len(r), 2 * j + t, dtype=np.int64))  # each tree its channel's connections
        if src:
            nic_of_node = {seg.node: nic_index[hs[j][1]] for seg, hs in zip(segs, heads)}
            s = np.concatenate(src)
            parts.append(_table(topo, s, np.concatenate(dst), np.full(len(s), 0.5), nic_of_node,
                                np.concatenate(conn)))
        out.append(HopTable.concat(parts))
    return out
