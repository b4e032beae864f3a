"""Topologies as networkx graphs, with NCCL's transport choice for GPU-to-GPU routes.

:class:`Topology` instantiates a :class:`~p2sim.topology.spec.SystemSpec` for a node
count as a :class:`networkx.DiGraph`.  A full-duplex link is two directed edges.

Node attributes
    ``kind`` (one of :data:`~p2sim.topology.spec.KINDS`), ``node`` (node instance,
    ``None`` for network components), ``device`` (global GPU index, GPUs only).
Edge attributes
    ``cls`` (link class), ``bandwidth`` (bytes/s, per direction), ``latency``
    (seconds per traversal), ``index`` (position in :attr:`Topology.capacity`).

Node names are ``n<i>/<component>`` inside node ``i`` and ``net/<component>`` in the
network.  GPU ``local`` of node ``i`` has global index ``i * gpus_per_node + local``,
the mixed-radix index the synthesizer uses.

Routes follow NCCL's transports: a direct GPU-GPU link (NVLink) or a shared NVSwitch
first; otherwise PCIe peer-to-peer or host memory through the node's PCIe switches
and CPUs (NCCL never relays through a third GPU); between nodes, from the GPU to its
nearest NIC, through the network, and down from the peer's nearest NIC.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from ..errors import TopologyError
from .spec import LinkSpec, SystemSpec

__all__ = ["Route", "Topology"]

GB = 1e9
US = 1e-6


@dataclass(frozen=True)
class Route:
    """A GPU-to-GPU path: directed edge indices, total latency (s), and whether it leaves the node."""

    edges: tuple[int, ...]
    latency: float
    inter_node: bool


class Topology:
    """A system instantiated for a node count (immutable after construction).

    Examples
    --------
    >>> from p2sim.topology import load_system
    >>> topo = load_system("a100", nodes=2)
    >>> topo.devices, topo.hierarchy
    (32, (2, 16))
    >>> [topo.graph.edges[e]["cls"] for e in topo.path_names(0, 1)]
    ['nvswitch', 'nvswitch']
    >>> [topo.graph.edges[e]["cls"] for e in topo.path_names(0, 16)]
    ['pcie', 'pcie', 'pcie', 'nic', 'nic', 'pcie', 'pcie', 'pcie']
    """

    def __init__(self, spec: SystemSpec, nodes: int | None = None) -> None:
        n = spec.default_nodes if nodes is None else nodes
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise TopologyError(f"nodes: {n!r} must be a positive integer")
        self.spec = spec
        self.nodes = n
        self.hierarchy: tuple[int, ...] = spec.hierarchy(n)
        self.level_names: tuple[str, ...] = tuple(lv.name for lv in spec.levels)
        self.node_count = spec.node_count(n)
        self.gpus_per_node = len(spec.gpus)
        self.devices = self.node_count * self.gpus_per_node
        self._local_gpu = {g: i for i, g in enumerate(spec.gpus)}
        self._build()
        self._intra: dict[tuple[int, int], tuple[tuple[int, ...], float]] = {}
        self._net: dict[tuple[str, str], tuple[int, ...]] = {}
        self._routes: dict[tuple[int, int], Route] = {}
        self._check_connected()

    # -- construction -------------------------------------------------------------
    def _build(self) -> None:
        g = nx.DiGraph(name=self.spec.name)
        spec = self.spec
        for i in range(self.node_count):
            for local, name in enumerate(spec.gpus):
                g.add_node(f"n{i}/{name}", kind="gpu", node=i, device=i * self.gpus_per_node + local)
            for name, kind in spec.components:
                g.add_node(f"n{i}/{name}", kind=kind, node=i, device=None)
        for name, kind in spec.network_components:
            g.add_node(f"net/{name}", kind=kind, node=None, device=None)
        self._edges: list[tuple[str, str]] = []
        bw: list[float] = []
        lat: list[float] = []
        cls: list[str] = []
        local = set(spec.gpus) | {c for c, _ in spec.components}

        def add(u: str, v: str, ln: LinkSpec) -> None:
            c = spec.classes[ln.cls]
            b = (ln.bandwidth if ln.bandwidth is not None else c.bandwidth) * GB
            t = (ln.latency if ln.latency is not None else c.latency) * US
            for a, z in ((u, v), (v, u)):
                if g.has_edge(a, z):
                    raise TopologyError(f"{spec.source}: link {a} -> {z} is declared twice")
                g.add_edge(a, z, cls=ln.cls, bandwidth=b, latency=t, index=len(self._edges))
                self._edges.append((a, z))
                bw.append(b)
                lat.append(t)
                cls.append(ln.cls)

        for i in range(self.node_count):
            for ln in spec.node_links:
                for a, b in ln.pairs:
                    add(f"n{i}/{a}", f"n{i}/{b}", ln)
            if i == 0:
                self._edges_per_node = len(self._edges)
        for ln in spec.network_links:
            for a, b in ln.pairs:
                if a in local or b in local:
                    inner, outer = (a, b) if a in local else (b, a)
                    for i in range(self.node_count):
                        add(f"n{i}/{inner}", f"net/{outer}", ln)
                else:
                    add(f"net/{a}", f"net/{b}", ln)
        self.graph = g
        self.capacity = np.asarray(bw, dtype=float)
        self.latency = np.asarray(lat, dtype=float)
        self.edge_class: tuple[str, ...] = tuple(cls)
        self._index = {e: k for k, e in enumerate(self._edges)}

    def _check_connected(self) -> None:
        for a in range(self.gpus_per_node):
            for b in range(self.gpus_per_node):
                if a != b:
                    self._intra_route(a, b)
        if self.node_count > 1:
            for a in range(self.gpus_per_node):
                self.route(a, self.devices - self.gpus_per_node + a)
                self.route(self.devices - self.gpus_per_node + a, a)

    # -- naming -------------------------------------------------------------------
    def gpu_name(self, device: int) -> str:
        node, local = divmod(device, self.gpus_per_node)
        return f"n{node}/{self.spec.gpus[local]}"

    def node_of(self, device: int) -> int:
        return device // self.gpus_per_node

    @property
    def edges(self) -> list[tuple[str, str]]:
        """Directed edges, in index order."""
        return list(self._edges)

    def classes(self) -> list[str]:
        return sorted(self.spec.classes)

    # -- routing ------------------------------------------------------------------
    def _node0_path(self, src: str, dst: str, allowed: set[str]) -> list[str] | None:
        view = nx.subgraph_view(self.graph, filter_node=lambda x: x in allowed or x == src or x == dst)
        try:
            return nx.shortest_path(view, src, dst, weight=_hop_weight)
        except nx.NetworkXNoPath:
            return None

    def _edge_ids(self, path: list[str]) -> tuple[int, ...]:
        return tuple(self._index[(a, b)] for a, b in zip(path, path[1:]))

    @cached_property
    def _host_nodes(self) -> set[str]:
        return {f"n0/{c}" for c, k in self.spec.components if k in ("pcie_switch", "cpu")}

    def _intra_route(self, a: int, b: int) -> tuple[tuple[int, ...], float]:
        """Route between local GPUs of node 0 (edge ids, latency)."""
        hit = self._intra.get((a, b))
        if hit is not None:
            return hit
        u, v = f"n0/{self.spec.gpus[a]}", f"n0/{self.spec.gpus[b]}"
        g = self.graph
        path: list[str] | None = None
        if g.has_edge(u, v):
            path = [u, v]
        else:
            switches = [s for s in g.successors(u) if g.nodes[s]["kind"] == "nvswitch" and g.has_edge(s, v)]
            if switches:
                best = max(switches, key=lambda s: (min(g.edges[u, s]["bandwidth"], g.edges[s, v]["bandwidth"]), s))
                path = [u, best, v]
            else:
                path = self._node0_path(u, v, self._host_nodes)
        if path is None:
            raise TopologyError(
                f"{self.spec.source}: GPU {self.spec.gpus[a]} cannot reach GPU {self.spec.gpus[b]} inside a node "
                "(no NVLink, NVSwitch or PCIe/host path)"
            )
        ids = self._edge_ids(path)
        out = (ids, float(sum(self.latency[list(ids)])))
        self._intra[(a, b)] = out
        return out

    @cached_property
    def _nic_assignment(self) -> dict[int, tuple[str, tuple[int, ...], tuple[int, ...]]]:
        """Each local GPU's NIC (name, edges up, edges down) inside node 0.

        A GPU takes its nearest NIC; among equally near ones, the NIC with the fewest
        GPUs so far, so that a rail-optimised node gives GPU ``i`` NIC ``i``.
        """
        nics = [c for c, k in self.spec.components if k == "nic"]
        load = {nic: 0 for nic in nics}
        out = {}
        for a, name in enumerate(self.spec.gpus):
            gpu = f"n0/{name}"
            best = None
            for order, nic in enumerate(nics):
                up = self._node0_path(gpu, f"n0/{nic}", self._host_nodes)
                down = self._node0_path(f"n0/{nic}", gpu, self._host_nodes)
                if up is None or down is None:
                    continue
                key = (len(up), load[nic], order)
                if best is None or key < best[0]:
                    best = (key, nic, self._edge_ids(up), self._edge_ids(down))
            if best is None:
                if self.node_count > 1:
                    raise TopologyError(f"{self.spec.source}: GPU {name} has no path to a NIC")
                continue
            load[best[1]] += 1
            out[a] = (best[1], best[2], best[3])
        return out

    def _nic_of(self, a: int) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
        return self._nic_assignment[a]

    def nic_of(self, device: int) -> str:
        """The NIC (component name inside its node) that GPU ``device`` uses for the network."""
        return self._nic_of(device % self.gpus_per_node)[0]

    def _net_route(self, src: str, dst: str) -> tuple[int, ...]:
        hit = self._net.get((src, dst))
        if hit is not None:
            return hit
        allowed = {x for x, d in self.graph.nodes(data=True) if d["node"] is None}
        view = nx.subgraph_view(self.graph, filter_node=lambda x: x in allowed or x == src or x == dst)
        try:
            path = nx.shortest_path(view, src, dst, weight=_hop_weight)
        except nx.NetworkXNoPath:
            raise TopologyError(f"{self.spec.source}: the network does not join {src} and {dst}") from None
        out = self._edge_ids(path)
        self._net[(src, dst)] = out
        return out

    def route(self, src: int, dst: int) -> Route:
        """The route NCCL would use from GPU ``src`` to GPU ``dst`` (cached)."""
        key = (src, dst)
        hit = self._routes.get(key)
        if hit is not None:
            return hit
        for d in key:
            if not 0 <= d < self.devices:
                raise TopologyError(f"device: {d} is not in 0..{self.devices - 1}")
        if src == dst:
            raise TopologyError(f"device: a route from GPU {src} to itself")
        p, a = divmod(src, self.gpus_per_node)
        q, b = divmod(dst, self.gpus_per_node)
        off = self._edges_per_node
        if p == q:
            ids, _ = self._intra_route(a, b)
            edges = tuple(e + p * off for e in ids)
        else:
            nic_a, up, _ = self._nic_of(a)
            nic_b, _, down = self._nic_of(b)
            edges = (
                tuple(e + p * off for e in up)
                + self._net_route(f"n{p}/{nic_a}", f"n{q}/{nic_b}")
                + tuple(e + q * off for e in down)
            )
        r = Route(edges, float(sum(self.latency[list(edges)])), p != q)
        self._routes[key] = r
        return r

    def path_names(self, src: int, dst: int) -> list[tuple[str, str]]:
        """The route as directed edges ``(u, v)`` of :attr:`graph`."""
        return [self._edges[e] for e in self.route(src, dst).edges]


def _hop_weight(u: str, v: str, data: dict) -> float:
    # fewest hops first, then lowest latency, then widest links
    return 1.0 + data["latency"] * 1e3 + 1.0 / (1.0 + data["bandwidth"] / GB) * 1e-3


def bisection(topo: Topology) -> dict[str, float]:
    """Link-level bisection figures in GB/s per direction.

    ``nodes``: max flow from the GPUs of the first half of the nodes to those of the
    second half; ``node_gpus``: the same between the two halves of node 0's GPUs.
    """
    out: dict[str, float] = {}

    def cut(g: nx.DiGraph, left: list[str], right: list[str]) -> float:
        h = g.copy()
        for x in left:
            h.add_edge("_s", x, bandwidth=math.inf)
        for x in right:
            h.add_edge(x, "_t", bandwidth=math.inf)
        return nx.maximum_flow_value(h, "_s", "_t", capacity="bandwidth") / GB

    if topo.node_count > 1:
        half = topo.node_count // 2
        left = [topo.gpu_name(d) for d in range(half * topo.gpus_per_node)]
        right = [topo.gpu_name(d) for d in range(half * topo.gpus_per_node, topo.devices)]
        out["nodes"] = cut(topo.graph, left, right)
    node0 = topo.graph.subgraph(x for x, d in topo.graph.nodes(data=True) if d["node"] == 0)
    half = topo.gpus_per_node // 2
    if half:
        out["node_gpus"] = cut(
            nx.DiGraph(node0),
            [topo.gpu_name(d) for d in range(half)],
            [topo.gpu_name(d) for d in range(half, topo.gpus_per_node)],
        )
    return out
