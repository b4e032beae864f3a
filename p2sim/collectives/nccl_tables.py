"""NCCL's tuning constants, as ``src/graph/tuning.cc``, ``src/graph/search.cc`` and ``src/graph/topo.h`` state them.

Figures only (NCCL 2.2x master, read through the public source); the code that uses
them is p2sim's own.  Latencies are microseconds, bandwidths GB/s.  Tables indexed by
GPU generation use :data:`~p2sim.topology.settings.ARCHS` order (NCCL's compCapIndex:
Volta, Ampere, Hopper, Blackwell); tables indexed by node count use NCCL's
``index2`` (1 node, 2 nodes, more).

Examples
--------
>>> base_latency("ring", "Simple"), hw_latency("net", "tree", "LL")
(8.4, 5.0)
>>> per_channel_tree_bw("hopper", 5), ll_max_bw("ampere", 1)
(36.0, 87.7)
"""

from __future__ import annotations

import math

from ..util.algorithms import NCCL_ORDER

__all__ = [
    "ALGOS", "PROTOS", "base_latency", "hw_latency", "ll_max_bw", "per_channel_ring_ll128_bw",
    "per_channel_tree_ll128_bw", "per_channel_tree_bw", "per_channel_nvls_tree_bw", "nvls_efficiency",
    "tree_correction", "top_channel_speed", "NVLS_CHANNELS", "NET_OVERHEAD_US", "COLLNET_ARITY_US",
    "COLLNET_DIRECT_EFFICIENCY", "COLLNET_RAIL_EFFICIENCY", "COLLNET_MAX_LOCAL", "NCCL_STEPS", "LL_STEP_DATA",
    "LL128_STEP_DATA", "NVLS_CHANNELS_ONE_DOMAIN", "NVLS_MAX_ARITY", "nvls_tree_channels", "nvls_head_speed",
    "COLLNET_THREADS", "COLLNET_THREAD_THRESHOLD", "COLLNET_CHAIN_CHUNK", "collnet_channels", "collnet_chain_channels",
    "collnet_direct_channels", "collnet_chunk",
    "MAX_THREADS", "THREAD_THRESHOLD", "WARP", "MIN_TRAFFIC_PER_CHANNEL", "traffic_per_byte", "ll128_over_network",
    "net_graph_channels",
]

# NCCL's order of the algorithms p2sim models (NCCL_ALGO_TREE .. NCCL_ALGO_NVLS_TREE in src/include/device.h)
ALGOS = NCCL_ORDER  # tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree
PROTOS = ("LL", "LL128", "Simple")  # NCCL_PROTO values, in NCCL's order

_ARCH = {"volta": 0, "ampere": 1, "hopper": 2, "blackwell": 3}

# baseLatencies [algorithm][LL, LL128, Simple]
_BASE = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0),
         "collnet_direct": (0.0, 0.0, 0.0), "collnet_chain": (0.0, 0.0, 0.0)}

# hwLatencies [NVLINK | PCI | NET][algorithm][LL, LL128, Simple]: per-step hardware latency
# (CollNet runs Simple only: NCCL's LL and LL128 entries are unused)
_HW = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0, 0, 25.0), "nvls_tree": (0, 0, 25.0),
               "collnet_direct": (0, 0, 3.7), "collnet_chain": (0, 0, 2.8)},
    "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "nvls": (0, 0, 0), "nvls_tree": (0, 0, 0),
            "collnet_direct": (0, 0, 3.7), "collnet_chain": (0, 0, 2.8)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0, 0, 18.0), "nvls_tree": (0, 0, 20.9),
            "collnet_direct": (0, 0, 31.0), "collnet_chain": (0, 0, 30.0)},
}

# CollNet Direct: per local peer, NCCL's "arity serialization" latency (us) and the share of
# its bandwidth estimate on Hopper and later (tuning.cc: busBw *= .85 for compCap >= 90)
COLLNET_ARITY_US = 0.4
COLLNET_DIRECT_EFFICIENCY = {"volta": 1.0, "ampere": 1.0, "hopper": 0.85, "blackwell": 0.85}
# CollNet Direct AllGather / ReduceScatter: the share of the network's bandwidth NCCL counts
# (tuning.cc ncclTopoTuneModel: busBw = ppn * min(bwIntra, bwInter * 0.9)), every GPU generation
COLLNET_RAIL_EFFICIENCY = 0.9
# at most this many GPUs per node for CollNet (NCCL_MAX_DIRECT_ARITY + 1, enqueue.cc)
COLLNET_MAX_LOCAL = 8

# CollNet at run time (src/enqueue.cc topoGetAlgoInfo, calcCollChunking): both CollNets run NCCL_MAX_NTHREADS
# threads per channel (tuning.cc: maxThreads[COLLNET_*][SIMPLE] = NCCL_MAX_NTHREADS) and drop channels below
# 512 bytes per thread (tuning.cc: threadThresholds[COLLNET_*][SIMPLE] = 512); Chain's chunk is at most
# 256 KiB (calcCollChunking: chunkSize = min(256 * 1024, stepSize)), Direct's one Simple step
COLLNET_THREADS = 640
COLLNET_THREAD_THRESHOLD = 512
COLLNET_CHAIN_CHUNK = 256 * 1024
_MAXCHANNELS = 64  # MAXCHANNELS (src/include/device.h)

# llMaxBws [Volta, Ampere, Hopper, Blackwell][1 node, 2 nodes, more]: the LL protocol's
# total bus bandwidth.  On several nodes NCCL keys the row on the CPU vendor instead
# (row 0 Intel, row 1 AMD); p2sim assumes Intel hosts there.
_LL_MAX = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
# per-channel bus bandwidth caps [arch][1 node, 2 nodes, more]
_RING_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
_TREE_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
# Blackwell's rows before NCCL 2.28.3, twice Hopper's (tuning.cc of 2.26.2 .. 2.27.7: {2*38.7, 2*41.4, 2*36.0},
# {2*36.7, 2*36.7, 2*29.0}); 2.28.3 replaced them with the rows above, a third of them at 4 nodes and more
_TREE_BLACKWELL_BEFORE_2_28 = (77.4, 82.8, 72.0)
_TREE_LL128_BLACKWELL_BEFORE_2_28 = (73.4, 73.4, 58.0)
_NVLS_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))

# nvlsEfficiency: the share of NVLink bandwidth NVLink SHARP reductions achieve
_NVLS_EFF = (0.0, 0.0, 0.85, 0.74)

# treeCorrectionFactor [LL, LL128, Simple][log2(bytes / 64)]: trees "are not perfectly
# sticking to the model for medium sizes" (NCCL's comment); 64 B .. 256 MiB
_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)

# the fastest speed NCCL's topology search gives one channel inside a node
# (speedArrayIntra, sm90SpeedArrayIntra, sm100SpeedArrayIntra in src/graph/search.cc)
_TOP_SPEED = (40.0, 40.0, 60.0, 90.0)

# NVLS channels (src/transport/nvls.cc): NVLS_NCHANNELS_SM90 16; on Blackwell
# NVLS_NCHANNELS_SM100_NVL 24 inside one NVLink domain and NVLS_NCHANNELS_SM100 32 across them
NVLS_CHANNELS = {"hopper": 16, "blackwell": 32}
NVLS_CHANNELS_ONE_DOMAIN = {"hopper": 16, "blackwell": 24}

# NCCL_MAX_NVLS_ARITY (src/include/device.h; 8 in v2.19, 32 since v2.21): the NVLS search finds at most
# this many heads (graph channels) in one NVLink domain (ncclTopoCompute, src/graph/search.cc)
NVLS_MAX_ARITY = 32

# the speeds (GB/s per channel) NCCL's search walks down across nodes: sm90SpeedArrayInter and
# sm100SpeedArrayInter (src/graph/search.cc); NVLS's search charges each of its channels on every GPU's
# NVLink and twice on its head's (ncclTopoSearchTryNvls), and keeps lowering the speed while that finds
# more channels ("the more the better", ncclTopoCompareGraphs)
_NVLS_SPEEDS = {
    "hopper": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    "blackwell": (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
                  2.4, 1.2, 0.24, 0.12),
}

# The pipeline (src/include/device.h, src/init.cc, src/include/collectives.h, src/enqueue.cc):
# a connection's buffer holds NCCL_STEPS steps; LL steps carry 32 KiB of data (8 lines x 512
# threads x 16 B per step, half of it flags), LL128 steps 576,000 B (120 elements x 640 threads x
# 8 B, 15/16 of it data); a Simple step is NCCL_BUFFSIZE / NCCL_STEPS.  Ring AllReduce,
# ReduceScatter and AllGather move Simple chunks of NCCL_STEPS / 2 steps; every other
# (algorithm, protocol) chunks one step (NVLS's chunk is a setting: NcclSettings.nvls_chunksize).
NCCL_STEPS = 8
LL_STEP_DATA = 32768
LL128_STEP_DATA = 576000

# Threads a channel (one CTA) runs at most per protocol: NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640,
# NCCL_SIMPLE_MAX_NTHREADS 512 (src/include/device.h; comm->maxThreads in ncclTopoTuneModel, src/graph/tuning.cc),
# and the bytes per thread below which enqueue.cc's topoGetAlgoInfo drops a channel, then halves the threads:
# NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD 8, 8, 64 (src/include/comm.h; a ring's LL threshold is x nRanks, tuning.cc)
MAX_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}
WARP = 32  # WARP_SIZE: threads are halved, and a ring's Simple sync warp added, a warp at a time
# scheduleCollTasksToPlan (src/enqueue.cc): MinTrafficPerChannel, the least traffic the scheduler gives a channel
MIN_TRAFFIC_PER_CHANNEL = 32768

# network post overhead per step of an inter-node ring, x3 for Simple (getNetOverhead, Intel hosts)
NET_OVERHEAD_US = 1.0


def traffic_per_byte(op: str, ranks: int, proto: str) -> int:
    """Traffic per byte of a rank's count that NCCL's scheduler spreads over channels (``ncclFuncTrafficPerByte``,
    src/enqueue.cc: 2 for AllReduce, nRanks for AllGather / ReduceScatter, else 1; x4 for LL's flags and lines,
    scheduleCollTasksToPlan)."""
    t = 2 if op == "AllReduce" else ranks if op in ("AllGather", "ReduceScatter") else 1
    return 4 * t if proto == "LL" else t


def ll128_over_network(path: str | None, arch: str, p2c: bool) -> bool:
    """Whether NCCL enables LL128 by default across nodes whose GPUs reach a NIC by a ``path`` of this type (the
    graph's typeInter; None: no NIC), ``p2c`` whether the job's NCCL knows Grace's C2C path (2.27.3 and later).

    tuning.cc (2.26.2): ``typeInter <= PATH_PXB || (minCompCap >= 90 && typeInter <= PATH_PXN)``; through a CPU
    (PHB, SYS) never.  2.27.3 added PATH_P2C, a GPU's C2C link to its Grace and that CPU's PCIe to the NIC, and
    LL128 up to it on Hopper and later (NCCL_LL128_C2C, default 1; release notes: "Add support for P2C (PXN over
    C2C) and the LL128 protocol"); before, that path was PHB (paths.cc), so a GB200 rack's NICs behind its Grace
    CPUs left LL128 off between racks.  (PXN, a peer's NIC over NVLink, is never a node's nearest path: a GPU
    nearer that NIC has it at PIX or PXB.)

    >>> ll128_over_network("PXB", "ampere", False), ll128_over_network("PHB", "hopper", True)
    (True, False)
    >>> ll128_over_network("P2C", "blackwell", False), ll128_over_network("P2C", "blackwell", True)
    (False, True)
    """
    if path is None or path in ("NVL", "PIX", "PXB"):
        return True
    return path == "P2C" and p2c and _ARCH[arch] >= _ARCH["hopper"]


def _proto(proto: str) -> int:
    return PROTOS.index(proto)


def _nodes(nodes: int) -> int:
    return min(nodes, 3) - 1


def base_latency(algo: str, proto: str) -> float:
    """NCCL's base latency (us) of one collective."""
    return _BASE[algo][_proto(proto)]


def hw_latency(hw: str, algo: str, proto: str) -> float:
    """NCCL's hardware latency (us) per step over ``nvlink``, ``pci`` or ``net``."""
    return float(_HW[hw][algo][_proto(proto)])


def ll_max_bw(arch: str, nodes: int) -> float:
    """The LL protocol's most bus bandwidth (GB/s) for a whole collective."""
    row = _ARCH[arch] if nodes == 1 else 0
    return _LL_MAX[row][_nodes(nodes)]


def per_channel_ring_ll128_bw(arch: str, nodes: int) -> float:
    return _RING_LL128[_ARCH[arch]][_nodes(nodes)]


def per_channel_tree_ll128_bw(arch: str, nodes: int, before_2_28: bool = False) -> float:
    """Bus bandwidth (GB/s) one tree channel reaches with LL128 (``before_2_28``: the figure NCCL before 2.28.3
    had for Blackwell)."""
    if before_2_28 and arch == "blackwell":
        return _TREE_LL128_BLACKWELL_BEFORE_2_28[_nodes(nodes)]
    return _TREE_LL128[_ARCH[arch]][_nodes(nodes)]


def per_channel_tree_bw(arch: str, nodes: int, before_2_28: bool = False) -> float:
    """Bus bandwidth (GB/s) one tree channel (both of its trees) reaches with Simple (``before_2_28``: the
    figure NCCL before 2.28.3 had for Blackwell, three times today's from 4 nodes).

    >>> per_channel_tree_bw("blackwell", 20), per_channel_tree_bw("blackwell", 20, before_2_28=True)
    (24.0, 72.0)
    """
    if before_2_28 and arch == "blackwell":
        return _TREE_BLACKWELL_BEFORE_2_28[_nodes(nodes)]
    return _TREE[_ARCH[arch]][_nodes(nodes)]


def per_channel_nvls_tree_bw(arch: str, nodes: int) -> float:
    return _NVLS_TREE[_ARCH[arch]][_nodes(nodes)]


def nvls_efficiency(arch: str) -> float:
    return _NVLS_EFF[_ARCH[arch]]


def nvls_head_speed(arch: str, heads: int, nvlink_gbps: float) -> tuple[int, float]:
    """NCCL's NVLS search on a GPU with ``nvlink_gbps`` of NVLink (NCCL's count: links x 40.1 GB/s on
    Blackwell, x 20.6 on Hopper, topo.h) wanting ``heads`` heads: the heads it finds and the speed
    (``bwIntra``) it settles at, the fastest of its speeds at which every head's channel fits, (heads + 1)
    x speed <= NVLink (each channel on every GPU, twice on its head's); where none does, the heads that
    fit at its slowest speed.

    >>> nvls_head_speed("blackwell", 32, 18 * 40.1), nvls_head_speed("hopper", 8, 18 * 20.6)
    ((32, 20.0), (8, 40.0))
    """
    speeds = _NVLS_SPEEDS.get(arch, _NVLS_SPEEDS["hopper"])
    for s in speeds:
        if (heads + 1) * s <= nvlink_gbps + 1e-9:
            return heads, s
    return max(0, min(heads, int(nvlink_gbps / speeds[-1]) - 1)), speeds[-1]


# speedArrayInter (src/graph/search.cc): the speeds the search walks down across nodes before Hopper
_INTER_SPEEDS = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24,
                 0.12)


def net_graph_channels(arch: str, nics: int, nic_gbps: float, nvlink_gbps: float) -> int:
    """Graph channels NCCL's ring (and tree) search finds across nodes whose ``nics`` NICs run ``nic_gbps`` and
    whose GPUs have ``nvlink_gbps`` of NVLink to their switch (NCCL's count: topo.h), one channel a NIC.

    ncclTopoCompute (src/graph/search.cc) starts at the fastest of the generation's inter-node speeds the
    path to a NIC carries (``maxBw``), sets ``bwIntra = bwInter`` to it, and a ring channel charges that
    speed on every GPU's NVLink (ncclTopoFollowPath), so a speed fits at most ``nvlink / speed`` channels;
    it keeps the graph of the most ``nChannels x bw`` (the first among equals: ncclTopoCompareGraphs) while
    the next speed is above 0.49 of the best's.  An 8-GPU node with 8 NICs keeps one channel a NIC (a DGX
    H100 at 45 GB/s: 8 fit, 7 at 48); a GB200 rack with 72 NICs fits 16 at 45.1 GB/s on 18 x 40.1 GB/s of
    NVLink -- not 72: ncclTopoDupChannels does not double them (below 50 GB/s, more than 4 channels, SM90 and
    later), connect.cc does (32 channels).  (NCCL 2.26 counted 40.0 GB/s a link and walked 48, 45: 15 at 48,
    and 16 x 45 no more, a tie that keeps the first; 2.27.3 starts at 47.9 (15 x 47.9 < 16 x 45) and later
    releases count 40.1 and walk 45.1: 16 -- 2.27.3's release notes' "Increase to 16 the number of NICs used
    to communicate between MNNVL domains on GB200 systems".  p2sim follows the newest.)

    >>> net_graph_channels("blackwell", 72, 50.0, 18 * 40.1), net_graph_channels("hopper", 8, 50.0, 18 * 20.6)
    (16, 8)
    >>> net_graph_channels("blackwell", 8, 50.0, 18 * 40.1), net_graph_channels("ampere", 8, 25.0, 12 * 20.0)
    (8, 8)
    """
    if nics <= 0 or not math.isfinite(nvlink_gbps):
        return max(nics, 1)
    speeds = _NVLS_SPEEDS.get(arch, _INTER_SPEEDS)
    best_n, best_bw = 0, 0.0
    for s in speeds:
        if s > nic_gbps + 1e-9:
            continue  # maxBw: the path to a NIC carries no more
        if best_n and not s / best_bw > 0.49:
            break
        n = min(nics, int(nvlink_gbps / s + 1e-9))
        if n * s > best_n * best_bw + 1e-9:
            best_n, best_bw = n, s
    return max(best_n, 1)


def nvls_tree_channels(arch: str, nodes: int, ppn: int, nic_gbps: float) -> int:
    """NVLS channels (CTAs) NCCL runs for NVLS Tree across ``nodes`` NVLink domains of ``ppn`` GPUs whose
    slowest NIC runs ``nic_gbps``: NVLS_NCHANNELS_SM90 / _SM100 (src/transport/nvls.cc), which on
    Blackwell ncclNvlsTreeSm100Tuning overrides by NIC speed and GPUs per node: 32 at 2 nodes with a NIC
    of 48 GB/s or more; from 96 GB/s, 24 up to 8 GPUs per node else 32; from 48 GB/s, 24.

    >>> nvls_tree_channels("blackwell", 2, 72, 50.0), nvls_tree_channels("blackwell", 4, 72, 50.0)
    (32, 24)
    >>> nvls_tree_channels("blackwell", 4, 8, 100.0), nvls_tree_channels("blackwell", 4, 8, 25.0)
    (24, 32)
    >>> nvls_tree_channels("hopper", 4, 8, 50.0)
    16
    """
    channels = NVLS_CHANNELS[arch]
    if arch == "blackwell" and nodes > 1:
        if nodes == 2 and nic_gbps >= 48.0:
            channels = 32
        elif nic_gbps >= 96.0:
            channels = 24 if ppn <= 8 else 32
        elif nic_gbps >= 48.0:
            channels = 24
    return channels


def collnet_channels(full: int, ppn: int) -> int:
    """``comm->nChannels`` with CollNet on, from the ring's ``full`` channels: half again where a node has more
    than one GPU (connect.cc ncclTopoPostset: "add more channels to saturate intra-node bandwidth, except the
    1 PPN case", when the chain graph's bwIntra exceeds its bwInter -- assumed: NVLink faster than a NIC).
    Both CollNets start from it (topoGetAlgoInfo: ``nc = comm->nChannels``).

    >>> collnet_channels(16, 8), collnet_channels(16, 1), collnet_channels(48, 8)
    (24, 16, 64)
    """
    return min(_MAXCHANNELS, full + full // 2) if ppn > 1 else full


def collnet_chain_channels(channels: int, nbytes: float) -> int:
    """CollNet Chain's channels for a collective of ``nbytes`` (all ranks' bytes, NCCL's nBytes): the ring's
    and tree's rule (topoGetAlgoInfo: drop a channel while nBytes < nc x nt x threshold, down to 1).

    >>> collnet_chain_channels(24, 2**30), collnet_chain_channels(24, 8 * 640 * 512), collnet_chain_channels(24, 1)
    (24, 8, 1)
    """
    nc = channels
    while nbytes < nc * COLLNET_THREADS * COLLNET_THREAD_THRESHOLD and nc >= 2:
        nc -= 1
    return nc


def collnet_direct_channels(channels: int, nbytes: float, heads: int) -> int:
    """CollNet Direct's channels for ``nbytes`` with ``heads`` heads (topoGetAlgoInfo's "CollNet channel
    tuning"): from ``channels``, drop one while nBytes < nc x nt x heads x threshold and nc is above a switch
    point (16, 8, 4, 2, 1 in turn), halving the threshold when nc passes 1.5 x the switch point.

    >>> collnet_direct_channels(24, 2**30, 8), collnet_direct_channels(24, 24 * 640 * 8 * 512 - 1, 8)
    (24, 23)
    >>> collnet_direct_channels(24, 2**24, 8)  # 16 MiB: 24 -> 16 at 256 B per thread, then on to 12
    12
    >>> collnet_direct_channels(24, 1, 8)
    1
    """
    nc, threshold, switch, short = channels, COLLNET_THREAD_THRESHOLD, 16, True
    while switch >= 1 and short:
        while True:
            short = nbytes < nc * COLLNET_THREADS * heads * threshold
            if not (short and nc > switch):
                break
            if nc == switch + switch // 2:
                threshold //= 2
            nc -= 1
        switch //= 2
    return nc


def collnet_chunk(chain: bool, nbytes: float, channels: int, heads: int, ppn: int, step: int) -> int:
    """CollNet's chunk (bytes) for ``nbytes`` on ``channels`` channels (calcCollChunking, src/enqueue.cc), for
    Chain (``chain``) or Direct:
    from one Simple ``step`` (NCCL_BUFFSIZE / NCCL_STEPS; Chain at most 256 KiB), halved while a channel holds
    fewer chunks (per head, for Direct) than ``depth`` x 64 down to 128 KiB, ``depth`` x 8 down to 64 KiB, then
    ``depth`` x 8 (Direct) or ``depth`` (Chain) down to 32 KiB.  ``depth`` is Chain's chain length, the GPUs per
    node (connect.cc: collnetChain.depth = nRanks / nNodes), and Direct's 2 (1 with one GPU per node, no peer
    up or down: connectCollNet).

    >>> collnet_chunk(False, 2**35, 24, 8, 8, 2**19), collnet_chunk(False, 2**33, 24, 8, 8, 2**19)
    (524288, 262144)
    >>> collnet_chunk(True, 2**35, 24, 1, 8, 2**19), collnet_chunk(True, 2**24, 24, 1, 8, 2**19)
    (262144, 65536)
    """
    depth = ppn if chain else (2 if ppn > 1 else 1)
    chunk = min(COLLNET_CHAIN_CHUNK, step) if chain else step
    per = channels * heads
    for below, floor in ((depth * 64, 131072), (depth * 8, 65536), (depth if chain else depth * 8, 32768)):
        while nbytes // (per * chunk) < below and chunk > floor:
            chunk //= 2
    return chunk


def tree_correction(proto: str, nbytes: float) -> float:
    """NCCL's medium-size bandwidth correction of tree AllReduce (1.0 outside 64 B .. 256 MiB)."""
    if nbytes < 64:
        return 1.0
    log = int(nbytes // 64).bit_length() - 1
    return _TREE_CORRECTION[_proto(proto)][log] if log < 23 else 1.0


def top_channel_speed(arch: str) -> float:
    """The largest per-channel bandwidth (GB/s) NCCL's search assigns inside a node."""
    return _TOP_SPEED[_ARCH[arch]]
