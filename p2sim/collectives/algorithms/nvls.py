"""NCCL's NVLS (``NCCL_ALGO=NVLS``): NVLink SHARP reductions inside one NVLink domain.

The NVSwitches of Hopper GPUs and later reduce and multicast (:mod:`p2sim.collectives.hops.nvls` builds
the hops); NCCL runs it with Simple only, for AllReduce, ReduceScatter and AllGather, over a group of
one node with at least 2 GPUs on one NVLink SHARP switch.  Its efficiency is in its hops' overhead.
In a domain of more than NCCL_MAX_NVLS_ARITY (32) GPUs, an NVL72 rack's 72, NCCL runs NVLS (and NVLS
Tree) for AllReduce only (``src/enqueue.cc``: skipped for other collectives when localRanks > 32).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...topology import Topology
from ...topology.settings import NcclSettings
from ..caches import CollectiveCaches
from ..channels import Segment, segments
from ..nccl_tables import NVLS_CHANNELS, NVLS_CHANNELS_ONE_DOMAIN, NVLS_MAX_ARITY, nvls_efficiency
from ..hops.nvls import fewest_nvls_heads, nvls_head_count, nvls_switch, nvls_table
from ..hops.ring import ring_factor
from .base import Algorithm, Layout

__all__ = ["Nvls", "NVLS_ARCHS", "NVLS_STAGES", "nvls_switches"]

NVLS_ARCHS = ("hopper", "blackwell")  # NVLink SHARP: in the NVSwitches of Hopper GPUs and later (nvls.cc)
# the NVLS AllReduce kernel's pipeline stages, each its own warp group (src/device/all_reduce.h,
# RunWorkColl<AllReduce, NVLS, SIMPLE>: scatter, reduce + multicast by the head, gather)
NVLS_STAGES = 3


def nvls_switches(topo: Topology, segs: Sequence[Segment]) -> list[str] | None:
    """Each segment's NVLink SHARP switch, or None where NVLS cannot run the group: GPUs before Hopper,
    ``[nccl] nvls = false``, a node without such a switch or fewer than 2 of its GPUs on it."""
    if topo.spec.nccl.arch not in NVLS_ARCHS or not topo.spec.nccl.nvls:
        return None
    sw = [nvls_switch(topo, s) for s in segs]
    return None if any(x is None for x in sw) or any(len(s.members) < 2 for s in segs) else sw


def _arity_allows(op: str, segs: Sequence[Segment]) -> bool:
    """enqueue.cc: NVLS and NVLS Tree serve other collectives than AllReduce only up to
    NCCL_MAX_NVLS_ARITY GPUs per node (localRanks)."""
    return op == "AllReduce" or max(len(s.members) for s in segs) <= NVLS_MAX_ARITY


def _too_many(op: str, segs: Sequence[Segment]) -> str | None:
    if _arity_allows(op, segs):
        return None
    return (f"NCCL runs NVLS for {op} only up to {NVLS_MAX_ARITY} GPUs per NVLink domain "
            f"(NCCL_MAX_NVLS_ARITY, enqueue.cc), and the group has {max(len(s.members) for s in segs)} in one")


class Nvls(Algorithm):
    """NCCL's NVLS inside one NVLink domain."""

    name = "nvls"
    simple_only = True
    share_in_hops = True
    # calcCollChunking (enqueue.cc): NVLS's chunk halves below 64, 8 and 2 chunks per head
    shrink = ((64, 65536), (8, 32768), (2, 16384))

    def why_not_system(self, topo: Topology) -> str | None:
        spec = topo.spec
        system = spec.name
        if topo.spec.nccl.arch not in NVLS_ARCHS:
            return (f"NVLS needs NVLink SHARP, in the NVSwitches of Hopper GPUs and later (NCCL's nvls.cc), and "
                    f"{system}'s GPUs are {topo.spec.nccl.arch}")
        if not spec.nccl.nvls:
            return f"{system} turns NVLS off ([nccl] nvls = false: NCCL_NVLS_ENABLE=0)"
        if not spec.nvls_switches:
            return f"{system}'s NVSwitches have no NVLink SHARP (no node component with nvls = true)"
        return None

    def why_not_group(self, topo: Topology, op: str, segs: Sequence[Segment],
                      caches: CollectiveCaches | None = None) -> str | None:
        if len(segs) > 1:
            return (f"its group spans {len(segs)} nodes, and NVLS stays inside one NVLink domain (NCCL crosses "
                    f"nodes with it only over CollNet, which p2sim does not model)")
        return _too_many(op, segs) or self._no_switch(topo, segs)

    @staticmethod
    def _no_switch(topo: Topology, segs: Sequence[Segment]) -> str | None:
        if nvls_switches(topo, segs) is None:
            return "NVLS needs at least 2 GPUs of the group on one NVLink SHARP switch in every node"
        return None

    def channels_used(self, topo: Topology, proto: str, members: tuple[int, ...], full: int, nbytes: float,
                      caches: CollectiveCaches | None = None) -> int:
        one = len(segments(topo, members)) == 1  # fewer on Blackwell inside one NVLink domain (nvls.cc)
        return (NVLS_CHANNELS_ONE_DOMAIN if one else NVLS_CHANNELS)[topo.spec.nccl.arch]

    def heads(self, topo: Topology, members: tuple[int, ...], caches: CollectiveCaches | None = None) -> int:
        segs = segments(topo, members)
        if len(segs) > 1:  # NVLS Tree: the heads every node has (connect.cc: the fewest of any node)
            return max(1, fewest_nvls_heads(topo, segs))
        return max(1, nvls_head_count(topo, segs[0], len(segs[0].members)))

    def structure(self, topo: Topology, op: str, members: tuple[int, ...], segs: Sequence[Segment], mix: dict,
                  free: dict, used: int, share: float, caches: CollectiveCaches | None = None) -> Layout:
        share = topo.spec.rates.nvls_efficiency or share  # [model] nvls_efficiency: a system's assumption
        groups = [nvls_table(topo, op, segs[0], nvls_switches(topo, segs)[0], share)]
        return self.bus_factor(op, len(members)), groups, [used], [used]

    def bus_factor(self, op: str, ranks: int) -> float:
        return ring_factor(op, ranks)

    def network_step(self, ranks: int, nodes: int) -> str:
        return self.name  # NCCL's NVLS network figure, whatever the GPUs per node

    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        return intra + (inter if nodes > 1 else 0.0)

    def simple_chunk(self, op: str, nccl: NcclSettings, nodes: int) -> int:
        return nccl.nvls_chunksize

    def fill_loops(self, op: str, nodes: int) -> int:
        """AllReduce: three stages, each its own warps of the channel's block (all_reduce.h, NVLS: scatter to
        the heads, the heads' ld_reduce and multicast, gather), each a loop of one chunk per head
        (``loopCount = nHeads * chunkSize``) and each taking a chunk only once it is whole (ProtoSimple<1, 1>:
        one slice per chunk, one step per slice): the last loop leaves two loops after its bytes.
        ReduceScatter and AllGather: not read, left out (0)."""
        return NVLS_STAGES - 1 if op == "AllReduce" else 0

    def link_share(self, proto: str, op: str, nodes: int, nbytes: float, arch: str) -> float:
        return nvls_efficiency(arch)
