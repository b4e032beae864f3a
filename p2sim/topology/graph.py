"""Topologies as networkx graphs, with NCCL's transport choice for GPU-to-GPU routes.

:class:`Topology` instantiates a :class:`~p2sim.topology.spec.SystemSpec` for a node
count as a :class:`networkx.DiGraph`.  A full-duplex link is two directed edges.

Node attributes
    ``kind`` (one of :data:`~p2sim.topology.spec.KINDS`), ``node`` (node instance,
    ``None`` for network components), ``device`` (global GPU index, GPUs only).
Edge attributes
    ``cls`` (link class), ``bandwidth`` (bytes/s per direction that NCCL's transfers
    achieve: the file's rate times its class's ``efficiency``), ``latency`` (seconds per
    traversal), ``index`` (position in :attr:`Topology.capacity`).

Node names are ``n<i>/<component>`` inside node ``i`` and ``net/<component>`` in the
network.  GPU ``local`` of node ``i`` has global index ``i * gpus_per_node + local``,
the mixed-radix index the synthesizer uses.

Routes follow NCCL's transports (:mod:`p2sim.topology.paths`): a direct GPU-GPU link
(NVLink) or a shared NVSwitch first; otherwise PCIe peer-to-peer up to
``NCCL_P2P_LEVEL``, or host memory (SHM); between nodes, from the GPU to a NIC
(GPUDirect RDMA, PXN through an NVLink peer, or host memory), through the network, and
down to the peer.  Each topology routes through its :class:`~p2sim.topology.routing.Router`,
built once as :attr:`Topology.router`: :meth:`~p2sim.topology.routing.Router.route` uses each
GPU's default (nearest) NIC; :meth:`~p2sim.topology.routing.Router.route_via` names the NICs, as
a channel does.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from collections.abc import Sequence
from functools import cached_property

import networkx as nx
import numpy as np

from ..util.errors import TopologyError
from .fabric import Fabric
from .faults import NodeFault, UplinkFault
from .routing import Route, Router
from .spec import MAX_NODES, LinkSpec, SystemSpec

__all__ = ["Route", "Router", "Topology"]

GB = 1e9
US = 1e-6


class Topology:
    """A system instantiated for a node count (immutable after construction).

    Its routes are asked of :attr:`router`, a :class:`~p2sim.topology.routing.Router` the
    topology builds once from its template graph, edge ids, latencies and strides, and which
    keeps the route caches; the topology itself is the graph and its arrays (:attr:`capacity`,
    :attr:`latency`, :attr:`edge_class`), its naming (:meth:`gpu_name`, :meth:`edge_name`,
    :attr:`gpu_names`, :attr:`nics`) and its symmetries (:meth:`move_edges`, :meth:`move_key`).

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
        if spec.node_count(n) > MAX_NODES:
            raise TopologyError(f"nodes: {n!r} gives {spec.node_count(n)} nodes, more than the {MAX_NODES} p2sim builds")
        self.spec = spec
        self.nodes = n
        self.hierarchy: tuple[int, ...] = spec.hierarchy(n)
        self.level_names: tuple[str, ...] = tuple(lv.name for lv in spec.levels)
        self.node_count = spec.node_count(n)
        self.gpus_per_node = len(spec.gpus)
        self.devices = self.node_count * self.gpus_per_node
        self._local_gpu = {g: i for i, g in enumerate(spec.gpus)}
        # node 0's GPUs, in local index order; the NICs NCCL may use (nccl.hca, else every NIC)
        self.gpu_names: tuple[str, ...] = tuple(f"n0/{g}" for g in spec.gpus)
        hca = spec.nccl.hca
        self.nics: tuple[str, ...] = tuple(c for c, k in spec.components if k == "nic" and (not hca or c in hca))
        self._build()
        self.router = Router(spec=spec, template=self.template, index=self._index, latency=self.latency,
                             stride=self._stride, edges_per_node=self._edges_per_node, fabric=self.fabric,
                             node_count=self.node_count, gpu_names=self.gpu_names, nics=self.nics)
        # what the layers above derive from a topology (ring searches, expansions, step results) is
        # theirs: p2sim.collectives.caches and p2sim.sim.context, never stored here
        self.router.check_connected()

    # -- construction -------------------------------------------------------------
    # Every node is one template joined to the network the same way, so the edges are laid
    # out by arithmetic: node i's links take ids [i E, (i+1) E) in the file's order (E per
    # node), then each network link in the file's order: one pair of ids per node for a link
    # from a node component (node i's at 2i, 2i+1 of its block), or one pair.  Routes need
    # only node 0, node 1 and the network (:attr:`template`); the whole graph is built when
    # asked for (:attr:`graph`).
    def _build(self) -> None:
        spec = self.spec
        local = set(spec.gpus) | {c for c, _ in spec.components}
        seen: set[tuple[str, str]] = set()

        def attrs(ln: LinkSpec) -> tuple[float, float]:
            c = spec.classes[ln.cls]
            # the capacity NCCL's transfers see: the data-sheet rate times the class's efficiency
            return ((ln.bandwidth if ln.bandwidth is not None else c.bandwidth) * c.efficiency * GB,
                    (ln.latency if ln.latency is not None else c.latency) * US)

        def check(u: str, v: str) -> None:
            for a, z in ((u, v), (v, u)):
                if (a, z) in seen:
                    raise TopologyError(f"{spec.source}: link {a} -> {z} is declared twice")
                seen.add((a, z))

        node: list[tuple[str, str, str, float, float]] = []  # one node's directed edges: (a, z, class, bw, lat)
        for ln in spec.node_links:
            b, t = attrs(ln)
            for u, v in ln.pairs:
                check(f"n0/{u}", f"n0/{v}")
                node += [(u, v, ln.cls, b, t), (v, u, ln.cls, b, t)]
        # network blocks: (first id, inner component or None, a, z, class, bw, lat)
        blocks: list[tuple[int, str | None, str, str, str, float, float]] = []
        count = len(node) * self.node_count
        for ln in spec.network_links:
            b, t = attrs(ln)
            for u, v in ln.pairs:
                if u in local or v in local:
                    inner, outer = (u, v) if u in local else (v, u)
                    check(f"n0/{inner}", f"net/{outer}")
                    blocks.append((count, inner, inner, outer, ln.cls, b, t))
                    count += 2 * self.node_count
                else:
                    check(f"net/{u}", f"net/{v}")
                    blocks.append((count, None, u, v, ln.cls, b, t))
                    count += 2
        self._node_edges, self._blocks = node, blocks
        self._block_starts = [blk[0] for blk in blocks]
        self._edges_per_node = len(node)
        n = self.node_count
        bw = [np.tile(np.array([e[3] for e in node], dtype=float), n)]
        lat = [np.tile(np.array([e[4] for e in node], dtype=float), n)]
        cls = [e[2] for e in node] * n
        stride = [np.full(len(node) * n, len(node), dtype=np.int64)]
        for _, inner, _, _, c, b, t in blocks:
            k = 2 * n if inner is not None else 2
            bw.append(np.full(k, b))
            lat.append(np.full(k, t))
            cls += [c] * k
            # moving everything one node on moves a node's link to the next node's pair
            stride.append(np.full(k, 2 if inner is not None else 0, dtype=np.int64))
        self.fabric: Fabric | None = None
        if spec.fabric is not None:
            nics = tuple(c for c, k in spec.components if k == "nic")
            self.fabric = f = Fabric(spec.fabric, spec.classes, nics, n, count, self._uplink_faults(),
                                     spec.source)
            bw.append(f.capacity)
            lat.append(f.latency)
            cls += list(f.edge_class)
            # a NIC's cable moves to the next node's with the node; trunks move by Fabric.move
            cables = 2 * n * len(nics)
            stride.append(np.concatenate([np.full(cables, 2, dtype=np.int64),
                                          np.zeros(len(f.capacity) - cables, dtype=np.int64)]))
        self.capacity = np.concatenate(bw)
        self.latency = np.concatenate(lat)
        self.edge_class: tuple[str, ...] = tuple(cls)
        self._stride = np.concatenate(stride)
        self.template = self._make_graph(range(min(n, 2)))
        self._index = {(u, v): d["index"] for u, v, d in self.template.edges(data=True)}
        self._apply_node_faults()

    # -- faults --------------------------------------------------------------------
    def _uplink_faults(self) -> dict[tuple[int, int], float]:
        out = {}
        for f in self.spec.faults:
            if isinstance(f, UplinkFault):
                fabric = self.spec.fabric
                names = [] if fabric is None else [t.name for t in fabric.tiers]
                if f.tier not in names:
                    raise TopologyError(f"{f.label}: {self.spec.name} has no fabric tier {f.tier!r}"
                                        + (f" (tiers: {', '.join(names)})" if names else ""))
                out[(names.index(f.tier), f.group)] = f.uplinks
        return out

    def _apply_node_faults(self) -> None:
        """Node faults change link capacities in place (the symmetry they break is in :meth:`move_key`)."""
        per, spec = self._edges_per_node, self.spec
        for f in self.spec.faults:
            if not isinstance(f, NodeFault):
                continue
            if not 0 <= f.node < self.node_count:
                raise TopologyError(f"{f.label}: node {f.node} is not in 0..{self.node_count - 1}")
            names = set(spec.gpus) | {c for c, _ in spec.components}
            if f.component is not None and f.component not in names:
                raise TopologyError(f"{f.label}: {spec.name}'s nodes have no component {f.component!r}")
            node = [(f.node * per + k, e) for k, e in enumerate(self._node_edges)]
            net = [(k, self.edge_class[k]) for k in self.network_edges_of(f.node, f.component)]
            kind = dict(spec.components).get(f.component)
            if f.scale is not None:  # a slow node: everything it has, its network ports included
                for k, _ in node:
                    self.capacity[k] *= f.scale
                for k, _ in net:
                    self.capacity[k] *= f.scale
                continue
            # a NIC's rate is its network port's; any other component's, its links in the node
            chosen = net if kind == "nic" else [(k, e[2]) for k, e in node if f.component in e[:2]]
            for k, cls in chosen:
                self.capacity[k] = f.bandwidth * spec.classes[cls].efficiency * GB

    def network_edges_of(self, node: int, component: str | None) -> list[int]:
        """The ids of a node's links to the network (of one component, or all)."""
        out = []
        for first, inner, *_ in self._blocks:
            if inner is not None and component in (None, inner):
                out += [first + 2 * node, first + 2 * node + 1]
        if self.fabric is not None:
            for i, nic in enumerate(self.fabric.nics):
                if component in (None, nic):
                    out += [self.fabric.cable(i, node, True), self.fabric.cable(i, node, False)]
        return out

    def _make_graph(self, nodes: range) -> nx.DiGraph:
        """The graph of these nodes and the network (edge ``index`` as in the whole graph)."""
        spec = self.spec
        g = nx.DiGraph(name=spec.name)
        for i in nodes:
            for local, name in enumerate(spec.gpus):
                g.add_node(f"n{i}/{name}", kind="gpu", node=i, device=i * self.gpus_per_node + local)
            for name, kind in spec.components:
                g.add_node(f"n{i}/{name}", kind=kind, node=i, device=None)
        for name, kind in spec.network_components:
            g.add_node(f"net/{name}", kind=kind, node=None, device=None)
        per = self._edges_per_node
        for i in nodes:
            for k, (a, z, c, b, t) in enumerate(self._node_edges):
                g.add_edge(f"n{i}/{a}", f"n{i}/{z}", cls=c, bandwidth=b, latency=t, index=i * per + k)
        for first, inner, a, z, c, b, t in self._blocks:
            if inner is None:
                g.add_edge(f"net/{a}", f"net/{z}", cls=c, bandwidth=b, latency=t, index=first)
                g.add_edge(f"net/{z}", f"net/{a}", cls=c, bandwidth=b, latency=t, index=first + 1)
                continue
            for i in nodes:
                g.add_edge(f"n{i}/{a}", f"net/{z}", cls=c, bandwidth=b, latency=t, index=first + 2 * i)
                g.add_edge(f"net/{z}", f"n{i}/{a}", cls=c, bandwidth=b, latency=t, index=first + 2 * i + 1)
        if self.fabric is not None and len(nodes) == self.node_count:  # the whole graph: the fabric too
            self._add_fabric(g)
        return g

    def _add_fabric(self, g: nx.DiGraph) -> None:
        """The fabric's switch groups and links; a group's parallel ports are one edge of their total rate."""
        f = self.fabric
        assert f is not None
        for name, kind in f.switches():
            g.add_node(f"net/{name}", kind=kind, node=None, device=None)
        for k in range(f.first, f.end):
            u, v = f.edge_name(k)
            if g.has_edge(u, v):
                g.edges[u, v]["bandwidth"] += float(self.capacity[k])
            else:
                g.add_edge(u, v, cls=self.edge_class[k], bandwidth=float(self.capacity[k]),
                           latency=float(self.latency[k]), index=k)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The whole system as a graph (built when first asked for; routes use :attr:`template`)."""
        if self.node_count <= 2:
            return self.template
        return self._make_graph(range(self.node_count))

    def edge_name(self, k: int) -> tuple[str, str]:
        """Directed edge ``k`` as ``(u, v)`` node names of :attr:`graph`."""
        per, n = self._edges_per_node, self.node_count
        if self.fabric is not None and k >= self.fabric.first:
            return self.fabric.edge_name(k)
        if k < per * n:
            i, r = divmod(k, per)
            a, z = self._node_edges[r][:2]
            return f"n{i}/{a}", f"n{i}/{z}"
        first, inner, a, z = self._blocks[bisect.bisect_right(self._block_starts, k) - 1][:4]
        if inner is None:
            return (f"net/{a}", f"net/{z}") if k == first else (f"net/{z}", f"net/{a}")
        i, back = divmod(k - first, 2)
        return (f"net/{z}", f"n{i}/{a}") if back else (f"n{i}/{a}", f"net/{z}")

    def edge_index(self, u: str, v: str) -> int:
        """The id of directed edge ``u -> v`` of :attr:`graph` (names of any node)."""
        ends = [x.split("/", 1) for x in (u, v)]
        nodes = {int(w[0][1:]) for w in ends if w[0] != "net"}
        if not nodes:
            return self._index[(u, v)]
        if len(nodes) > 1:
            raise KeyError((u, v))
        p = nodes.pop()
        k = self._index[tuple("net/" + w[1] if w[0] == "net" else "n0/" + w[1] for w in ends)]
        return k + p * int(self._stride[k])

    @cached_property
    def _edges(self) -> list[tuple[str, str]]:
        return [self.edge_name(k) for k in range(len(self.capacity))]

    def move_edges(self, edges: np.ndarray, first: int, shifts: np.ndarray, routes: np.ndarray | None = None
                   ) -> np.ndarray:
        """The edges ``edges`` of a group whose first node is ``first`` become when the group moves
        by each of ``shifts`` nodes: an array ``(len(shifts), len(edges))``.

        Every node is the same template joined to the network the same way, so a move is a
        symmetry of the nodes' links and the cables; a fabric's trunks move with their groups
        (:meth:`~p2sim.topology.fabric.Fabric.move`), which is exact for groups of equal
        :meth:`move_key`; an ECMP fabric's ports move only with their routes (``routes``: a row
        ``(p, x, q, y, salt)`` per edge, :meth:`~p2sim.topology.fabric.Fabric.move`), between
        groups of equal ``move_key(ports=False)``.
        """
        edges = np.asarray(edges, dtype=np.int64)
        shifts = np.asarray(shifts, dtype=np.int64)
        if not shifts.any():
            # a move by no node is every link where it is (the arithmetic below and Fabric.move's at d = 0, an
            # ECMP port's re-hash included: it re-hashes only where d moves it): on an ECMP fabric every group is
            # a class of its own, so a step's flows and bounds call this once per flow with this move alone
            return np.broadcast_to(edges, (len(shifts), len(edges))).copy()
        out = edges[None, :] + shifts[:, None] * self._stride[edges][None, :]
        if self.fabric is not None:
            trunk = edges >= self.fabric.first + 2 * self.node_count * len(self.fabric.nics)
            if trunk.any():
                out[:, trunk] = self.fabric.move(edges[trunk], first, shifts,
                                                 None if routes is None else np.asarray(routes)[trunk])
        return out

    def mover(self, first: int):
        """``(edges, nodes, routes=None) -> edges``: :meth:`move_edges` of one move, for a group whose first
        node is ``first``."""
        return lambda edges, nodes, routes=None: self.move_edges(edges, first, np.array([nodes]), routes)[0]

    def hashed(self, edges: np.ndarray) -> np.ndarray:
        """Which of ``edges`` are ports an ECMP fabric's hash chose: they move only with their routes."""
        if self.fabric is None:
            return np.zeros(len(edges), dtype=bool)
        return self.fabric.hashed(edges)

    @cached_property
    def rate_free_key(self) -> tuple:
        """Everything of this topology but the rates of its NICs' cables and its fabric's uplinks (what a
        what-if of those rates changes and no structure of the collectives reads:
        :func:`~p2sim.collectives.caches.structure_key` says who reads what): the system file with every link
        rate and the tiers' oversubscription (or uplink ports) left out, the node count, every other link's
        capacity, every latency, an ECMP fabric's ports (they number its links) and a flat network's NIC-to-NIC
        routes (its cables' rates break ties among them: :func:`~p2sim.topology.paths.hop_weight`)."""
        spec = self.spec
        unrated = replace(spec, classes={k: replace(c, bandwidth=0.0, efficiency=1.0) for k, c in spec.classes.items()},
                          node_links=tuple(replace(ln, bandwidth=None) for ln in spec.node_links),
                          network_links=tuple(replace(ln, bandwidth=None) for ln in spec.network_links))
        caps = self.capacity.copy()
        for first, inner, *_ in self._blocks:  # a flat network's NIC cables: a pair per node each
            if inner is not None:
                caps[first:first + 2 * self.node_count] = 0.0
        f, ports, routes = self.fabric, (), ()
        if f is not None:
            tiers = tuple(replace(t, oversubscription=None, uplinks=None) for t in spec.fabric.tiers)
            unrated = replace(unrated, fabric=replace(spec.fabric, tiers=tiers))
            for b in f.blocks:  # its NICs' cables and its uplinks
                caps[b.first:b.first + b.count] = 0.0
            ports = tuple(f.ports) if f.ecmp else ()
        elif self.node_count > 1:
            routes = self.router.nic_routes()
        return (unrated, self.nodes, len(caps), caps.tobytes(), self.latency.tobytes(), ports, routes)

    @cached_property
    def places(self):
        """The node's own place symmetry (:class:`~p2sim.topology.places.PlaceSymmetry`: blocks of GPUs any
        permutation of which is an automorphism), or None without one."""
        from .places import place_symmetry  # noqa: PLC0415 (it reads this module's topologies)

        return place_symmetry(self)

    def move_key(self, nodes: Sequence[int] | np.ndarray, ports: bool = True) -> bytes:
        """Groups over ``nodes`` (each member's node, in member order) with equal keys (and equal
        local shapes) are each other moved: :meth:`move_keys` of one group, as bytes."""
        return self.move_keys(np.asarray(nodes, dtype=np.int64)[None, :], ports)[0].tobytes()

    def move_keys(self, nodes: np.ndarray, ports: bool = True) -> np.ndarray:
        """:meth:`move_key` of many groups (a row of member nodes each): an array with a row each.

        Without a fabric every move between nodes is a symmetry (the key is empty); a fabric's is
        the group's shape relative to its tiers (:meth:`~p2sim.topology.fabric.Fabric.move_keys`);
        ``ports=False``: up to an ECMP fabric's ports (which move with their routes).
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        cols = []
        if self.fabric is not None:
            cols.append(self.fabric.move_keys(nodes, ports))
        if self.spec.faults:  # groups a fault may touch are only themselves: their first node leads the key
            first, last = nodes.min(axis=1), nodes.max(axis=1)
            bad = np.array([f.node for f in self.spec.faults if isinstance(f, NodeFault)], dtype=np.int64)
            touched = (first != last) | np.isin(first, bad)
            cols.append(np.where(touched, first, -1)[:, None])
        if not cols:
            return np.zeros((len(nodes), 0), dtype=np.int64)
        return np.concatenate(cols, axis=1)

    # -- naming -------------------------------------------------------------------
    def gpu_name(self, device: int) -> str:
        node, local = divmod(device, self.gpus_per_node)
        return f"n{node}/{self.spec.gpus[local]}"

    def node_of(self, device: int) -> int:
        return device // self.gpus_per_node

    def path_names(self, src: int, dst: int) -> list[tuple[str, str]]:
        """The route from GPU ``src`` to GPU ``dst`` (:meth:`Router.route <p2sim.topology.routing.Router.route>`)
        as directed edges ``(u, v)`` of :attr:`graph`."""
        return [self.edge_name(e) for e in self.router.route(src, dst).edges]

    @property
    def edges(self) -> list[tuple[str, str]]:
        """Directed edges, in index order."""
        return list(self._edges)

    def classes(self) -> list[str]:
        return sorted(self.spec.classes)
