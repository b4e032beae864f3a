"""NCCL's CollNet Direct (``NCCL_ALGO=CollNetDirect``): SHARP in the network, every GPU of a node a head.

Each GPU of a node is a head that talks to the network directly.

:class:`CollNet` holds what both CollNet algorithms share: Simple only, over two nodes or more of at
most eight GPUs each, on a fabric whose tiers all reduce (``[nccl] collnet``, by default where the
fabric has SHARP), a SHARP tree over the nodes' NICs (:mod:`p2sim.collectives.hops.collnet`).  Direct also
needs an NVSwitch in the node, and runs AllGather and ReduceScatter too (NCCL 2.20.3 and later) where
every GPU of the group's nodes is a head (1:1 GPU:NIC: tuning.cc zeroes them when a node's local ranks
outnumber the heads).  p2sim assumes the SHARP plugin provides ``iallgather`` and ``ireducescatter``
(the CollNet v8 API of nccl-rdma-sharp-plugins), which NCCL also needs for them.

Rates: an AllReduce's hops carry NCCL's 0.85 (tuning.cc: ``busBw *= .85`` for compute capability 9.0
and later); an AllGather's or ReduceScatter's network hops NCCL's 0.9 (tuning.cc: ``busBw = ppn *
min(bwIntra, bwInter * 0.9)``), its NVLink hops none.  NCCL counts neither as an algorithm bandwidth
twice the bus bandwidth for them (tuning.cc converts bus to algorithm bandwidth for every algorithm but
these two): their bus factor is 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...topology import Topology
from ..caches import CollectiveCaches
from ..channels import Segment, segments
from ..hops.collnet import (collnet_direct_tables, collnet_head_count, collnet_heads, collnet_possible,
                       collnet_rail_tables)
from ...topology.settings import NcclSettings
from ..nccl_tables import (COLLNET_ARITY_US, COLLNET_DIRECT_EFFICIENCY, COLLNET_MAX_LOCAL, COLLNET_RAIL_EFFICIENCY,
                           NCCL_STEPS, base_latency, collnet_channels, collnet_chunk, collnet_direct_channels)
from .base import Algorithm, Layout

__all__ = ["CollNet", "CollNetDirect"]

US = 1e-6


def _has_nvswitch(topo: Topology) -> bool:
    return any(k == "nvswitch" for _, k in topo.spec.components)


def _one_to_one(topo: Topology, segs: Sequence[Segment], caches: CollectiveCaches | None) -> bool:
    """Every GPU of the group's nodes is a CollNet head (NCCL's AllGather and ReduceScatter need it)."""
    return all(len(s.members) <= collnet_head_count(topo, s, caches=caches) for s in segs)


class CollNet(Algorithm):
    """What NCCL's two CollNet algorithms share (see the module's text)."""

    simple_only = True
    scheduled = False  # CollNet's tasks keep topoGetAlgoInfo's channel count (enqueue.cc)
    #: Chain's chunking (at most 256 KiB, depth the GPUs per node), else Direct's (calcCollChunking)
    chain_chunks = False

    def why_not_system(self, topo: Topology) -> str | None:
        nccl, system, fabric = topo.spec.nccl, topo.spec.name, topo.fabric
        if nccl.collnet is False:
            return f"{system} turns CollNet off ([nccl] collnet = false: NCCL_COLLNET_ENABLE=0)"
        if fabric is None:
            return (f"{system} has no SHARP tier: CollNet needs a network that reduces (a [fabric] whose "
                    f"tiers all have sharp = true)")
        flat = [t.name for t in fabric.spec.tiers if not t.sharp]
        if nccl.collnet is None and flat:
            return (f"{system}'s fabric tier(s) {', '.join(flat)} have no SHARP (sharp = true), and CollNet "
                    f"needs the whole SHARP tree")
        if topo.node_count < 2:
            return f"CollNet runs across nodes (NCCL's CollNet plugin), and {system} has 1 node here"
        return None

    def why_not_group(self, topo: Topology, op: str, segs: Sequence[Segment],
                      caches: CollectiveCaches | None = None) -> str | None:
        """Two nodes or more, at most eight GPUs on each (enqueue.cc), a SHARP tree over the nodes' NICs."""
        if len(segs) < 2:
            return "its group lies in one node, and CollNet runs across nodes"
        most = max(len(s.members) for s in segs)
        if most > COLLNET_MAX_LOCAL:
            return (f"its group has {most} GPUs in a node, and CollNet takes at most {COLLNET_MAX_LOCAL} "
                    f"(NCCL_MAX_DIRECT_ARITY + 1: enqueue.cc)")
        if not collnet_possible(topo, segs, caches):
            return "its nodes' NICs reach no common SHARP tree"
        return None

    def link_share(self, proto: str, op: str, nodes: int, nbytes: float, arch: str) -> float:
        return 1.0  # Simple only; CollNet Direct's efficiency is in its hops' overhead

    def chunk_size(self, proto: str, op: str, channel_bytes: float, ranks: int, nccl: NcclSettings, heads: int,
                   nodes: int = 1) -> int:
        """NCCL's CollNet chunk (calcCollChunking: :func:`~p2sim.collectives.nccl_tables.collnet_chunk`), from a
        channel's bytes; each of a channel's slots holds one (8 in flight per channel and connection:
        coll_net.cc's proxy posts a step while ``posted < done + NCCL_STEPS``)."""
        chunk = collnet_chunk(self.chain_chunks, channel_bytes, 1, heads, max(1, ranks // max(1, nodes)),
                              nccl.buffsize // NCCL_STEPS)
        return max(1, min(chunk, math.ceil(channel_bytes)))


class CollNetDirect(CollNet):
    """NCCL's CollNet Direct."""

    name = "collnet_direct"

    def why_not_group(self, topo: Topology, op: str, segs: Sequence[Segment],
                      caches: CollectiveCaches | None = None) -> str | None:
        why = super().why_not_group(topo, op, segs, caches)
        if why is None and op != "AllReduce" and not _one_to_one(topo, segs, caches):
            seg = max(segs, key=lambda s: len(s.members) - len(collnet_heads(topo, s, caches=caches)))
            heads = len(collnet_heads(topo, seg, caches=caches))
            why = (f"its group has {len(seg.members)} GPUs in a node and {heads} CollNet "
                   f"head(s) (GPUs with their own NIC), and NCCL runs {op} over CollNet only 1:1 GPU:NIC "
                   f"(tuning.cc)")
        return why

    def why_not_system(self, topo: Topology) -> str | None:
        why = super().why_not_system(topo)
        if why is None and not _has_nvswitch(topo):
            why = (f"CollNet Direct needs an NVSwitch in the node (NCCL's tuning.cc), and {topo.spec.name}'s "
                   f"nodes have none")
        return why

    def channels_used(self, topo: Topology, proto: str, members: tuple[int, ...], full: int, nbytes: float,
                      caches: CollectiveCaches | None = None) -> int:
        """``comm->nChannels`` (every channel runs through every head: connectCollNet), trimmed for small sizes
        by the ncSwitch loop (:func:`~p2sim.collectives.nccl_tables.collnet_direct_channels`)."""
        ppn = len(segments(topo, members)[0].members)
        return collnet_direct_channels(collnet_channels(full, ppn), nbytes, self.heads(topo, members, caches))

    def heads(self, topo: Topology, members: tuple[int, ...], caches: CollectiveCaches | None = None) -> int:
        return collnet_head_count(topo, segments(topo, members)[0], caches=caches)

    def structure(self, topo: Topology, op: str, members: tuple[int, ...], segs: Sequence[Segment], mix: dict,
                  free: dict, used: int, share: float, caches: CollectiveCaches | None = None) -> Layout:
        if op != "AllReduce":  # tuning.cc: no bus-to-algorithm conversion for these
            groups = collnet_rail_tables(topo, segs, op, 1.0 / COLLNET_RAIL_EFFICIENCY, caches)
            return self.bus_factor(op, len(members)), groups, [used] * len(groups), [1] * len(groups)
        groups = collnet_direct_tables(topo, segs, 1.0 / COLLNET_DIRECT_EFFICIENCY[topo.spec.nccl.arch], caches)
        # as a tree's: NCCL's algorithm bandwidth is half the bus bandwidth; each head's flow is carried by
        # every channel (connectCollNet), so each has ``used`` channels' connections (and windows)
        return self.bus_factor(op, len(members)), groups, [used] * len(groups), [1] * len(groups)

    def bus_factor(self, op: str, ranks: int) -> float:
        return 2.0 if op == "AllReduce" else 1.0  # tuning.cc: no bus-to-algorithm conversion for the others

    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        local = ranks // nodes - 1
        return base_latency(self.name, proto) * US + 2 * (min(1, local) * intra + local * COLLNET_ARITY_US * US) + inter
