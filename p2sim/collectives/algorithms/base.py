"""The interface every NCCL algorithm implements: :class:`Algorithm`.

An algorithm object owns what p2sim knows of one of NCCL's algorithms: whether it can run
(:meth:`~Algorithm.usable`, :meth:`~Algorithm.why_not_system`, :meth:`~Algorithm.why_not_group`), the
channels it uses and their structure (:meth:`~Algorithm.channels_used`, :meth:`~Algorithm.heads`,
:meth:`~Algorithm.structure`), its start-up latency (:meth:`~Algorithm.latency`,
:meth:`~Algorithm.network_step`), its pipeline (:meth:`~Algorithm.chunking`,
:meth:`~Algorithm.chunk_size`, :meth:`~Algorithm.in_flight`, :meth:`~Algorithm.connections`,
:attr:`~Algorithm.streams`), its
protocol caps (:meth:`~Algorithm.link_share`, :meth:`~Algorithm.tuning_share`,
:meth:`~Algorithm.channel_cap`), which calibrated rates it reads (:attr:`~Algorithm.tree_rates`) and its
analytic baseline (:meth:`~Algorithm.baseline`).  The defaults here are what most algorithms share (a
ring's baseline, NCCL's thread-count rule for channels, no shrinking of chunks); each module overrides
the rest.  Methods that need the system take its topology (its GPUs' generation is ``topo.spec.nccl.arch``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

from ...topology import Topology
from ...topology.settings import NcclSettings
from ...util.algorithms import Algorithm as Info
from ...util.algorithms import algorithm as info_of
from ..baseline import ring_baseline
from ..caches import CollectiveCaches
from ..channels import Segment
from ..nccl_tables import LL128_STEP_DATA, LL_STEP_DATA, MAX_THREADS, NCCL_STEPS, THREAD_THRESHOLD
from ..pattern import HopTable

__all__ = ["Algorithm", "Layout", "THREADS", "THRESHOLD"]

# NCCL's threads per channel and bytes per thread before it adds a channel
# (maxThreads and NCCL_*_THREAD_THRESHOLD in src/graph/tuning.cc, src/include/comm.h)
THREADS = MAX_THREADS
THRESHOLD = THREAD_THRESHOLD

# what Algorithm.structure returns: the bus factor, and per channel group its hops, channels, graph channels
Layout = tuple[float, list[HopTable], list[int], list[int]]


class Algorithm(ABC):
    """One of NCCL's algorithms behind one interface (see the module's text)."""

    #: p2sim's name (a row of :data:`p2sim.util.algorithms.TABLE`); set by each subclass
    name: str = ""
    #: NCCL runs it with the Simple protocol only (tuning.cc: busBw = 0 for LL and LL128)
    simple_only: bool = False
    #: it reads the tree's calibrated rates (``tree_net_rate``, ``tree_channel_rate``), else the ring's
    tree_rates: bool = False
    #: it runs every group of a collective it serves (no group can be refused)
    any_group: bool = False
    #: its link share is in its hops' overhead: the structure depends on it, the flows' loads do not
    share_in_hops: bool = False
    #: a channel moves its share times the bus factor over each hop (a ring's pipeline)
    per_hop_bus: bool = False
    #: LL's channel threshold grows with the ranks (tuning.cc: a ring's LL threshold is per rank)
    ll_per_rank: bool = False
    #: the protocols whose channels' GPU-side rate has no cap of NCCL's own (perChMax*Bw): at fewer channels or
    #: threads than its full count, p2sim caps each at a CTA's share of the node's links (expand.py, "The
    #: medium-size ramp"); none by default
    cta_protos: tuple[str, ...] = ()
    #: NCCL's scheduler spreads its tasks over channels with at least 32 KiB of traffic each
    #: (scheduleCollTasksToPlan, enqueue.cc); CollNet's tasks keep topoGetAlgoInfo's count
    scheduled: bool = True
    #: calcCollChunking's halvings of a Simple chunk for small sizes: (below this many chunks per head,
    #: down to this size), in order; none by default
    shrink: tuple[tuple[int, int], ...] = ()

    @property
    def info(self) -> Info:
        """Its row of :mod:`p2sim.util.algorithms`' table (NCCL's name, enum index, collectives, help)."""
        return info_of(self.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # -- whether it can run ---------------------------------------------------------
    def usable(self, topo: Topology, op: str, segs: Sequence[Segment], caches: CollectiveCaches | None = None) -> bool:
        """Whether NCCL may pick it for ``op`` over a group of these segments: it serves ``op`` and neither
        :meth:`why_not_system` nor :meth:`why_not_group` gives a reason -- the reasons are the one statement of
        an algorithm's rules, so what NCCL picks from and what a forced run is refused for cannot drift apart."""
        return (op in self.info.collectives and self.why_not_system(topo) is None
                and self.why_not_group(topo, op, segs, caches) is None)

    def why_not_system(self, topo: Topology) -> str | None:
        """Why no collective can run it on this system (GPUs, NVSwitch, fabric, settings, nodes), or None."""
        return None

    def why_not_group(self, topo: Topology, op: str, segs: Sequence[Segment],
                      caches: CollectiveCaches | None = None) -> str | None:
        """Why this group (on a system where it can run, of a collective it serves) cannot run it, or None."""
        return None

    # -- channels and their structure ------------------------------------------------
    def channels_used(self, topo: Topology, proto: str, members: tuple[int, ...], full: int, nbytes: float,
                      caches: CollectiveCaches | None = None) -> int:
        """Channels NCCL runs for ``nbytes`` of ``full`` ring channels: it drops channels while each would get
        less than threads x threshold bytes."""
        return max(1, min(full, int(nbytes // (THREADS[proto] * self.threshold(proto, len(members))))))

    @classmethod
    def settings_by_count(cls) -> bool:
        """Whether a group's settings (:meth:`~p2sim.collectives.expand.Expander._settings`) read it only through
        its size, node count and channels: neither :meth:`channels_used` nor :meth:`heads` is its own."""
        return cls.channels_used is Algorithm.channels_used and cls.heads is Algorithm.heads

    def threshold(self, proto: str, ranks: int) -> int:
        """NCCL's bytes per thread before it drops a channel (threadThresholds, tuning.cc; a ring's LL x nRanks)."""
        return THRESHOLD[proto] * (ranks if proto == "LL" and self.ll_per_rank else 1)

    def heads(self, topo: Topology, members: tuple[int, ...], caches: CollectiveCaches | None = None) -> int:
        """Its heads per channel (NVLS's, CollNet Direct's: the chunk shrinks with few chunks per head)."""
        return 1

    @abstractmethod
    def bus_factor(self, op: str, ranks: int) -> float:
        """NCCL's ratio of bus to algorithm bandwidth for ``op`` over ``ranks`` GPUs (``busBw = algBw x
        factor``): what :meth:`structure` returns first, known before its hops are (NCCL's choice bounds by it)."""

    def graph_channels(self, used: int) -> int | None:
        """The graph channels (NCCL's per-channel caps) :meth:`structure` gives ``used`` channels in all, where
        that follows from ``used`` alone; None where it does not (NCCL's choice then bounds without that cap)."""
        return None

    @abstractmethod
    def structure(self, topo: Topology, op: str, members: tuple[int, ...], segs: Sequence[Segment], mix: dict,
                  free: dict, used: int, share: float, caches: CollectiveCaches | None = None) -> Layout:
        """Its channels' hops for this group: (bus factor, hop tables, channels and graph channels of each).
        ``mix`` is each node's ring mix, ``free`` whether any ring order is as good in the node."""

    # -- latency ---------------------------------------------------------------------
    def network_step(self, ranks: int, nodes: int) -> str:
        """Whose network step NCCL charges it: with one GPU per node every step is exposed, and NCCL charges
        the tree's (tuning.cc)."""
        return "tree" if ranks == nodes else self.name

    @abstractmethod
    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        """NCCL's start-up latency (s) from its per-step latencies ``intra`` and ``inter`` (s)."""

    # -- pipeline --------------------------------------------------------------------
    def streams(self, op: str) -> bool:
        """Its ranks send chunk after chunk (a ring's pattern): the window binds however few the chunks."""
        return False

    def simple_chunk(self, op: str, nccl: NcclSettings, nodes: int) -> int:
        """Its largest Simple chunk: one step of the buffer (NCCL_BUFFSIZE / NCCL_STEPS)."""
        return nccl.buffsize // NCCL_STEPS

    def chunking(self, proto: str, op: str, nccl: NcclSettings, nodes: int) -> int:
        """NCCL's largest chunk (bytes of data) for this pattern and protocol (``nodes``: NVLink domains)."""
        if proto == "LL":
            return LL_STEP_DATA
        if proto == "LL128":
            return LL128_STEP_DATA
        return self.simple_chunk(op, nccl, nodes)

    def chunk_size(self, proto: str, op: str, channel_bytes: float, ranks: int, nccl: NcclSettings, heads: int,
                   nodes: int = 1) -> int:
        """The chunk NCCL moves for this size (bytes): :meth:`chunking`, cut while a channel holds few
        chunks per head (:attr:`shrink`), never more than the channel's bytes."""
        chunk = self.chunking(proto, op, nccl, nodes)
        if proto == "Simple":
            for below, size in self.shrink:
                if channel_bytes < below * heads * chunk and chunk > size:
                    chunk = size
        return max(1, min(chunk, math.ceil(channel_bytes)))

    def fill_loops(self, op: str, nodes: int) -> int:
        """Loops of its pipeline the last bytes wait behind, beyond the bytes at the collective's rate, where its
        stages hand whole loops on and NCCL's latency model does not count them (NVLS, NVLS Tree); 0 elsewhere
        (a ring's and a tree's steps are in NCCL's latency)."""
        return 0

    def forwarded_hops(self, proto: str, op: str, ranks: int, nodes: int) -> tuple[int, int]:
        """The hops inside nodes and across the network that take a whole chunk in before they pass it on
        (store and forward), each beyond what NCCL's latency model counts (a per-step latency, no bytes): the
        last chunk waits behind each such hop for its bytes at that hop's rate.  ``(0, 0)``: none that the
        model leaves out (a ring's chunks are a 1/ranks share of its bytes; NVLS's loops: :meth:`fill_loops`)."""
        return 0, 0

    def in_flight(self, proto: str, op: str, chunk: int) -> tuple[float, float]:
        """Bytes a connection has in flight and what a receiver holds before it frees a slot: a chunk per
        slot, NCCL_STEPS slots."""
        return float(NCCL_STEPS * chunk), float(chunk)

    def connections(self, channels: int, used: int) -> int:
        """How many network connections (each with its own NCCL_STEPS slots in flight) carry the traffic
        of one flow of ``channels`` of the collective's ``used`` channels: one per channel."""
        return channels

    # -- protocols -------------------------------------------------------------------
    @abstractmethod
    def link_share(self, proto: str, op: str, nodes: int, nbytes: float, arch: str) -> float:
        """The share of the links' rate a collective of it with this protocol achieves."""

    def tuning_share(self, op: str) -> float:
        """The extra share of the links' rate NCCL's model (not the wire) gives it."""
        return 1.0

    def channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None) -> float:
        """Bus bandwidth (GB/s) one graph channel can reach on the GPU side (``inf``: no cap);
        ``configured`` is the system file's (or calibration's) ``*_channel_rate``."""
        return math.inf

    def tuning_channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None,
                           nccl: NcclSettings) -> float:
        """The per-channel cap NCCL's own model (its choice) reads under the job's release (``nccl.version``):
        :meth:`channel_cap` unless that release had other figures (a tree on Blackwell before 2.28.3)."""
        return self.channel_cap(proto, nodes, arch, configured)

    # -- analytic baseline -----------------------------------------------------------
    def baseline(self, topo: Topology, op: str, members: Sequence[int], nbytes: float) -> tuple[float, str]:
        """The link-bottleneck reference (:mod:`p2sim.collectives.baseline`) and which formula gave it: a ring's,
        unless the algorithm has its own."""
        return ring_baseline(topo, op, members, nbytes), "ring"
