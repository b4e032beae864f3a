"""NCCL ring expansion of the five collectives, channel by channel.

Per byte of buffer ``S`` each ring hop carries (nccl-tests' bus factors): AllReduce
``2(n-1)/n``, ReduceScatter and AllGather ``(n-1)/n`` (``S`` = the larger of input and
output), Broadcast and Reduce ``1`` along a pipelined chain from / to the root.

Channels come in pairs that traverse a node's ring in opposite directions (NCCL pairs a
ring with its reverse on NVLink, so both directions of a full-duplex link carry
traffic); each pair is one flow, each channel carrying half of its data.  Inside one
node the rings are the mix :func:`~p2sim.collectives.hops.ringsearch.best_rings` finds, all
in one flow.  Across nodes, pair ``p`` enters and leaves every node through that node's
NIC for the pair (see :mod:`p2sim.collectives.channels`): data always arrives at a GPU
near the NIC (GPUDirect RDMA), runs through the node's other members in ring order --
one channel each way round -- and leaves from the last one through the same NIC
(directly, or through an NVLink peer near the NIC: PXN); every channel goes round the
nodes in the same order, as NCCL's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...topology import Topology
from ...topology.settings import IB_TRANSPORTS
from ..caches import CollectiveCaches
from ..channels import Segment, ring_channel_pairs
from ..pattern import Hop, HopTable

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
    bases = np.array([s.node for s in segs], dtype=np.int64) * topo.gpus_per_node  # each _base
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


# Each topology's cyclic ring tables (:func:`_cyclic_tables`), kept in its caches
# (:attr:`CollectiveCaches.cyclic <p2sim.collectives.caches.CollectiveCaches>`) least recently used first, at most
# CYCLIC_BYTES of arrays per topology: a group's five collectives (and every protocol and channel count that
# gives the same channel pairs) take the same hops round the same ring, so the routes are computed once.
# Sized by measurement (gb200-nvl72-pod, 112 racks: 90% of repeats come within 3 MiB of other groups' tables).
CYCLIC_BYTES = 16 * 2**20


@dataclass(frozen=True, eq=False)
class _Cyclic:
    """One channel pair's hops round the whole ring, both directions (direction ``d``'s ``n`` hops are
    ``d * n + j``, hop ``j`` from its ``j``-th member to the next), routed: ``table`` with unit coefficients,
    ``per`` each hop's rows (its queue pairs; ``None``: one row each)."""

    table: HopTable
    per: np.ndarray | None
    n: int
    seqs: tuple[np.ndarray, np.ndarray]

    def nbytes(self) -> int:
        """Bytes of every array it keeps: the table's, the queue pairs' and both ring orders (the ledger of
        the kept tables once counted the table alone: 15.2 MiB for 17.2 held, gb200-nvl72-pod at 112 racks)."""
        t = self.table
        kept = (t.src, t.dst, t.coef, t.inter, t.overhead, t.indptr, t.edges, t.ports, self.per, *self.seqs)
        return sum(a.nbytes for a in kept if a is not None)


def _take(table: HopTable, rows: np.ndarray) -> HopTable:
    """The table's rows ``rows``, in that order."""
    lens = np.diff(table.indptr)[rows]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=indptr[1:])
    within = np.arange(int(indptr[-1]), dtype=np.int64) - np.repeat(indptr[:-1], lens)
    edges = table.edges[np.repeat(table.indptr[:-1][rows], lens) + within]
    return HopTable(table.src[rows], table.dst[rows], table.coef[rows], table.inter[rows], table.overhead[rows],
                    indptr, edges, None if table.ports is None else table.ports[rows])


def _cyclic_tables(topo: Topology, members: Sequence[int], segs: Sequence[Segment],
                   rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]], free: dict[int, bool],
                   pairs: int, caches: CollectiveCaches | None) -> list[_Cyclic]:
    """Per channel pair the hops round the ring across nodes, routed (kept in ``caches``: see ``CYCLIC_BYTES``;
    none: computed afresh)."""
    of, reps = kinds(topo, segs)
    key = (tuple(members), pairs, tuple((rings[r.node][0][0], free[r.node]) for r in reps))
    memo, held = ({}, [0]) if caches is None else (caches.cyclic, caches.cyclic_bytes)
    hit = memo.pop(key, None)
    if hit is not None:
        memo[key] = hit  # the most recently used last
        return hit
    nic_index = {nic: i for i, nic in enumerate(topo.nics)}
    out = []
    for channel, row in enumerate(ring_channel_pairs(topo, reps, pairs)):
        nic_of_node = {seg.node: nic_index[row[k][0]] for seg, k in zip(segs, of)}
        seqs = []
        for backwards in (False, True):
            local = [np.asarray(node_order(topo, rep, rings[rep.node][0][0], entry, nic, free[rep.node], backwards),
                                dtype=np.int64) - _base(topo, rep) for rep, (nic, entry) in zip(reps, row)]
            seqs.append(_spread(topo, segs, of, local))
        n = len(seqs[0])
        src = np.concatenate(seqs)
        dst = np.concatenate([np.concatenate((q[1:], q[:1])) for q in seqs])
        # the pair's two channels, one each way round, are two NCCL channels: connections of their own
        conn = np.repeat(np.array([2 * channel, 2 * channel + 1], dtype=np.int64), [len(q) for q in seqs])
        table = _table(topo, src, dst, np.ones(len(src)), nic_of_node, conn)
        per = None
        if len(table) != len(src):  # queue pairs: a hop across nodes is k rows
            per = np.where(src // topo.gpus_per_node != dst // topo.gpus_per_node, qps_per_connection(topo), 1)
        for a in (table.src, table.dst, table.inter, table.overhead, table.indptr, table.edges, table.ports):
            if a is not None:
                a.setflags(write=False)  # shared by every collective of the group: never changed in place
        out.append(_Cyclic(table, per, n, (seqs[0], seqs[1])))
    size = sum(c.nbytes() for c in out)
    memo[key] = out
    held[0] += size
    while held[0] > CYCLIC_BYTES and len(memo) > 1:
        old = memo.pop(next(iter(memo)))
        held[0] -= sum(c.nbytes() for c in old)
    return out


def _op_table(c: _Cyclic, op: str, root: int, half: float) -> HopTable:
    """One collective's hops of a channel pair from its cyclic table: the whole ring, or a chain's ``n - 1``
    hops each way (:func:`_chain_arrays`: from the root on, or ending at it), each carrying ``half``."""
    hops = None
    if op in ("Broadcast", "Reduce"):
        shift = 1 if op == "Reduce" else 0  # a Reduce's chain ends at the root
        hops = np.concatenate([d * c.n + (int(np.flatnonzero(q == root)[0]) + shift + np.arange(c.n - 1)) % c.n
                               for d, q in enumerate(c.seqs)])
    if c.per is None:
        table = c.table if hops is None else _take(c.table, hops)
        return replace(table, coef=np.full(len(table), half))
    per = c.per if hops is None else c.per[hops]
    if hops is None:
        table = c.table
    else:
        starts = np.cumsum(c.per) - c.per
        first = np.repeat(np.cumsum(per) - per, per)
        table = _take(c.table, np.repeat(starts[hops], per) + np.arange(int(per.sum()), dtype=np.int64) - first)
    # as _table splits a hop's share over its queue pairs
    return replace(table, coef=np.repeat(np.full(len(per), half) / per, per))


def ring_tables(topo: Topology, op: str, members: Sequence[int], segs: Sequence[Segment],
                rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]], free: dict[int, bool],
                pairs: int, caches: CollectiveCaches | None = None) -> list[HopTable]:
    """:func:`ring_hops` as tables: the hops of each flow, in the same order.

    Across nodes each channel pair's hops round the ring are routed once per group (:func:`_cyclic_tables`, kept
    in ``caches``) and every collective takes its own from them: a chain's are the ring's less one hop each way."""
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
    return [_op_table(c, op, root, half) for c in _cyclic_tables(topo, members, segs, rings, free, pairs, caches)]


def ring_hops(topo: Topology, op: str, members: Sequence[int], segs: Sequence[Segment],
              rings: dict[int, tuple[tuple[tuple[int, ...], float], ...]], free: dict[int, bool],
              pairs: int) -> list[list[Hop]]:
    """The hops of each flow, per byte of its share: one flow inside a node, one per channel pair across nodes.

    ``rings[node]`` is the node segment's ring mix (local GPU indices); a group on one
    node uses the whole mix in every pair, a group across nodes the mix's first ring.
    """
    return [list(t.hops()) for t in ring_tables(topo, op, members, segs, rings, free, pairs)]
