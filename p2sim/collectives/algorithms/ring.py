"""NCCL's ring (``NCCL_ALGO=Ring``): every collective, on any group.

Its channels are the node's ring orders chained across nodes (:mod:`p2sim.collectives.hops.ring`); NCCL
falls back on it where a forced algorithm lacks a collective (tuning.cc's ring backup).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...topology import Topology
from ...topology.settings import NcclSettings
from ..caches import CollectiveCaches
from ..channels import Segment
from ..nccl_tables import NCCL_STEPS, NET_OVERHEAD_US, base_latency, per_channel_ring_ll128_bw
from ..hops.ring import ring_factor, ring_tables
from .base import Algorithm, Layout

__all__ = ["Ring", "RING_OPS", "SIMPLE_SLICES", "ring_steps"]

US = 1e-6
RING_OPS = ("AllReduce", "ReduceScatter", "AllGather")  # ring patterns with one chunk per rank per loop
SIMPLE_SLICES = 2  # slices per chunk of a Simple ring: CHUNKSTEPS / SLICESTEPS (collectives.h)
# the link share of each protocol: LL carries 4 bytes of data in 8, LL128 120 in 128 (NCCL models 92%)
_SHARE = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}


def ring_steps(op: str, ranks: int, nodes: int) -> tuple[int, int]:
    """(nsteps, nInter) of a ring collective."""
    if op == "AllReduce":
        return 2 * (ranks - 1), 2 * (nodes - 1)
    return ranks - 1, nodes - 1


class Ring(Algorithm):
    """NCCL's ring."""

    name = "ring"
    any_group = True
    per_hop_bus = True
    ll_per_rank = True
    cta_protos = ("Simple", "LL")  # no per-channel cap in NCCL's model for these (LL128's is perChMaxRingLL128Bw)

    def structure(self, topo: Topology, op: str, members: tuple[int, ...], segs: Sequence[Segment], mix: dict,
                  free: dict, used: int, share: float, caches: CollectiveCaches | None = None) -> Layout:
        pairs = max(1, used // 2)
        groups = ring_tables(topo, op, members, segs, mix, free, pairs, caches)
        per_flow = [used] if len(segs) == 1 else [2] * len(groups)
        return self.bus_factor(op, len(members)), groups, per_flow, [max(1, c // 2) for c in per_flow]

    def bus_factor(self, op: str, ranks: int) -> float:
        return ring_factor(op, ranks)

    def graph_channels(self, used: int) -> int | None:
        # one node: one flow of ``used`` channels, max(1, used // 2) graph channels; across nodes one flow per
        # pair (ring_channel_pairs makes max(1, used // 2) of them) of one graph channel each
        return max(1, used // 2)

    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        base = base_latency(self.name, proto) * US
        if op in ("Broadcast", "Reduce"):
            lat = base + (intra if nodes == 1 else inter)
        else:
            nsteps, ninter = ring_steps(op, ranks, nodes)
            if nodes > 1:
                intra = max(intra, NET_OVERHEAD_US * (3 if proto == "Simple" else 1) * US)
            lat = base + (nsteps - ninter) * intra + ninter * inter
        # NCCL's "plateau effect of ring": a multi-node Simple AllReduce of more than 64 bytes per channel
        # and rank starts 1.4x (1.9x before Ampere) slower
        if (proto == "Simple" and nodes > 1 and op == "AllReduce"
                and nbytes / (max(channels, 1) * ranks) >= 64):
            lat *= 1.9 if arch == "volta" else 1.4
        return lat

    def streams(self, op: str) -> bool:
        return op in RING_OPS

    def simple_chunk(self, op: str, nccl: NcclSettings, nodes: int) -> int:
        step = nccl.buffsize // NCCL_STEPS
        return step * (NCCL_STEPS // 2) if op in RING_OPS else step  # CHUNKSTEPS = NCCL_STEPS / 2 (collectives.h)

    def chunk_size(self, proto: str, op: str, channel_bytes: float, ranks: int, nccl: NcclSettings, heads: int,
                   nodes: int = 1) -> int:
        if op not in RING_OPS:
            return super().chunk_size(proto, op, channel_bytes, ranks, nccl, heads, nodes)
        chunk = min(self.chunking(proto, op, nccl, nodes), math.ceil(channel_bytes / ranks))  # a chunk per rank
        return max(1, min(chunk, math.ceil(channel_bytes)))

    def in_flight(self, proto: str, op: str, chunk: int) -> tuple[float, float]:
        if op in RING_OPS and proto == "Simple":
            return 2.0 * chunk, chunk / SIMPLE_SLICES  # two chunks of two slices in the 8 slots
        return super().in_flight(proto, op, chunk)

    def link_share(self, proto: str, op: str, nodes: int, nbytes: float, arch: str) -> float:
        return _SHARE[proto]

    def channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None) -> float:
        if proto == "LL128":
            return per_channel_ring_ll128_bw(arch, nodes)
        return configured if configured is not None else math.inf
