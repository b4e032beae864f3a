"""What binds a collective: the link class, per-channel limit or latency that sets its time.

A collective alone takes ``latency + bytes / algbw`` (:meth:`Collective.algbw`), and its
algorithm bandwidth is the least of its resources' rates: each link's capacity over the
link's bytes per byte of buffer, each flow's caps (the per-channel figures below) and the
collective's shared cap.  The resource with the least rate binds it; where the latency
is the larger term, the latency does.  :meth:`p2sim.sim.Simulator.binding` adds the links
that concurrent groups share.

Cap kinds (what each :attr:`Flow.cap_kinds` entry is, set where the caps are made in
:mod:`p2sim.collectives.expand`):

* :data:`CAP_NET`: a channel's network connection (``[model] *_net_rate``, or the
  transport's per-connection figure);
* :data:`CAP_CHANNEL`: NCCL's per-channel bus bandwidth (its LL128 tables, or the
  system file's ``*_channel_rate``);
* :data:`CAP_WINDOW`: the pipeline's window of chunks over the network round trip;
* :data:`CAP_STEP`: the calibrated per-step cost (``[model] step_cost``);
* :data:`CAP_LL`: the LL protocol's cap on a whole collective (NCCL's ``llMaxBw``);
* :data:`CAP_RAIL`: a connection's messages on the rails of a multi-rail network device (aws-ofi-nccl's
  stripes, :mod:`p2sim.collectives.rails`).

Examples
--------
>>> from p2sim.topology import load_system
>>> from p2sim.sim import SimSettings, Simulator
>>> topo = load_system("a100", 2)
>>> c = Simulator(topo, SimSettings("ring")).collectives("AllReduce", [tuple(range(32))], [2**30])[0]
>>> collective_binding(c, topo.capacity, topo.edge_class, 2**30).resource   # one 100 Gb/s NIC per node
'nic'
>>> collective_binding(c, topo.capacity, topo.edge_class, 8).resource
'latency'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .pattern import Collective

__all__ = ["Binding", "collective_binding", "tied_classes", "CAP_NET", "CAP_CHANNEL", "CAP_WINDOW", "CAP_STEP", "CAP_LL",
           "CAP_RAIL", "LATENCY"]

CAP_NET = "per-channel network rate"
CAP_CHANNEL = "per-channel rate"
CAP_WINDOW = "pipeline window"
CAP_STEP = "per-step cost"
CAP_LL = "LL protocol cap"
CAP_RAIL = "network rails"
LATENCY = "latency"


@dataclass(frozen=True)
class Binding:
    """The resource that sets a step's time.

    ``kind`` is ``link`` (``resource`` is a link class of the system file: ``nic``,
    ``nvswitch``, ``leaf``...), ``cap`` (a per-channel or protocol limit, named above) or
    ``latency``; ``seconds`` is the time that resource alone implies; ``groups`` how many
    of the step's groups share it (more than one: contention between groups).
    """

    resource: str
    kind: str
    seconds: float
    groups: int = 1

    @property
    def text(self) -> str:
        what = {"link": f"{self.resource} links", "cap": self.resource, "latency": "latency"}[self.kind]
        return what + (f" shared by {self.groups} groups" if self.groups > 1 else "")

    def to_json(self) -> dict[str, Any]:
        return {"resource": self.resource, "kind": self.kind, "seconds": self.seconds, "groups": self.groups,
                "text": self.text}


def tied_classes(edge_class: Sequence[str], edges: np.ndarray, values: np.ndarray, k: int) -> str:
    """The link class of ``edges[k]``, the link that binds (its rate least, or its time most, in ``values``),
    with every other class whose links bind as much (equal to 1e-9): ``nic and pcie`` where a PCIe link and
    the NIC it feeds run at one rate.  Raising one of them alone would gain nothing, so the answer names all;
    where one is slower, it alone binds and is named (dgx-h100: NCCL counts a PCIe gen5 x16 link at 48 GB/s,
    below the NDR NIC's 50, so cross-node transfers are bound by ``pcie links``; docs/answers.md).

    >>> tied_classes(["nic", "pcie", "nvlink"], np.array([0, 1, 2]), np.array([50.0, 50.0, 90.0]), 0)
    'nic and pcie'
    >>> tied_classes(["nic", "pcie"], np.array([0, 1]), np.array([50.0, 48.0]), 1)
    'pcie'
    """
    first = edge_class[int(edges[k])]
    best = float(values[k])
    tied = np.abs(values - best) <= 1e-9 * abs(best)
    others = sorted({edge_class[int(e)] for e in edges[tied]} - {first})
    return " and ".join([first, *others])


def collective_binding(c: Collective, capacity: np.ndarray, edge_class: Sequence[str], nbytes: float) -> Binding:
    """The resource with the least rate for this collective alone, or its latency if that is larger."""
    rates: list[tuple[float, str, str]] = []
    edges, coef = c.link_load()
    if len(edges):
        per_link = capacity[edges] / coef
        k = int(np.argmin(per_link))
        rates.append((float(per_link[k]), tied_classes(edge_class, edges, per_link, k), "link"))
    for f in c.flows:
        kinds = f.cap_kinds or ("cap",) * len(f.caps)
        for (cap, co), kind in zip(f.caps, kinds):
            rates.append((cap / (co * f.share), kind, "cap"))
    for cap, per_flow in c.shared_caps:
        load = sum(co * f.share for co, f in zip(per_flow, c.flows))
        if load > 0:
            rates.append((cap / load, CAP_LL, "cap"))
    if not rates:
        return Binding(LATENCY, "latency", c.latency)
    rate, name, kind = min(rates, key=lambda r: r[0])  # first of equals: links before caps
    bandwidth = nbytes / rate
    if c.latency >= bandwidth:
        return Binding(LATENCY, "latency", c.latency + bandwidth)
    return Binding(name, kind, c.latency + bandwidth)
