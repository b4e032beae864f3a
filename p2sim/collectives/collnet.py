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
(:meth:`~p2sim.topology.fabric.Fabric.sharp_tree`).  Both are AllReduce-only here and
Simple-only, as NCCL runs them (NCCL's CollNet ReduceScatter and AllGather, 2.20+, are
left out).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..topology import Topology
from .channels import Segment, entry_gpus, node_nics
from .pattern import Hop, HopTable

__all__ = ["NET", "collnet_heads", "collnet_direct_tables", "collnet_chain_tables", "collnet_possible"]

NET = -2  # a hop's end in the network (a SHARP switch), as SWITCH (-1) is an NVSwitch


def collnet_possible(topo: Topology, segs: Sequence[Segment]) -> bool:
    """Whether every node's NICs reach a SHARP tree over the group's nodes."""
    f = topo.fabric
    if f is None or len(segs) < 2:
        return False
    nodes = np.array([s.node for s in segs], dtype=np.int64)
    heads = collnet_heads(topo, segs[0])
    return bool(heads) and all(f.sharp_tree(nodes, f.nics.index(nic)) is not None for nic, _ in heads)


def collnet_heads(topo: Topology, seg: Segment, limit: int = 8) -> list[tuple[str, int]]:
    """A node's heads: (NIC, the GPU that owns it) for each NIC its members are near, distinct GPUs,
    at most ``limit`` (NCCL's collnet graph: one channel per NIC and local GPU, at most 8)."""
    out: list[tuple[str, int]] = []
    for nic in node_nics(topo, seg) or (topo.nic_of(seg.members[0]),):
        head = entry_gpus(topo, seg, nic)[0]
        if all(head != h for _, h in out):
            out.append((nic, head))
    return out[:limit]


def _net_hops(topo: Topology, seg: Segment, nic: str, head: int) -> list[Hop]:
    """The head's traffic to the network and back through its NIC's cable."""
    f = topo.fabric
    assert f is not None
    x, local, p = f.nics.index(nic), head % topo.gpus_per_node, seg.node
    out_part, _, in_part = topo._via_parts(local, nic, nic, local)
    stride = topo._stride
    up = tuple(int(e + p * stride[e]) for e in out_part)
    down = tuple(int(e + p * stride[e]) for e in in_part)
    return [Hop(head, NET, 1.0, up, True), Hop(NET, head, 1.0, down, True)]


def _tree_hop(topo: Topology, segs: Sequence[Segment], nic: str) -> list[Hop]:
    f = topo.fabric
    assert f is not None
    nodes = np.array([s.node for s in segs], dtype=np.int64)
    tree = f.sharp_tree(nodes, f.nics.index(nic))
    assert tree is not None
    return [Hop(NET, NET, 1.0, tuple(tree.tolist()), True)] if len(tree) else []


def collnet_direct_tables(topo: Topology, segs: Sequence[Segment], overhead: float) -> list[HopTable]:
    """One flow per head position, per byte of its slice: scatter to the head, the head to the
    network and back, broadcast from the head; ``overhead`` is link bytes per data byte."""
    heads = [collnet_heads(topo, s) for s in segs]
    h = min(len(x) for x in heads)
    out = []
    for k in range(h):
        hops: list[Hop] = []
        for seg, hs in zip(segs, heads):
            nic, head = hs[k]
            for m in seg.members:
                if m != head:
                    r = topo.route(m, head)
                    hops.append(Hop(m, head, 1.0, r.edges, False, overhead))
                    r = topo.route(head, m)
                    hops.append(Hop(head, m, 1.0, r.edges, False, overhead))
            hops += [Hop(a.src, a.dst, a.coef, a.edges, a.inter_node, overhead) for a in _net_hops(topo, seg, nic, head)]
        hops += _tree_hop(topo, segs, heads[0][k][0])
        out.append(HopTable.of(hops))
    return out


def collnet_chain_tables(topo: Topology, segs: Sequence[Segment],
                         rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]], channels: int) -> list[HopTable]:
    """One flow per channel, per byte of its share: a chain through each node from the GPU at the
    channel's NIC (reduce up, broadcast down), its head to the network and back."""
    lists = [node_nics(topo, s) or (topo.nic_of(s.members[0]),) for s in segs]
    out = []
    for c in range(channels):
        hops: list[Hop] = []
        nic0 = None
        for seg, nl in zip(segs, lists):
            nic = nl[c % len(nl)]
            nic0 = nic0 or nic
            base = seg.members[0] - seg.members[0] % topo.gpus_per_node
            ring = [base + g for g in rings[seg.node][0][0]]
            near = entry_gpus(topo, seg, nic)
            head = near[(c // len(nl)) % len(near)]
            i = ring.index(head)
            chain = ring[i:] + ring[:i]
            for child, parent in zip(chain[1:], chain):
                for a, b in ((child, parent), (parent, child)):
                    hops.append(Hop(a, b, 1.0, topo.route(a, b).edges, False))
            hops += _net_hops(topo, seg, nic, head)
        hops += _tree_hop(topo, segs, nic0)
        out.append(HopTable.of(hops))
    return out
