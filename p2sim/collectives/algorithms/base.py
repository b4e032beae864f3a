"""The interface every NCCL algorithm implements: :class:`Algorithm`, the union of its four parts.

An algorithm is four small parts, each its own module with a contract saying which hooks are required
and which have defaults:

=====================  =================================================  =======================================
part                   what it answers                                    required hooks
=====================  =================================================  =======================================
:mod:`.availability`   whether it can run here, for this group            none
:mod:`.layout`         its channels and their hops                        ``bus_factor``, ``structure``
:mod:`.pipeline`       its chunks, slots and connections                  none
:mod:`.costs`          NCCL's latency, link shares, caps, rate family     ``latency``, ``link_share``
=====================  =================================================  =======================================

So a new algorithm writes four methods and a ``name``, and overrides the defaults that are not NCCL's generic
rule for it (docs/architecture.md, "Adding an algorithm").  Besides its parts it has an analytic baseline
(:meth:`Algorithm.baseline`: a ring's by default).  Methods that need the system take its topology (its
GPUs' generation is ``topo.spec.nccl.arch``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...topology import Topology
from ..baseline import ring_baseline
from .availability import Availability
from .costs import Costs
from .layout import THREADS, THRESHOLD, ChannelLayout, Layout
from .pipeline import Pipeline

__all__ = ["Algorithm", "Layout", "THREADS", "THRESHOLD"]


class Algorithm(Availability, ChannelLayout, Pipeline, Costs):
    """One of NCCL's algorithms behind one interface (see the module's text and each part's contract)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def baseline(self, topo: Topology, op: str, members: Sequence[int], nbytes: float) -> tuple[float, str]:
        """The link-bottleneck reference (:mod:`p2sim.collectives.baseline`) and which formula gave it: a ring's,
        unless the algorithm has its own."""
        return ring_baseline(topo, op, members, nbytes), "ring"
