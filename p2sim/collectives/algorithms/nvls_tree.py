"""NCCL's NVLS Tree (``NCCL_ALGO=NVLSTree``): NVLink SHARP in each node, trees across nodes.

AllReduce only, with Simple, over groups of two nodes or more (NCCL disables it on one node);
it reads the tree's calibrated rates.  Its channels are NCCL's NVLS CTAs (``src/transport/nvls.cc``:
16 on Hopper; on Blackwell 32 at 2 nodes, else by NIC speed and GPUs per node), and every channel
splits its data over all heads, so each head's flow carries every channel's connection through its
NIC (each with its own pipeline window) and ``1/heads`` of the data.
"""

from __future__ import annotations

import math
from functools import lru_cache
from collections.abc import Sequence

from ...topology import Topology
from ...topology.settings import NcclSettings
from ..caches import CollectiveCaches
from ..channels import Segment, nic_gbps, segments
from ..nccl_tables import base_latency, nvls_tree_channels, per_channel_nvls_tree_bw
from ..hops.nvls import nvls_tree_tables
from ..hops.tree import double_tree_arrays
from .base import Layout
from .nvls import NVLS_STAGES, Nvls, _too_many, nvls_switches

__all__ = ["NvlsTree", "tree_depth"]

US = 1e-6


@lru_cache(maxsize=None)  # a pure function of the node count, asked for every size of every group
def tree_depth(nodes: int) -> int:
    """Edges from the deepest node to the root in the deeper of NCCL's two binary trees over ``nodes`` nodes
    (ncclGetDtree, as :func:`p2sim.collectives.hops.tree.double_tree`).

    >>> [tree_depth(n) for n in (1, 2, 3, 4, 8, 20)]
    [0, 1, 2, 2, 3, 5]
    """
    deepest = 0
    for parents in double_tree_arrays(nodes):
        for r in range(nodes):
            d, p = 0, int(parents[r])
            while p >= 0:
                d, p = d + 1, int(parents[p])
            deepest = max(deepest, d)
    return deepest


class NvlsTree(Nvls):
    """NCCL's NVLS Tree: what NVLS needs of each node, across two nodes or more."""

    name = "nvls_tree"
    # calcCollChunking (enqueue.cc): NVLS Tree's chunk halves below 32, 16, 4 and 1 chunks per head
    shrink = ((32, 262144), (16, 131072), (4, 65536), (1, 32768))

    def why_not_system(self, topo: Topology) -> str | None:
        why = super().why_not_system(topo)
        if why is None and topo.node_count < 2:
            why = (f"NVLS Tree runs across nodes (NCCL disables it on one node: tuning.cc), and "
                   f"{topo.spec.name} has 1 node here")
        return why

    def why_not_group(self, topo: Topology, op: str, segs: Sequence[Segment],
                      caches: CollectiveCaches | None = None) -> str | None:
        if len(segs) == 1:
            return "its group lies in one node, and NVLS Tree runs across nodes (NCCL disables it on one node)"
        return _too_many(op, segs) or self._no_switch(topo, segs)

    def channels_used(self, topo: Topology, proto: str, members: tuple[int, ...], full: int, nbytes: float,
                      caches: CollectiveCaches | None = None) -> int:
        segs = segments(topo, members)
        ppn = min(len(s.members) for s in segs)  # NCCL's minLocalRanks
        return nvls_tree_channels(topo.spec.nccl.arch, len(segs), ppn, nic_gbps(topo))

    def structure(self, topo: Topology, op: str, members: tuple[int, ...], segs: Sequence[Segment], mix: dict,
                  free: dict, used: int, share: float, caches: CollectiveCaches | None = None) -> Layout:
        share = topo.spec.rates.nvls_efficiency or share  # [model] nvls_efficiency: a system's assumption
        groups = nvls_tree_tables(topo, segs, nvls_switches(topo, segs), share, caches)
        # every channel runs through every head (all_reduce.h, NVLS_TREE: nHeads chunks per loop): each
        # head's flow has all the channels' connections; one graph channel (NCCL's per-channel cap) per head
        return self.bus_factor(op, len(members)), groups, [used] * len(groups), [1] * len(groups)

    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        depth = int(math.log2(nodes)) if nodes > 1 else 0  # NCCL's log2i: floor
        return base_latency(self.name, proto) * US + intra + 2 * depth * inter

    def simple_chunk(self, op: str, nccl: NcclSettings, nodes: int) -> int:
        cap = nccl.nvlstree_max_chunksize  # nvls.cc: the tree's cap is 64 KiB from 4 nodes unless set
        return min(nccl.nvls_chunksize, cap if cap is not None else 65536 if nodes >= 4 else nccl.nvls_chunksize)

    def connections(self, channels: int, used: int) -> int:
        # every NVLS channel runs every head's tree: connectNvls (connect.cc) gives each of the nvlsChannels
        # the head's treeUp/treeDown, and the kernel (all_reduce.h, NVLS_TREE) splits each channel's data over
        # all nHeads heads (loopCount = nHeads * chunkCount); so a head's network traffic has one connection
        # per NVLS channel, whatever share of the channels p2sim's flow for that head counts
        return used

    def fill_loops(self, op: str, nodes: int) -> int:
        """NVLS's three stages plus the tree's hops (all_reduce.h, NVLS_TREE: scatter, the head's ld_reduce with
        its children's chunks and its send up, at the root a multicast, each node's receive from its parent and
        multicast, gather; every hop moves whole chunks, ProtoSimple<1, 1>): a head's chunk of a loop climbs
        the tree's depth and comes down it, one loop per hop behind the one before."""
        return NVLS_STAGES - 1 + 2 * tree_depth(nodes)

    def channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None) -> float:
        cap = per_channel_nvls_tree_bw(arch, nodes)
        return cap if cap > 0 else math.inf

    def rate_family(self) -> str:
        return "tree"  # its network half is a tree: tree_net_rate, tree_channel_rate
