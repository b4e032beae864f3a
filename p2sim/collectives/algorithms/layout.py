"""An algorithm's channels and their structure: the part of :class:`~.base.Algorithm` that puts its hops on links.

Contract
--------
Required (abstract):

* :meth:`ChannelLayout.bus_factor` -- NCCL's bus-to-algorithm bandwidth ratio, known before the hops are;
* :meth:`ChannelLayout.structure` -- its channels' hop tables for one group (built by :mod:`p2sim.collectives.hops`:
  an algorithm chooses and counts channels, a hop builder routes them).

Hooks with defaults:

* :meth:`ChannelLayout.channels_used` -- NCCL's thread-count rule (channels of at least threads x threshold bytes);
* :meth:`ChannelLayout.heads` -- heads per channel (default 1);
* :meth:`ChannelLayout.graph_channels` -- the graph channels ``used`` channels give, where known (default None);
* :attr:`ChannelLayout.ll_per_rank` -- a ring's LL threshold per rank (default False);
* :attr:`ChannelLayout.scheduled` -- NCCL's scheduler spreads the tasks, 32 KiB a channel (default True);
* :attr:`ChannelLayout.share_in_hops` -- the link share is in the hops' overhead (default False);
* :attr:`ChannelLayout.per_hop_bus` -- a channel moves its share times the bus factor over each hop (default False).

Not hooks: :meth:`ChannelLayout.threshold` (NCCL's table, per rank where :attr:`ChannelLayout.ll_per_rank`) and
:meth:`ChannelLayout.settings_by_count` (whether the two group hooks above are the defaults).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ...topology import Topology
from ..caches import CollectiveCaches
from ..channels import Segment
from ..nccl_tables import MAX_THREADS, THREAD_THRESHOLD
from ..pattern import HopTable

__all__ = ["ChannelLayout", "Layout", "THREADS", "THRESHOLD"]

# NCCL's threads per channel and bytes per thread before it adds a channel
# (maxThreads and NCCL_*_THREAD_THRESHOLD in src/graph/tuning.cc, src/include/comm.h)
THREADS = MAX_THREADS
THRESHOLD = THREAD_THRESHOLD

# what ChannelLayout.structure returns: the bus factor, and per channel group its hops, channels, graph channels
Layout = tuple[float, list[HopTable], list[int], list[int]]


class ChannelLayout(ABC):
    """An algorithm's channels and their hops (see the module's contract)."""

    #: its link share is in its hops' overhead: the structure depends on it, the flows' loads do not
    share_in_hops: bool = False
    #: a channel moves its share times the bus factor over each hop (a ring's pipeline)
    per_hop_bus: bool = False
    #: LL's channel threshold grows with the ranks (tuning.cc: a ring's LL threshold is per rank)
    ll_per_rank: bool = False
    #: NCCL's scheduler spreads its tasks over channels with at least 32 KiB of traffic each
    #: (scheduleCollTasksToPlan, enqueue.cc); CollNet's tasks keep topoGetAlgoInfo's count
    scheduled: bool = True

    def channels_used(self, topo: Topology, proto: str, members: tuple[int, ...], full: int, nbytes: float,
                      caches: CollectiveCaches | None = None) -> int:
        """Channels NCCL runs for ``nbytes`` of ``full`` ring channels: it drops channels while each would get
        less than threads x threshold bytes."""
        return max(1, min(full, int(nbytes // (THREADS[proto] * self.threshold(proto, len(members))))))

    @classmethod
    def settings_by_count(cls) -> bool:
        """Whether a group's settings (:meth:`~p2sim.collectives.expand.Expander._settings`) read it only through
        its size, node count and channels: neither :meth:`channels_used` nor :meth:`heads` is its own."""
        return cls.channels_used is ChannelLayout.channels_used and cls.heads is ChannelLayout.heads

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
