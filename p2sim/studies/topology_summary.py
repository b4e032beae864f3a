"""What ``p2sim topo`` answers of a system: :class:`TopologySummary`, computed once, worded by the report.

Its components and link classes (each class's directed links, effective rates and latencies), its fabric's
tiers, its bisection bandwidths, the assumptions its file states and what NCCL would build on it
(:func:`~p2sim.sim.nccl_plan.nccl_plan`).  :func:`summarise` computes it; :mod:`p2sim.report.simulate`
only puts it in words (``topology_text``) or a JSON document (``topology_json``).

Examples
--------
>>> from p2sim.topology import load_system
>>> s = summarise(load_system("a100", nodes=2))
>>> s.devices, s.nodes, [c.name for c in s.links][:2]
(32, 2, ['nic', 'nvswitch'])
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..sim.nccl_plan import AlgorithmPlan, nccl_plan
from ..topology import Topology, bisection

__all__ = ["LinkClass", "TopologySummary", "summarise"]


@dataclass(frozen=True)
class LinkClass:
    """One class of links: its directed links, their effective rates (GB/s: the data sheet's times the class's
    ``efficiency``) and latencies (us), each distinct value once in increasing order."""

    name: str
    directed_edges: int
    bandwidth_gbps: tuple[float, ...]
    latency_us: tuple[float, ...]
    efficiency: float


@dataclass(frozen=True)
class TopologySummary:
    """A system's topology as ``p2sim topo`` answers it (see the module's text).  ``fabric`` is its fabric's
    routing, rails and tiers (:meth:`~p2sim.topology.fabric.Fabric.summary`), None without one;
    ``bisection_gbps`` the bisections computed (``nodes``, ``node``: GB/s per direction)."""

    topology: Topology = field(repr=False, compare=False)
    system: str
    description: str
    source: str
    nodes: int
    hierarchy: tuple[tuple[str, int], ...]
    devices: int
    components: tuple[tuple[str, int], ...]
    links: tuple[LinkClass, ...]
    fabric: dict | None
    bisection_gbps: dict[str, float]
    assumed: tuple[str, ...]
    nccl: tuple[AlgorithmPlan, ...]


def _link_classes(topo: Topology) -> tuple[LinkClass, ...]:
    rates: dict[str, set[float]] = {}
    lats: dict[str, set[float]] = {}
    count: Counter = Counter()
    for k in range(len(topo.edges)):
        c = topo.edge_class[k]
        count[c] += 1
        rates.setdefault(c, set()).add(float(round(topo.capacity[k] / 1e9, 6)))
        lats.setdefault(c, set()).add(float(round(topo.latency[k] * 1e6, 6)))
    return tuple(LinkClass(c, count[c], tuple(sorted(rates[c])), tuple(sorted(lats[c])),
                           topo.spec.classes[c].efficiency) for c in sorted(count))


def summarise(topo: Topology) -> TopologySummary:
    """What ``p2sim topo`` answers of ``topo``."""
    kinds = Counter(d["kind"] for _, d in topo.graph.nodes(data=True))
    fabric = None if topo.fabric is None else {
        "routing": topo.fabric.spec.routing, "rails": topo.fabric.spec.rails, "tiers": topo.fabric.summary()}
    return TopologySummary(
        topology=topo, system=topo.spec.name, description=topo.spec.description, source=topo.spec.source,
        nodes=topo.node_count, hierarchy=tuple(zip(topo.level_names, topo.hierarchy)), devices=topo.devices,
        components=tuple(sorted(kinds.items())), links=_link_classes(topo), fabric=fabric,
        bisection_gbps=bisection(topo), assumed=tuple(topo.spec.assumed), nccl=tuple(nccl_plan(topo)))
