"""An algorithm's latency and caps: the part of :class:`~.base.Algorithm` NCCL's tuning model and the caps read.

Contract
--------
Required (abstract):

* :meth:`Costs.latency` -- NCCL's start-up latency from its per-step latencies (tuning.cc);
* :meth:`Costs.link_share` -- the share of the links' rate a protocol achieves.

Hooks with defaults:

* :meth:`Costs.network_step` -- whose network step NCCL charges (default: the tree's with one GPU per node);
* :meth:`Costs.tuning_share` -- an extra share in NCCL's model only (default 1);
* :meth:`Costs.channel_cap` -- a graph channel's GPU-side bus bandwidth (default: no cap);
* :meth:`Costs.tuning_channel_cap` -- the cap NCCL's own model reads under the job's release (default:
  :meth:`Costs.channel_cap`);
* :attr:`Costs.cta_protos` -- protocols capped at a CTA's share of the node's links (default: none);
* :meth:`Costs.rate_family` -- whose calibrated rates it reads, ``ring_*`` or ``tree_*`` (default ``"ring"``).

:meth:`Costs.net_rate` and :meth:`Costs.channel_rate` are not hooks: they read the family's fields.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

from ...topology.settings import ModelRates, NcclSettings

__all__ = ["Costs", "RATE_FAMILIES"]

# each family's calibrated rates: (per-channel network rate, per-channel GPU-side rate) fields of ModelRates
RATE_FAMILIES = {"ring": ("ring_net_rate", "ring_channel_rate"), "tree": ("tree_net_rate", "tree_channel_rate")}


class Costs(ABC):
    """An algorithm's latency, shares and caps (see the module's contract)."""

    #: the protocols whose channels' GPU-side rate has no cap of NCCL's own (perChMax*Bw): at fewer channels or
    #: threads than its full count, p2sim caps each at a CTA's share of the node's links (expand.py, "The
    #: medium-size ramp"); none by default
    cta_protos: tuple[str, ...] = ()

    def network_step(self, ranks: int, nodes: int) -> str:
        """Whose network step NCCL charges it: with one GPU per node every step is exposed, and NCCL charges
        the tree's (tuning.cc)."""
        return "tree" if ranks == nodes else self.name

    @abstractmethod
    def latency(self, proto: str, op: str, ranks: int, nodes: int, intra: float, inter: float, nbytes: float,
                channels: int, arch: str) -> float:
        """NCCL's start-up latency (s) from its per-step latencies ``intra`` and ``inter`` (s)."""

    @abstractmethod
    def link_share(self, proto: str, op: str, nodes: int, nbytes: float, arch: str) -> float:
        """The share of the links' rate a collective of it with this protocol achieves."""

    def tuning_share(self, op: str) -> float:
        """The extra share of the links' rate NCCL's model (not the wire) gives it."""
        return 1.0

    def channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None) -> float:
        """Bus bandwidth (GB/s) one graph channel can reach on the GPU side (``inf``: no cap);
        ``configured`` is the system file's (or calibration's) ``*_channel_rate`` (:meth:`channel_rate`)."""
        return math.inf

    def tuning_channel_cap(self, proto: str, nodes: int, arch: str, configured: float | None,
                           nccl: NcclSettings) -> float:
        """The per-channel cap NCCL's own model (its choice) reads under the job's release (``nccl.version``):
        :meth:`channel_cap` unless that release had other figures (a tree on Blackwell before 2.28.3)."""
        return self.channel_cap(proto, nodes, arch, configured)

    def rate_family(self) -> str:
        """Whose calibrated per-channel rates it reads (a key of :data:`RATE_FAMILIES`): a ring's."""
        return "ring"

    def net_rate(self, rates: ModelRates) -> float | None:
        """Its family's per-channel network rate in ``rates`` (GB/s; None: not set)."""
        return getattr(rates, RATE_FAMILIES[self.rate_family()][0])

    def channel_rate(self, rates: ModelRates) -> float | None:
        """Its family's per-channel GPU-side rate in ``rates`` (GB/s; None: not set)."""
        return getattr(rates, RATE_FAMILIES[self.rate_family()][1])
