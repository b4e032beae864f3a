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

import numpy as np

from ..topology import Topology
from ..topology.settings import IB_TRANSPORTS
from .channels import Segment, ring_channel_pairs
from .pattern import Hop, HopTable

__all__ = ["qps_per_connection", "ring_factor", "node_order", "ring_hops", "ring_tables", "chain_pairs", "kinds"]


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
        near = [m for m in order[1:] if nic in topo.router.local_nics(m % topo.gpus_per_node)]
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


def _chain_arrays(op: str, seq: np.ndarray, root: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`chain_pairs` as (senders, receivers) arrays."""
    if op not in ("Broadcast", "Reduce"):
        return seq, np.concatenate((seq[1:], seq[:1]))
    i = int(np.flatnonzero(seq == root)[0]) + (1 if op == "Reduce" else 0)  # a Reduce's chain ends at the root
    rot = np.concatenate((seq[i:], seq[:i]))
    return rot[:-1], rot[1:]


def kinds(topo: Topology, segs: Sequence[Segment]) -> tuple[list[int], list[Segment]]:
    """Each segment's kind (its local GPUs: segments of one kind expand alike, moved between
    nodes), and one segment of each kind."""
    index: dict[tuple[int, ...], int] = {}
    of, reps = [], []
    for s in segs:
        k = index.setdefault(s.local(topo), len(index))
        if k == len(reps):
            reps.append(s)
        of.append(k)
    return of, reps


def _base(topo: Topology, seg: Segment) -> int:
    return seg.members[0] - seg.members[0] % topo.gpus_per_node


def _spread(topo: Topology, segs: Sequence[Segment], of: list[int], local: list[np.ndarray]) -> np.ndarray:
    """Per segment its kind's local sequence, moved to the segment's node, one after another."""
    bases = np.fromiter((_base(topo, s) for s in segs), np.int64, len(segs))
    if len(local) == 1:  # every segment alike: one broadcast
        return (bases[:, None] + local[0][None, :]).ravel()
    return np.concatenate([local[k] + b for k, b in zip(of, bases.tolist())])


def qps_per_connection(topo: Topology) -> int:
    """How many flows an ECMP fabric sees for one channel's connection between two NICs: its queue pairs.

    NCCL's IB transport (ib, roce) opens ``NCCL_IB_QPS_PER_CONNECTION`` queue pairs per connection
    (``src/transport/net_ib/connect.cc``; one NIC per connection, so no device multiplies it) and
    spreads each connection's bytes evenly over them: whole messages round-robin by request id
    (``NCCL_IB_SPLIT_DATA_ON_QPS=0``, ``net_ib/common.h``) or every message split
    (``=1``, ``net_ib/p2p.cc``) -- in the fluid model alike, each queue pair carries ``1/k`` of the
    connection and the slowest one paces it.  Each queue pair is a flow of its own to a switch's
    hash: on RoCE NCCL sets the flow label to 0 (``connect.cc``), so the NIC driver's UDP source
    port, chosen per queue pair, is the only entropy besides the two NICs' addresses.  Adaptive
    routing spreads every connection anyway, and the other transports have no queue pairs: 1.
    """
    f = topo.fabric
    if f is None or not f.ecmp or topo.spec.nccl.transport not in IB_TRANSPORTS:
        return 1
    return topo.spec.nccl.ib_qps_per_connection


def _table(topo: Topology, src: np.ndarray, dst: np.ndarray, coef: np.ndarray, nic_of_node: dict[int, int] | None,
           connection: int | np.ndarray = 0) -> HopTable:
    """Hops between GPUs; across nodes through each node's NIC in ``nic_of_node`` (an index into ``topo.nics``).

    ``connection`` numbers each hop's NCCL connection (one number for all, or one per hop) for a fabric's
    ECMP hash: every channel opens its own connection to each peer, with queue pairs of its own
    (``src/transport/net.cc``: a send comm per channel and peer), so two connections between the same
    NICs hash independently.  With ``k`` queue pairs per connection (:func:`qps_per_connection`) a hop
    across nodes becomes ``k`` hops of ``1/k`` of its bytes, queue pair ``j`` hashed with
    ``connection * k + j`` (``k = 1``: the connection).
    """
    gpn = topo.gpus_per_node
    p, q = src // gpn, dst // gpn
    conn = np.broadcast_to(np.asarray(connection, dtype=np.int64), src.shape)
    k = 1 if nic_of_node is None else qps_per_connection(topo)
    qp = np.zeros(len(src), dtype=np.int64)
    if k > 1 and np.any(p != q):
        per = np.where(p != q, k, 1)  # consecutive rows: a hop's queue pairs, in order
        first = np.repeat(np.cumsum(per) - per, per)
        qp = np.arange(int(per.sum()), dtype=np.int64) - first
        src, dst, conn = np.repeat(src, per), np.repeat(dst, per), np.repeat(conn, per)
        coef = np.repeat(coef / per, per)
        p, q = src // gpn, dst // gpn
    if nic_of_node is None:
        x = y = None
    else:
        nodes = np.fromiter(nic_of_node, np.int64, len(nic_of_node))
        nics = np.fromiter(nic_of_node.values(), np.int64, len(nic_of_node))
        order = np.argsort(nodes)
        nodes, nics = nodes[order], nics[order]
        x = nics[np.searchsorted(nodes, p)]
        y = nics[np.searchsorted(nodes, q)]
    salt = None if x is None else conn * k + qp
    indptr, edges = topo.router.route_table(src, dst, x, y, salt)
    ports = None
    if salt is not None and topo.fabric is not None and topo.fabric.ecmp:
        # each hop's route for moving its ECMP ports with it (HopTable.ports): the NICs as the fabric numbers them
        fab = topo.router.fabric_nic_ids
        known = (p != q) & (x >= 0) & (y >= 0)  # a NIC of -1 (the GPU's default) is left unmoved: -1
        ports = np.where(known[:, None], np.column_stack([fab[x], fab[y], salt]), -1)
    return HopTable(src, dst, coef, p != q, np.ones(len(src)), indptr, edges, ports)


def ring_tables(topo: Topology, op: str, members: Sequence[int], segs: Sequence[Segment],
                rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]], free: dict[int, bool],
                pairs: int) -> list[HopTable]:
    """:func:`ring_hops` as tables: the hops of each flow, in the same order."""
    n = len(members)
    root = members[0]
    half = ring_factor(op, n) / 2  # each channel of the pair carries half
    if len(segs) == 1:  # one flow: every channel runs the whole mix
        base = _base(topo, segs[0])
        src, dst, coef = [], [], []
        for ring, w in rings[segs[0].node]:
            seq = np.asarray(ring, dtype=np.int64) + base
            for direction in (seq, seq[::-1]):
                a, b = _chain_arrays(op, direction, root)
                src.append(a)
                dst.append(b)
                coef.append(np.full(len(a), half * w))
        return [_table(topo, np.concatenate(src), np.concatenate(dst), np.concatenate(coef), None)]
    of, reps = kinds(topo, segs)
    nic_index = {nic: i for i, nic in enumerate(topo.nics)}
    out = []
    for channel, row in enumerate(ring_channel_pairs(topo, reps, pairs)):
        nic_of_node = {seg.node: nic_index[row[k][0]] for seg, k in zip(segs, of)}
        src, dst = [], []
        for backwards in (False, True):
            local = [np.asarray(node_order(topo, rep, rings[rep.node][0][0], entry, nic, free[rep.node], backwards),
                                dtype=np.int64) - _base(topo, rep) for rep, (nic, entry) in zip(reps, row)]
            a, b = _chain_arrays(op, _spread(topo, segs, of, local), root)
            src.append(a)
            dst.append(b)
        src_all = np.concatenate(src)
        # the pair's two channels, one each way round, are two NCCL channels: connections of their own
        conn = np.repeat(np.array([2 * channel, 2 * channel + 1], dtype=np.int64), [len(a) for a in src])
        out.append(_table(topo, src_all, np.concatenate(dst), np.full(len(src_all), half), nic_of_node, conn))
    return out


def ring_hops(topo: Topology, op: str, members: Sequence[int], segs: Sequence[Segment],
              rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]], free: dict[int, bool],
              pairs: int) -> list[list[Hop]]:
    """The hops of each flow, per byte of its share: one flow inside a node, one per channel pair across nodes.

    ``rings[node]`` is the node segment's ring mix (local GPU indices); a group on one
    node uses the whole mix in every pair, a group across nodes the mix's first ring.
    """
    return [list(t.hops()) for t in ring_tables(topo, op, members, segs, rings, free, pairs)]
