"""Channels: how many a collective runs, which NIC each uses, where it enters each node.

NCCL's rules (``src/graph/search.cc``, ``connect.cc``), as p2sim applies them:

* **Inside a node** the search finds rings whose per-channel speed is NCCL's top speed
  for the GPU generation (or what the rings can carry, if less); it fits
  ``throughput / speed`` channels, doubles them when a channel is fast (speed >= 25
  GB/s; on Hopper and later only when fewer than 5 channels run below 50 GB/s), and
  ``connect.cc`` duplicates every channel once more.  Eight A100s on NVSwitch: 240 GB/s
  of NVLink at 40 GB/s per channel, 6 x 2 x 2 = 24 channels.
* **Across nodes** the search puts one channel on each NIC the group's GPUs are near,
  and ``connect.cc`` duplicates them: ``channels_per_nic`` (default 2) per NIC.
* A channel enters and leaves a node through one NIC, at a GPU near that NIC; the
  channels are dealt over the NICs in NCCL's order (each GPU's nearest NICs in turn), so
  two GPUs sharing a NIC never double-load it while another NIC idles.
* Where the network plugin's device is NCCL_NET_DEVICE_UNPACK (GPUDirect-TCPX: the received data lands in
  the plugin's GPU pages and NCCL's kernel copies it out), a communicator across nodes of fewer than 16
  channels gets twice as many (``connect.cc``, ``NCCL_UNPACK_DOUBLE_NCHANNELS``: "Double the number of
  channels when using unpack networking"), before NCCL's min/max.
* The count is clamped to ``min_channels .. max_channels``.  A tree's *graph channel*
  (what NCCL's per-channel caps count) is a pair of these channels, one per tree of the
  double binary tree; so is a ring's (a ring and its reverse).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

from ..topology import Topology
from .nccl_tables import MAX_THREADS, MIN_TRAFFIC_PER_CHANNEL, WARP, net_graph_channels, top_channel_speed, traffic_per_byte

__all__ = ["Segment", "segments", "node_nics", "channel_count", "entry_gpus", "ring_channel_pairs",
           "scheduled_channels", "threads_used", "channel_nics", "channel_entry", "nic_gbps", "nvls_switch", "nvlink_gbps"]


# NCCL doubles an unpack network's channels only below this count ("We won't automatically double past 16
# channels", v2.28.9 src/graph/connect.cc); MAXCHANNELS (src/include/device.h) bounds every count
UNPACK_DOUBLE_BELOW = 16
MAX_CHANNELS = 64


@dataclass(frozen=True)
class Segment:
    """The members of a group on one node: global ids, in index order."""

    node: int
    members: tuple[int, ...]

    def local(self, topo: Topology) -> tuple[int, ...]:
        gpn = topo.gpus_per_node
        kept = self.__dict__.get("_local")  # asked for again and again over a group's thousands of nodes
        if kept is None or kept[0] != gpn:
            kept = (gpn, tuple(m % gpn for m in self.members))
            object.__setattr__(self, "_local", kept)  # not a field: equality and hash stay (node, members)
        return kept[1]


def segments(topo: Topology, members: Sequence[int]) -> list[Segment]:
    """A group's members split by node, nodes in index order."""
    return list(_segments(topo.gpus_per_node, tuple(members)))


@functools.lru_cache(maxsize=32)
def _segments(gpn: int, members: tuple[int, ...]) -> tuple[Segment, ...]:
    # the same group is split again by its choice, its settings and its structure, one after another: the
    # last few kept (few, since a group may hold thousands of GPUs)
    return tuple(Segment(n, tuple(s)) for n, s in groupby(sorted(members), key=lambda m: m // gpn))


def node_nics(topo: Topology, seg: Segment) -> tuple[str, ...]:
    """The NICs a node's channels use: each member's nearest NICs in turn, in NCCL's channel-first order."""
    out: list[str] = []
    for local in seg.local(topo):
        for nic in topo.router.local_nics(local):
            if nic not in out:
                out.append(nic)
    return tuple(out)


def _clamp(topo: Topology, c: int) -> int:
    s = topo.spec.nccl
    return max(s.min_channels, min(s.max_channels, c))


def channel_count(topo: Topology, segs: Sequence[Segment], intra_throughput: float) -> int:
    """Ring channels of a group (``intra_throughput``: its best ring set's GB/s per hop, one node)."""
    nccl = topo.spec.nccl
    if len(segs) > 1:
        nics = min(len(node_nics(topo, s)) for s in segs)
        count = nccl.channels_per_nic * _net_graph(topo, segs, nics)
        if nccl.net_unpack and count < UNPACK_DOUBLE_BELOW:
            count = min(MAX_CHANNELS, 2 * count)  # v2.28.9 src/graph/connect.cc: unpack networking, nNodes > 1
        return _clamp(topo, count)
    speed = min(top_channel_speed(nccl.arch), intra_throughput)
    graph = max(1, int(intra_throughput // speed + 1e-9))
    fast_arch = nccl.arch in ("hopper", "blackwell")
    if speed >= 25.0 and not (fast_arch and speed < 50.0 and graph > 4):
        graph *= 2  # ncclTopoDupChannels
    return _clamp(topo, 2 * graph)  # connect.cc duplicates every channel


def _net_graph(topo: Topology, segs: Sequence[Segment], nics: int) -> int:
    """Graph channels across nodes: one a NIC, as many as the GPUs' NVLink to their switch holds at the search's
    speed (:func:`~p2sim.collectives.nccl_tables.net_graph_channels`; binds where a node has more NICs than its
    NVLink carries at the NICs' speed: a GB200 rack's 72)."""
    link = min(nvlink_gbps(topo, s) for s in segs)
    return net_graph_channels(topo.spec.nccl.arch, max(nics, 1), nic_gbps(topo), link)


def nic_gbps(topo: Topology) -> float:
    """The slowest NIC's link to the network, GB/s (NCCL's minNetBw, the NIC's reported speed)."""
    caps = [float(topo.capacity[e]) for nic in topo.nics for e in topo.network_edges_of(0, nic)]
    return min(caps) / 1e9 if caps else math.inf


def nvls_switch(topo: Topology, seg: Segment) -> str | None:
    """The NVLS-capable NVSwitch every member of the segment is attached to, if any."""
    g = topo.template  # every node is node 0's template
    common = None
    for m in seg.members:
        gpu = topo.gpu_names[m % topo.gpus_per_node]
        switches = {s.split("/", 1)[1] for s in g.successors(gpu) if g.nodes[s]["kind"] == "nvswitch"
                    and s.split("/", 1)[1] in topo.spec.nvls_switches}
        common = switches if common is None else common & switches
    return f"n{seg.node}/{min(common)}" if common else None


def nvlink_gbps(topo: Topology, seg: Segment) -> float:
    """The NVLink of the segment's slowest member to its NVLS switch, GB/s as NCCL counts it (the link's
    capacity: data-sheet rate x NCCL's share, topology/efficiency.py)."""
    sw = nvls_switch(topo, seg)
    if sw is None:
        return math.inf
    ups = topo.router.switch_ports(sw.split("/", 1)[1])[0]
    ports = [int(ups[m % topo.gpus_per_node]) for m in seg.members]
    return min(float(topo.capacity[p]) for p in ports if p >= 0) / 1e9


def scheduled_channels(op: str, proto: str, nbytes: float, ranks: int, channels: int) -> int:
    """Channels NCCL's scheduler fills with one collective of ``nbytes`` given ``channels`` (topoGetAlgoInfo's
    count): ``scheduleCollTasksToPlan`` (src/enqueue.cc) cuts the count into cells of ``MinTrafficPerChannel``
    (32 KiB) of traffic and gives each channel at least one, so a channel carries at least 32 KiB of traffic
    (:func:`~p2sim.collectives.nccl_tables.traffic_per_byte`: an AllReduce's bytes twice, LL's x4).
    ``nbytes`` is NCCL's (a gathered buffer's whole size for AllGather / ReduceScatter).

    >>> scheduled_channels("AllReduce", "LL128", 65536, 8, 12)  # 128 KiB of traffic: 4 cells of 32 KiB
    4
    >>> scheduled_channels("AllReduce", "Simple", 2**20, 8, 24)  # 64 cells, 3 a channel: 22 channels
    22
    """
    count = math.ceil(nbytes / ranks if op in ("AllGather", "ReduceScatter") else nbytes)  # a rank's count, bytes
    tpb = traffic_per_byte(op, ranks, proto)
    cell = _up(_up(MIN_TRAFFIC_PER_CHANNEL, tpb), 16) * 16  # bytes of count per cell, a multiple of 16
    cells = max(1, _up(count, cell))
    per_channel = _up(max(MIN_TRAFFIC_PER_CHANNEL, count * tpb) // channels, 16) * 16  # divUp(traffic / nChannels, 16) * 16
    cells_per_channel = min(cells, max(1, _up(per_channel, cell * tpb)))
    return max(1, min(channels, _up(cells, cells_per_channel)))


def _up(a: int, b: int) -> int:
    """NCCL's divUp: ``a / b`` rounded up."""
    return -(-a // b)


def threads_used(proto: str, nbytes: float, channels: int, threshold: int, max_threads: int | None = None,
                 halves: bool = True) -> int:
    """Threads of each channel's CTA that move data, as topoGetAlgoInfo (src/enqueue.cc) sets them: while
    ``nbytes`` is below channels x threads x ``threshold`` (bytes per thread) it halves the threads, as long
    as they are a multiple of 128 (so 512 goes down to 64); NVLS and CollNet Direct keep theirs
    (``halves`` False).  A ring's Simple sync warp and the three-warp floor are not counted: they move no data.

    >>> threads_used("Simple", 2**20, 1, 64), threads_used("Simple", 20000, 1, 64), threads_used("Simple", 8, 1, 64)
    (512, 256, 64)
    >>> threads_used("LL128", 8, 1, 8)  # 640 halves once: 320 is no multiple of 128
    320
    """
    nt = MAX_THREADS[proto] if max_threads is None else max_threads
    while halves and nbytes < channels * nt * threshold and nt % (4 * WARP) == 0:
        nt //= 2
    return nt


def entry_gpus(topo: Topology, seg: Segment, nic: str) -> list[int]:
    """The segment's members near ``nic`` (where a channel on that NIC enters), else all.

    The NIC's own GPUs come first: NCCL deals the NICs that several GPUs share out among
    them (``ncclTopoGetLocalNet``), so two GPUs under one switch with two NICs take one each.
    """
    near = [m for m in seg.members if nic in topo.router.local_nics(m % topo.gpus_per_node)]
    owners = [m for m in near if topo.router.nic_of(m) == nic]
    return owners + [m for m in near if m not in owners] or list(seg.members)


def ring_channel_pairs(topo: Topology, segs: Sequence[Segment], pairs: int) -> list[list[tuple[str, int]]]:
    """For each channel pair, per node: (NIC, entry GPU).

    Pair ``p`` uses each node's ``p``-th NIC in its list (cyclically); pairs that share a
    NIC enter at successive GPUs near it, so every NIC and GPU gets its share.
    """
    lists = [channel_nics(topo, s) for s in segs]
    return [[channel_entry(topo, seg, nics, p) for seg, nics in zip(segs, lists)] for p in range(pairs)]


def channel_nics(topo: Topology, seg: Segment) -> tuple[str, ...]:
    """The NICs a node's channels take in turn: those its members are near (:func:`node_nics`), else its first
    member's."""
    return node_nics(topo, seg) or (topo.router.nic_of(seg.members[0]),)


def channel_entry(topo: Topology, seg: Segment, nics: Sequence[str], c: int) -> tuple[str, int]:
    """Channel ``c``'s NIC and entry GPU in a node: the ``c``-th of ``nics`` (cyclically); channels that share a
    NIC enter at successive GPUs near it (:func:`entry_gpus`), so every NIC and GPU gets its share."""
    nic = nics[c % len(nics)]
    near = entry_gpus(topo, seg, nic)
    return nic, near[(c // len(nics)) % len(near)]
