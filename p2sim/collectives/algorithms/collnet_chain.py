"""NCCL's CollNet Chain (``NCCL_ALGO=CollNetChain``): SHARP in the network, each node's GPUs chained to one head.

Each node's GPUs are chained to one head (what both CollNets need: :class:`~.collnet_direct.CollNet`)."""

from __future__ import annotations

from collections.abc import Sequence

from ...topology import Topology
from ..caches import CollectiveCaches
from ..channels import Segment
from ..hops.collnet import collnet_chain_tables
from ..channels import segments
from ..nccl_tables import base_latency, collnet_chain_channels, collnet_channels
from .base import Layout
from .collnet_direct import CollNet

__all__ = ["CollNetChain"]

US = 1e-6


class CollNetChain(CollNet):
    """NCCL's CollNet Chain."""

    name = "collnet_chain"
    chain_chunks = True

    def channels_used(self, topo: Topology, proto: str, members: tuple[int, ...], full: int, nbytes: float,
                      caches: CollectiveCaches | None = None) -> int:
        """``comm->nChannels`` (half again the ring's where a node has several GPUs: connect.cc), trimmed for
        small sizes as a ring's (:func:`~p2sim.collectives.nccl_tables.collnet_chain_channels`)."""
        ppn = len(segments(topo, members)[0].members)
        return collnet_chain_channels(collnet_channels(full, ppn), nbytes)

    def structure(self, topo: Topology, op: str, members: tuple[int, ...], segs: Sequence[Segment], mix: dict,
                  free: dict, used: int, share: float, caches: CollectiveCaches | None = None) -> Layout:
        groups = collnet_chain_tables(topo, segs, mix, used)
        return self.bus_factor(op, len(members)), groups, [1] * len(groups), [1] * len(groups)

    def bus_factor(self, op: str, ranks: int) -> float:
        return 2.0  # an AllReduce (its only collective), as a tree's

    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        return base_latency(self.name, proto) * US + 2 * (ranks // nodes - 1) * intra + inter
