"""Faults: parts of one system slower than the file says, for what-if studies ("why is this run slow").

* :class:`NodeFault` -- in one node, a component's links at another data-sheet rate (a NIC
  trained down to 100G: its network port; any other component: every link it has in the
  node), or every link of the node scaled (a slow node);
* :class:`UplinkFault` -- one switch group of a fabric tier with fewer uplink ports (a spine
  link down: one port fewer; with ECMP routing flows hash over the ports left).

Faults live in the system (:attr:`~p2sim.topology.spec.SystemSpec.faults`), so a study's
tasks carry them; :class:`~p2sim.topology.graph.Topology` applies them to its link
capacities.  A fault breaks the symmetry between nodes: groups it touches are expanded
where they are, never moved from elsewhere.

Examples
--------
>>> parse_fault("node3.nic0.bandwidth", 12.5)
NodeFault(node=3, component='nic0', bandwidth=12.5, scale=None)
>>> parse_fault("node3.speed", 0.5), parse_fault("leaf2.uplinks", 31)
(NodeFault(node=3, component=None, bandwidth=None, scale=0.5), UplinkFault(tier='leaf', group=2, uplinks=31.0))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..util.errors import InputError, TopologyError
from . import ranges

__all__ = ["NodeFault", "UplinkFault", "Fault", "parse_fault", "check_fault", "FAULT_PATTERN"]


@dataclass(frozen=True)
class NodeFault:
    node: int
    component: str | None  # None: the whole node, scaled
    bandwidth: float | None = None  # GB/s, data-sheet rate of the component's links
    scale: float | None = None  # the node's links' rates multiplied

    @property
    def label(self) -> str:
        return f"node{self.node}." + (f"{self.component}.bandwidth" if self.component else "speed")


@dataclass(frozen=True)
class UplinkFault:
    tier: str
    group: int
    uplinks: float

    @property
    def label(self) -> str:
        return f"{self.tier}{self.group}.uplinks"


Fault = NodeFault | UplinkFault

# node<N>.<component>.bandwidth, node<N>.speed, <tier><group>.uplinks
FAULT_PATTERN = re.compile(r"^(?:node(\d+)\.(?:([A-Za-z_][\w-]*)\.bandwidth|(speed))|([A-Za-z_][A-Za-z_-]*?)(\d+)\.uplinks)$")


def parse_fault(target: str, value: float) -> Fault | None:
    """The fault a what-if target names with this value, or ``None`` when the target is no fault."""
    m = FAULT_PATTERN.match(target)
    if not m:
        return None
    if m.group(1) is not None:
        node = int(m.group(1))
        if m.group(3):
            return NodeFault(node, None, None, float(value))
        return NodeFault(node, m.group(2), float(value), None)
    return UplinkFault(m.group(4), int(m.group(5)), float(value))


def check_fault(fault: Fault, where: str, rates: Sequence[float] = (), ports: int | None = None,
                error: type[InputError] = TopologyError) -> None:
    """A fault's value by the rule of the field it changes, so that a fault is never what a file may not say.

    A component's rate is a link's (:func:`.ranges.bandwidth`); a slow node's factor is in
    (0, 1000] and leaves each of its links (``rates``, GB/s) a link's rate; a group's uplinks
    are a whole number of its ``ports``.
    """
    if isinstance(fault, UplinkFault):
        ranges.whole(where, fault.uplinks, 1, ranges.MAX_UPLINKS if ports is None else ports,
                     f"uplink ports of the group, which has {ports}" if ports is not None else "uplink ports", error)
    elif fault.scale is None:
        ranges.bandwidth(where, fault.bandwidth, error)
    else:
        ranges.speed(where, fault.scale, error)
        for rate in (min(rates, default=1.0), max(rates, default=1.0)):
            if not ranges.MIN_BANDWIDTH_GBPS <= rate * fault.scale <= ranges.MAX_BANDWIDTH_GBPS:
                raise error(f"{where}: {fault.scale:g} makes the node's {rate:g} GB/s links {rate * fault.scale:g} GB/s, "
                            f"not a real link's rate (between {ranges.MIN_BANDWIDTH_GBPS:g} and "
                            f"{ranges.MAX_BANDWIDTH_GBPS:g})")
