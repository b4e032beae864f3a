"""Whether an algorithm can run: the part of :class:`~.base.Algorithm` NCCL's choice and a forced run ask first.

Contract
--------
Required: nothing -- an algorithm that runs every collective of its row (:mod:`p2sim.util.algorithms`) on every
system and group needs no hook here.
Hooks with defaults (override the ones whose rule is the algorithm's own):

* :meth:`Availability.why_not_system` -- why no collective can run it on this system (default: None, it can);
* :meth:`Availability.why_not_group` -- why this group cannot (default: None, it can);
* :attr:`Availability.simple_only` -- NCCL runs it with the Simple protocol only (default: False);
* :attr:`Availability.any_group` -- no group of a collective it serves can be refused (default: False; the
  simulator then checks each group).

:meth:`Availability.usable` is not a hook: it joins the reasons, so what NCCL picks from and what a forced run is
refused for cannot drift apart; nor is :attr:`Availability.info`, the algorithm's row of the table.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...topology import Topology
from ...util.algorithms import Algorithm as Info
from ...util.algorithms import algorithm as info_of
from ..caches import CollectiveCaches
from ..channels import Segment

__all__ = ["Availability"]


class Availability:
    """Whether an algorithm can run (see the module's contract)."""

    #: p2sim's name (a row of :data:`p2sim.util.algorithms.TABLE`); set by each algorithm
    name: str = ""
    #: NCCL runs it with the Simple protocol only (tuning.cc: busBw = 0 for LL and LL128)
    simple_only: bool = False
    #: it runs every group of a collective it serves (no group can be refused)
    any_group: bool = False

    @property
    def info(self) -> Info:
        """Its row of :mod:`p2sim.util.algorithms`' table (NCCL's name, enum index, collectives, help)."""
        return info_of(self.name)

    def usable(self, topo: Topology, op: str, segs: Sequence[Segment], caches: CollectiveCaches | None = None) -> bool:
        """Whether NCCL may pick it for ``op`` over a group of these segments: it serves ``op`` and neither
        :meth:`why_not_system` nor :meth:`why_not_group` gives a reason."""
        return (op in self.info.collectives and self.why_not_system(topo) is None
                and self.why_not_group(topo, op, segs, caches) is None)

    def why_not_system(self, topo: Topology) -> str | None:
        """Why no collective can run it on this system (GPUs, NVSwitch, fabric, settings, nodes), or None."""
        return None

    def why_not_group(self, topo: Topology, op: str, segs: Sequence[Segment],
                      caches: CollectiveCaches | None = None) -> str | None:
        """Why this group (on a system where it can run, of a collective it serves) cannot run it, or None."""
        return None
