"""NCCL's CollNet Chain (``NCCL_ALGO=CollNetChain``): SHARP in the network, each node's GPUs chained to one head.

Each node's GPUs are chained to one head (what both CollNets need: :class:`~.collnet_direct.CollNet`).

Its channels run the tree's kernel: ``RunWorkColl<AllReduce, COLLNET_CHAIN, SIMPLE>`` (src/device/all_reduce.h)
splits each channel's block into a reduce half that sends every byte up the node's chain to the head and a
broadcast half that sends it back down (``nthreadsSplit``, as runTreeSplit does), so NVLink carries each byte
twice (sjeaugey, NVIDIA/nccl#320: "NVLink ... still has to transmit ~2x more data intra-node") and a channel
moves what a tree channel does.  NCCL's per-channel figure for that kernel is ``perChMaxTreeBw``; a chain
with one network hop each way (up to the SHARP tree and back) is the 2-node tree's row (on Blackwell 42.8 GB/s
a pair of channels, which a DGX B200's own tree rows of 2 nodes measure: 338 GB/s on 8 graph channels).  So
p2sim's time caps a Chain channel pair at it (calibrated: ``[model] tree_channel_rate``, its rates being the
tree's); NCCL's model has no such cap (``nChannels x bwIntra x 0.5``) and still ranks Chain above Direct
(whose ``x 0.85`` it counts), as it chooses.  Measured (together report, 2.28.9, B200, 2-64 nodes): Chain
526-548 GB/s, Direct 546-606; p2sim Chain 482-513 (24 channels x 42.8 / 2), Direct 611-651."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...topology import Topology
from ..caches import CollectiveCaches
from ..channels import Segment
from ..hops.collnet import collnet_chain_tables
from ..channels import segments
from ...topology.settings import NcclSettings
from ..nccl_tables import base_latency, collnet_chain_channels, collnet_channels, per_channel_tree_bw
from .base import Layout
from .collnet_direct import CollNet

__all__ = ["CollNetChain"]

US = 1e-6


class CollNetChain(CollNet):
    """NCCL's CollNet Chain."""

    name = "collnet_chain"
    chain_chunks = True

    def rate_family(self) -> str:
        return "tree"  # the tree's kernel (see the module's text): the tree's calibrated rates

    def channels_used(self, topo: Topology, proto: str, members: tuple[int, ...], full: int, nbytes: float,
                      caches: CollectiveCaches | None = None) -> int:
        """``comm->nChannels`` (half again the ring's where a node has several GPUs: connect.cc), trimmed for
        small sizes as a ring's (:func:`~p2sim.collectives.nccl_tables.collnet_chain_channels`)."""
        ppn = len(segments(topo, members)[0].members)
        return collnet_chain_channels(collnet_channels(full, ppn), nbytes)

    def structure(self, topo: Topology, op: str, members: tuple[int, ...], segs: Sequence[Segment], mix: dict,
                  free: dict, used: int, share: float, caches: CollectiveCaches | None = None) -> Layout:
        groups = collnet_chain_tables(topo, segs, mix, used)
        # one table a channel; a graph channel (what perChMaxTreeBw counts) is a pair of them, as a tree's
        return self.bus_factor(op, len(members)), groups, [1] * len(groups), [0.5] * len(groups)

    def graph_channels(self, used: int) -> int | None:
        return max(1, used // 2)

    def channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None) -> float:
        """A channel pair's bus bandwidth in p2sim's time: the tree's kernel over a chain and one network hop each
        way, NCCL's 2-node ``perChMaxTreeBw`` (or the calibrated ``tree_channel_rate``)."""
        return configured if configured is not None else per_channel_tree_bw(arch, 2)

    def tuning_channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None,
                           nccl: NcclSettings) -> float:
        return math.inf  # NCCL's model of Chain has no per-channel figure (tuning.cc: nChannels x bwIntra)

    def bus_factor(self, op: str, ranks: int) -> float:
        return 2.0  # an AllReduce (its only collective), as a tree's

    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        return base_latency(self.name, proto) * US + 2 * (ranks // nodes - 1) * intra + inter
