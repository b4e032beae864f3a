"""NCCL ring expansion of the five collectives, channel by channel.

Per byte of buffer ``S`` each ring hop carries (nccl-tests' bus factors): AllReduce
``2(n-1)/n``, ReduceScatter and AllGather ``(n-1)/n`` (``S`` = the larger of input and
output), Broadcast and Reduce ``1`` along a pipelined chain from / to the root.

Channels come in pairs that traverse a node's ring in opposite directions (NCCL pairs a
ring with its reverse on NVLink, so both directions of a full-duplex link carry
traffic); each pair is one flow, each channel carrying half of its data.  Inside one
node the rings are the mix :func:`~p2sim.collectives.ringsearch.best_rings` finds, all
in one flow.  Across nodes, pair ``p`` enters and leaves every node through that node's
NIC for the pair (see :mod:`p2sim.collectives.channels`): data always arrives at a GPU
near the NIC (GPUDirect RDMA), runs through the node's other members in ring order --
one channel each way round -- and leaves from the last one through the same NIC
(directly, or through an NVLink peer near the NIC: PXN); every channel goes round the
nodes in the same order, as NCCL's do.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..topology import Topology
from .channels import Segment, ring_channel_pairs
from .pattern import Hop

__all__ = ["ring_factor", "node_order", "ring_hops", "chain_pairs"]


def ring_factor(op: str, n: int) -> float:
    """Bytes per hop per byte of buffer."""
    if op == "AllReduce":
        return 2.0 * (n - 1) / n
    if op in ("ReduceScatter", "AllGather"):
        return (n - 1) / n
    return 1.0


def node_order(topo: Topology, seg: Segment, ring: Sequence[int], entry: int, nic: str, free: bool,
               backwards: bool = False) -> list[int]:
    """A node's members for one channel: from ``entry`` on in ring order (or against it).

    When any order is as good (one NVSwitch, ``free``), another member near the NIC goes
    last, so that the channel leaves the node close to its NIC.
    """
    base = seg.members[0] - seg.members[0] % topo.gpus_per_node
    glob = [base + g for g in ring]
    i = glob.index(entry)
    order = glob[i:] + glob[:i]
    if backwards:
        order = order[:1] + order[1:][::-1]
    if free and len(order) > 2:
        near = [m for m in order[1:] if nic in topo.local_nics(m % topo.gpus_per_node)]
        if near:
            order.remove(near[-1])
            order.append(near[-1])
    return order


def chain_pairs(op: str, seq: Sequence[int], root: int) -> list[tuple[int, int]]:
    """Sender-receiver pairs of one direction of a ring channel over cyclic order ``seq``."""
    if op not in ("Broadcast", "Reduce"):
        return list(zip(seq, list(seq[1:]) + [seq[0]]))
    i = list(seq).index(root)
    rot = list(seq[i:]) + list(seq[:i])
    if op == "Reduce":
        rot = rot[1:] + rot[:1]  # a chain that ends at the root
    return list(zip(rot, rot[1:]))


def _hop(topo: Topology, a: int, b: int, coef: float, nic_of_node: dict[int, str] | None) -> Hop:
    p, q = topo.node_of(a), topo.node_of(b)
    if p == q or nic_of_node is None:
        r = topo.route(a, b)
    else:
        r = topo.route_via(a, b, nic_of_node[p], nic_of_node[q])
    return Hop(a, b, coef, r.edges, r.inter_node)


def ring_hops(topo: Topology, op: str, members: Sequence[int], segs: Sequence[Segment],
              rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]], free: dict[int, bool],
              pairs: int) -> list[list[Hop]]:
    """The hops of each flow, per byte of its share: one flow inside a node, one per channel pair across nodes.

    ``rings[node]`` is the node segment's ring mix (local GPU indices); a group on one
    node uses the whole mix in every pair, a group across nodes the mix's first ring.
    """
    n = len(members)
    root = members[0]
    half = ring_factor(op, n) / 2  # each channel of the pair carries half
    if len(segs) == 1:  # one flow: every channel runs the whole mix
        mix = rings[segs[0].node]
        base = segs[0].members[0] - segs[0].members[0] % topo.gpus_per_node
        hops = []
        for ring, w in mix:
            seq = [base + g for g in ring]
            for direction in (seq, seq[::-1]):
                hops += [_hop(topo, a, b, half * w, None) for a, b in chain_pairs(op, direction, root)]
        return [hops]
    out = []
    for row in ring_channel_pairs(topo, segs, pairs):
        nic_of_node = {seg.node: nic for seg, (nic, _) in zip(segs, row)}
        hops = []
        for backwards in (False, True):
            seq: list[int] = []
            for seg, (nic, entry) in zip(segs, row):
                seq += node_order(topo, seg, rings[seg.node][0][0], entry, nic, free[seg.node], backwards)
            hops += [_hop(topo, a, b, half, nic_of_node) for a, b in chain_pairs(op, seq, root)]
        out.append(hops)
    return out
