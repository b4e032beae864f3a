"""AllToAll and send/recv as NCCL runs them: grouped point-to-point operations.

NCCL has no AllToAll primitive: nccl-tests' ``alltoall_perf`` (and every framework's expert
dispatch) calls ``ncclSend`` / ``ncclRecv`` to every peer inside one ``ncclGroupStart/End``, and
``sendrecv_perf`` sends to rank + 1 and receives from rank - 1 (nccl-tests ``src/alltoall.cu``,
``src/sendrecv.cu``); pipeline stages exchange activations and gradients with ``ncclSend`` /
``ncclRecv`` pairs.  So both are a set of (sender, receiver, bytes) transfers that run at once:

* **AllToAll** over ``n`` ranks with a buffer of ``S`` bytes per rank: each rank sends ``S/n`` to
  every other rank (its own ``S/n`` is a local copy, no link); nccl-tests reports
  ``busbw = algbw x (n-1)/n``.
* **SendRecv** over ``n`` ranks: each rank sends its whole buffer to the next (``n = 2``: both ways,
  a pipeline boundary's activations forward and gradients back); ``busbw = algbw``.

Routes are the fabric's, as NCCL's proxies use it: inside a node the GPUs' own path (NVLink /
NVSwitch, or PCIe); across nodes, with PXN (``NCCL_PXN_DISABLE=0`` and ``NCCL_P2P_PXN_LEVEL=2``,
the defaults: ``src/graph/paths.cc``, ``src/graph/search.cc`` ncclTopoGetNetDev), the sender moves
the data over NVLink to the GPU of its node with the receiver's local index (the GPU whose NIC is on
the receiver's rail) and that GPU's NIC sends it, so a rail-optimised network keeps it inside the
rail switch; without NVLink to that GPU (no PXN path) the sender's own NIC sends.  Each pair across
nodes opens ``channels per peer`` connections (one per p2p channel, ``src/transport/net.cc``), each
with the transport's queue pairs, and a fabric with ECMP hashes each apart (salted by the pair and
channel, as :mod:`.ring` salts its connections).

Every transfer of the group is one fluid flow: they start together (one group launch) and the
group ends when the last transfer does, so the flow moves at the pace of its most loaded link, and
the step's other flows (other groups, other collectives of the step) contend on the same links.
Protocol: Simple (``src/device/sendrecv.h``; LL only below ``NCCL_P2P_LL_THRESHOLD``, 16 KiB per
peer, which the latency term rules there anyway).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..topology import Topology
from ..topology.settings import ModelRates
from .binding import CAP_NET, CAP_WINDOW
from .latency import step_latencies
from .nccl_tables import NCCL_STEPS, base_latency
from .pattern import Collective, Flow, HopTable
from .hops.ring import qps_per_connection

__all__ = ["P2P_OPS", "P2P_ALGO", "P2P_PROTO", "p2p_pairs", "p2p_bus_factor", "channels_per_peer", "p2p_chunk",
           "p2p_collective", "pxn_proxy"]

P2P_OPS = ("AllToAll", "SendRecv")
P2P_ALGO = "p2p"  # what reports name the "algorithm": NCCL's p2p kernels, not a collective algorithm
P2P_PROTO = "Simple"  # sendrecv.h runs Simple (LL only below NCCL_P2P_LL_THRESHOLD = 16 KiB, enqueue.cc)

GB = 1e9
# NCCL_P2P_NET_CHUNKSIZE 128 KiB, NCCL_P2P_NVL_CHUNKSIZE 512 KiB, NCCL_P2P_PCI_CHUNKSIZE 128 KiB (src/init.cc:
# computeBuffSizes: the net chunk whenever the communicator spans nodes, the NVLink one when all paths are NVLink)
P2P_NET_CHUNK = 1 << 17
P2P_NVL_CHUNK = 1 << 19
P2P_PCI_CHUNK = 1 << 17
# NCCL_P2P_PER_CHANNEL_NET_BW 14 GB/s: the rate NCCL assumes one p2p channel reaches on the network; it opens
# max(local NICs, ceil(NIC GB/s / 14)) channels per remote peer (ncclTopoGetNchannels, src/graph/paths.cc)
P2P_PER_CHANNEL_NET_BW = 14.0
# NCCL_MAX_DEV_WORK_P2P_PER_BATCH 8 (src/include/device.h): p2p operations one channel runs at once
P2P_PER_BATCH = 8
# MAXCHANNELS 64 (src/include/device.h): NCCL_MAX_P2P_NCHANNELS' default
MAX_CHANNELS = 64


def p2p_pairs(op: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sender index, receiver index, bytes per byte of a rank's buffer) of each transfer, members by index.

    >>> [a.tolist() for a in p2p_pairs("SendRecv", 3)]
    [[0, 1, 2], [1, 2, 0], [1.0, 1.0, 1.0]]
    >>> s, d, c = p2p_pairs("AllToAll", 4); len(s), float(c[0])
    (12, 0.25)
    """
    idx = np.arange(n, dtype=np.int64)
    if op == "SendRecv":  # sendrecv_perf: rank r sends to r + 1, receives from r - 1 (n = 2: both ways)
        return idx, (idx + 1) % n, np.ones(n)
    if op != "AllToAll":
        raise ValueError(f"{op} is not a point-to-point collective ({', '.join(P2P_OPS)})")
    # every rank to every other, in rank order (a rank's own chunk is a local copy: no link carries it), built
    # without the n x n pairs and their mask: the receivers 0..n-2 of each sender, those from the sender on one up
    src = np.repeat(idx, n - 1)
    dst = np.tile(idx[:-1], n)
    dst += dst >= src
    return src, dst, np.full(n * (n - 1), 1.0 / n)


def p2p_bus_factor(op: str, n: int) -> float:
    """nccl-tests' busbw / algbw: (n-1)/n for alltoall (src/alltoall.cu), 1 for sendrecv (src/sendrecv.cu)."""
    return (n - 1) / n if op == "AllToAll" else 1.0


def _pow2_up(x: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, x))))


def _p2p_channels(comm_channels: int) -> int:
    """The communicator's p2p channels: its channels, at most NCCL_MAX_P2P_NCHANNELS, a power of two
    (ncclTopoComputeP2pChannels, src/graph/paths.cc)."""
    return _pow2_up(min(comm_channels, MAX_CHANNELS))


def channels_per_peer(topo: Topology, members: Sequence[int], comm_channels: int) -> int:
    """p2p channels NCCL gives each peer of a group across nodes (each a network connection of its own).

    ``max(local NICs, ceil(NIC bandwidth / 14 GB/s))`` (ncclTopoGetNchannels), a power of two, halved while
    that many per peer for all peers would need more rounds than one (``perPeer x ceil(peers / 8) >
    p2pnChannels``, ncclTopoComputeP2pChannels, ``src/graph/paths.cc``).  Inside a node (no connection to
    hash) NCCL gives each NVLink peer ``2 x links`` channels; the links, not the channels, bind there.
    """
    gpn = topo.gpus_per_node
    p2p = _p2p_channels(comm_channels)
    local = members[0] % gpn
    nics = topo.router.local_nics(local)
    if len({m // gpn for m in members}) == 1 or not nics:
        return min(p2p, 2)
    # the NIC's rate: its cable to the network (the first edge past the NIC on a route out of the node)
    cable = topo.router.via_parts(local, nics[0], nics[0], local)[0][-1]
    net_gbps = len(nics) * float(topo.capacity[cable]) / GB
    per = _pow2_up(max(len(nics), math.ceil(net_gbps / P2P_PER_CHANNEL_NET_BW)))
    while per * math.ceil(len(members) / P2P_PER_BATCH) > p2p and per > 1:
        per //= 2
    return per


def p2p_chunk(nodes: int, all_nvlink: bool, per_connection: float) -> int:
    """The p2p chunk NCCL moves per step: the net chunk across nodes, else NVLink's or PCI's, a quarter of it
    when a connection carries less than one chunk and half below eight (enqueue.cc's p2p chunking)."""
    chunk = P2P_NET_CHUNK if nodes > 1 else P2P_NVL_CHUNK if all_nvlink else P2P_PCI_CHUNK
    if per_connection < chunk:
        return chunk // 4
    if per_connection < NCCL_STEPS * chunk:
        return chunk // 2
    return chunk


def pxn_proxy(topo: Topology, src: int, dst: int, pxn: bool = True) -> int:
    """The GPU whose NIC sends ``src``'s data to ``dst`` on another node: with PXN the GPU of ``src``'s node
    with ``dst``'s local index when NVLink joins it to ``src`` (ncclTopoGetNetDev with P2P_PXN_LEVEL 2, and
    ncclTopoGetIntermediateRank: the path must be NVLink), else ``src`` itself."""
    gpn = topo.gpus_per_node
    a, b = src % gpn, dst % gpn
    if not pxn or a == b or topo.router.intra_type(a, b) != "NVL":
        return src
    return src - a + b


def _local_pairs(a: np.ndarray, b: np.ndarray, gpn: int) -> list[tuple[int, int]]:
    """The distinct (a, b) among the pairs of local indices, in order."""
    return [divmod(int(k), gpn) for k in np.unique(a * gpn + b)]


def _nic_indices(topo: Topology, local: np.ndarray) -> np.ndarray:
    """Per local GPU index, its default NIC's index into ``topo.nics`` (router.nic_of), for the ``local`` asked;
    -1 elsewhere."""
    nic_index = {nic: i for i, nic in enumerate(topo.nics)}
    out = np.full(topo.gpus_per_node, -1, dtype=np.int64)
    for a in local.tolist():
        out[a] = nic_index[topo.router.nic_of(a)]
    return out


def p2p_collective(topo: Topology, rates: ModelRates, op: str, members: Sequence[int], nbytes: float,
                   comm_channels: int, pxn: bool = True) -> Collective:
    """The point-to-point collective ``op`` over ``members`` with ``nbytes`` per rank (see the module docstring)."""
    members = tuple(int(m) for m in members)
    n = len(members)
    gpn = topo.gpus_per_node
    si, di, coef = p2p_pairs(op, n)
    arr = np.asarray(members, dtype=np.int64)
    src, dst = arr[si], arr[di]
    nodes = len({m // gpn for m in members})
    per = channels_per_peer(topo, members, comm_channels)
    inter = src // gpn != dst // gpn
    # with PXN, the leg over NVLink to the rail-matched GPU, then that GPU's NIC (pxn_proxy); asked once per
    # (local sender, local receiver) met, not per pair (an AllToAll has n x (n - 1) pairs: arrays, not lists)
    local_src, local_dst = src % gpn, dst % gpn
    met = _local_pairs(local_src[inter], local_dst[inter], gpn)
    proxy_local = np.arange(gpn, dtype=np.int64)[:, None].repeat(gpn, axis=1)
    for a, b in met:
        proxy_local[a, b] = pxn_proxy(topo, a, b, pxn)
    proxy = np.where(inter, src - local_src + proxy_local[local_src, local_dst], src)
    legs = inter & (proxy != src)
    # each pair across nodes: `per` connections, each of the transport's queue pairs, salted apart for ECMP
    k = qps_per_connection(topo)
    split = np.where(inter, per * k, 1)
    rows = np.repeat(np.arange(len(src)), split)
    sub = np.arange(int(split.sum()), dtype=np.int64) - np.repeat(np.cumsum(split) - split, split)
    r_src, r_dst = np.where(inter[rows], proxy[rows], src[rows]), dst[rows]
    r_coef = coef[rows] / split[rows]
    nic = _nic_indices(topo, np.union1d(np.unique(r_src % gpn), np.unique(r_dst % gpn)))
    x, y = nic[r_src % gpn], nic[r_dst % gpn]
    salt = rows * per * k + sub  # the pair's index in the group, then its connection and queue pair
    indptr, edges = topo.router.route_table(r_src, r_dst, x, y, salt)
    tables = [HopTable(r_src, r_dst, r_coef, inter[rows], np.ones(len(rows)), indptr, edges)]
    if legs.any():  # the NVLink legs to the proxies, whole pairs' bytes each
        ls, lp = src[legs], proxy[legs]
        lptr, ledges = topo.router.route_table(ls, lp)
        tables.append(HopTable(ls, lp, coef[legs], np.zeros(len(ls), dtype=bool), np.ones(len(ls)), lptr, ledges))
    table = HopTable.concat(tables)
    e, c = table.load()
    # latency: one kernel's base (NCCL's tuning model has no p2p entry; its ring/Simple base, tuning.cc) plus a
    # step per round of peers: p2pnChannels / perPeer channels groups of 8 operations each run at once (enqueue.cc)
    rounds = math.ceil((n - 1) / max(1, _p2p_channels(comm_channels) // per * P2P_PER_BATCH)) if op == "AllToAll" else 1
    route_lat = table.route_latencies(topo.latency)
    all_nvlink = all(topo.router.intra_type(a, b) == "NVL" for a, b in _local_pairs(local_src[~inter],
                                                                                      local_dst[~inter], gpn))
    intra_hw = "nvlink" if all_nvlink else "pci"
    nccl = topo.spec.nccl
    step = rates.step_latency if rates.step_latency is not None else nccl.step_latency
    intra, inter_step = step_latencies("ring", P2P_PROTO, n, nodes, intra_hw, route_lat[0], route_lat[1],
                                       nccl.transport, step, nccl.arch)
    per_round = inter_step if nodes > 1 else intra
    latency = (base_latency("ring", P2P_PROTO) * 1e-6 + rounds * per_round + (rates.launch or 0.0) * 1e-6)
    # the pipeline's window per network connection: NCCL_STEPS chunks in flight over a step's round trip
    caps: tuple[tuple[float, float], ...] = ()
    kinds: tuple[str, ...] = ()
    if nodes > 1 and inter.any():
        per_conn = nbytes * float(coef[inter].max()) / per
        chunk = p2p_chunk(nodes, all_nvlink, per_conn)
        window = NCCL_STEPS * chunk / (2 * inter_step) if inter_step > 0 else math.inf
        load = float(coef[inter].max()) / per  # a connection's bytes per byte of a rank's buffer
        # each p2p channel's connection carries at most NCCL_P2P_PER_CHANNEL_NET_BW: the rate NCCL's own channel
        # count assumes of one (ncclTopoGetNchannels opens ceil(NIC GB/s / 14) per peer to fill a NIC), so with
        # one channel per peer (p2pnChannelsPerPeer halved for many peers, ncclTopoComputeP2pChannels) a peer
        # gets 14 GB/s, not its NIC
        caps, kinds = ((P2P_PER_CHANNEL_NET_BW * GB, load),), (CAP_NET,)
        if math.isfinite(window):
            caps, kinds = caps + ((window, load),), kinds + (CAP_WINDOW,)
    flow = Flow(1.0, per, e, c, table, caps, kinds)
    coll = Collective(P2P_ALGO, P2P_PROTO, op, members, nodes, per, (flow,), latency, p2p_bus_factor(op, n))
    return Collective(P2P_ALGO, P2P_PROTO, op, members, nodes, per, (flow,), latency, p2p_bus_factor(op, n), (),
                      (latency, coll.algbw(topo.capacity)))
