"""NCCL's double binary tree (``NCCL_ALGO=Tree``): AllReduce only, on any group.

Its channels are a chain in each node and two binary trees over the nodes
(:mod:`p2sim.collectives.hops.tree`); it reads the tree's calibrated rates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...topology import Topology
from ...topology.settings import NcclSettings
from ..baseline import tree_baseline
from ..caches import CollectiveCaches
from ..channels import Segment
from ..nccl_tables import base_latency, per_channel_tree_bw, per_channel_tree_ll128_bw, tree_correction
from ..hops.tree import tree_tables
from .base import Algorithm, Layout
from .nvls_tree import tree_depth

__all__ = ["Tree", "TREE_SHARE"]

US = 1e-6

# NCCL's tuning model puts a tree AllReduce at 92% of its links' rate (tuning.cc: "busBw =
# std::min(busBw * .92, nChannels * perChMaxTreeBw)").  Unlike LL's and LL128's shares it stands for
# no bytes on the wire (a tree's hops carry data only), so it is NCCL's choice that it shapes:
# p2sim applies it to the estimate NCCL chooses by (tuning_share), not to the tree's links.
TREE_SHARE = 0.92


class Tree(Algorithm):
    """NCCL's double binary tree."""

    name = "tree"
    any_group = True

    def structure(self, topo: Topology, op: str, members: tuple[int, ...], segs: Sequence[Segment], mix: dict,
                  free: dict, used: int, share: float, caches: CollectiveCaches | None = None) -> Layout:
        groups = tree_tables(topo, segs, mix, max(1, used // 2), caches)
        # NCCL: a tree's busBw is twice its algorithm bandwidth
        return self.bus_factor(op, len(members)), groups, [2] * len(groups), [1] * len(groups)

    def bus_factor(self, op: str, ranks: int) -> float:
        return 2.0

    def graph_channels(self, used: int) -> int | None:
        return max(1, used // 2)  # tree_tables: one table per pair of channels, one graph channel each

    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        depth = int(math.log2(nodes)) if nodes > 1 else 0  # NCCL's log2i: floor
        return base_latency(self.name, proto) * US + 2 * ((ranks // nodes - 1) * intra + depth * inter)

    def forwarded_hops(self, proto: str, op: str, ranks: int, nodes: int) -> tuple[int, int]:
        """A chunk climbs each node's chain and the tree over the nodes, then comes down them (all_reduce.h,
        runTreeSplit / runTreeUpDown).  Simple runs ProtoSimple<1, 1> (all_reduce.h: one slice per chunk, one
        step per slice; prims_simple.h posts a step to the next rank only once all of it is written), and its
        chunk is one whole step of the buffer at every size (enqueue.cc, calcCollChunking: the tree's Simple
        chunk is never cut, unlike LL128's): every hop, NVLink or network, holds the whole chunk.  LL and
        LL128 carry a flag in every line, so NVLink hops pass lines on as they land; their network hops send
        whole steps too (net.cc, sendProxyProgress: the proxy posts a step once all its lines are in), but
        of at most 32 KiB (LL) or a cut LL128 chunk, which p2sim leaves to NCCL's per-step latency."""
        if proto != "Simple" or op != "AllReduce":
            return 0, 0
        return 2 * (ranks // nodes - 1), 2 * tree_depth(nodes)

    def link_share(self, proto: str, op: str, nodes: int, nbytes: float, arch: str) -> float:
        share = 1.0  # a tree AllReduce (NCCL's 92% is a tuning figure: tuning_share)
        if proto == "LL":
            share /= 3.8
        elif proto == "LL128":
            share *= 7.0 / 9.0 if nodes == 1 else 120.0 / 128.0
        return share * tree_correction(proto, nbytes)

    def tuning_share(self, op: str) -> float:
        return TREE_SHARE if op == "AllReduce" else 1.0

    def channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None) -> float:
        """NCCL's newest per-channel figures (``perChMaxTreeBw``, ``perChMaxTreeLL128Bw``) as what a tree channel's
        thread block reaches, in p2sim's time whatever the release (2.28.3 lowered Blackwell's from 72 to 24 GB/s
        at 4 nodes and more: the older figures were twice Hopper's, the new ones NVIDIA's own revision)."""
        if proto == "LL128":
            return per_channel_tree_ll128_bw(arch, nodes)
        return configured if configured is not None else per_channel_tree_bw(arch, nodes)

    def rate_family(self) -> str:
        return "tree"  # tree_net_rate, tree_channel_rate

    def tuning_channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None,
                           nccl: NcclSettings) -> float:
        """The figures the job's release chose by: before 2.28.3, Blackwell's were twice Hopper's (tuning.cc of
        2.26.2: ``{2*38.7, 2*41.4, 2*36.0}``), so NCCL 2.26.2 across 20 GB200 racks counted a tree channel at
        72 GB/s and ran a tree at every size up to 16 GiB, where 2.28's 24 GB/s would have it pick a ring
        from about 5 GB (nccl-facts-2.md 1c)."""
        old = not nccl.version_at_least(2, 28, 3)
        if proto == "LL128":
            return per_channel_tree_ll128_bw(arch, nodes, old)
        return configured if configured is not None else per_channel_tree_bw(arch, nodes, old)

    def baseline(self, topo: Topology, op: str, members: Sequence[int], nbytes: float) -> tuple[float, str]:
        if op == "AllReduce":
            return tree_baseline(topo, op, members, nbytes), self.name
        return super().baseline(topo, op, members, nbytes)  # NCCL has trees for AllReduce only
