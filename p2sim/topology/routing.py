"""Routes through a topology: NCCL's transports inside a node, NICs, and the network between nodes.

A :class:`Router` answers "which links does this GPU's traffic to that GPU take" for one
:class:`~p2sim.topology.graph.Topology`, which builds it once as ``topo.router``: node 0's
paths by NCCL's rules (:mod:`p2sim.topology.paths`), moved to any node by arithmetic; the NIC
each GPU uses; the network's part between two NICs (a fabric's by arithmetic, else the file's
switches); and :meth:`Router.route_table`, many routes at once as arrays.  It is given what it
reads (the topology's template graph, edge index, latencies, strides, fabric and sizes), owns
its route caches, and imports nothing above the topology layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from ..util.errors import TopologyError
from .fabric import Fabric
from .paths import NodeView, gpu_gpu_path, gpu_nic_path, hop_weight, host_path, local_nics, nic_gpu_path, path_type
from .spec import SystemSpec

__all__ = ["Route", "Router"]

# up to this many routes, Router.route_table looks each up in the route caches (measured faster
# than its array passes below about a hundred on benchmarks/simulate_appendix.py)
_FEW_ROUTES = 96


@dataclass(frozen=True)
class Route:
    """A GPU-to-GPU path: directed edge indices, total latency (s), whether it leaves the
    node, and NCCL's transport (``P2P``, ``SHM`` through host memory, or ``NET``)."""

    edges: tuple[int, ...]
    latency: float
    inter_node: bool
    transport: str = "P2P"


class Router:
    """The routes of one topology, by NCCL's rules, each computed once and cached here.

    A :class:`~p2sim.topology.graph.Topology` builds its router once (``topo.router``) from
    what routes read: the system file (``spec``), the graph of nodes 0 and 1 and the network
    (``template``) with its edge ids (``index``), every edge's latency, how far each edge id
    moves when its node moves one on (``stride``), the edges per node, the fabric, the node
    count and node 0's GPU and NIC names.  The caches are this router's own: two topologies
    never share one.

    Examples
    --------
    >>> from p2sim.topology import load_system
    >>> router = load_system("a100", nodes=2).router
    >>> router.route(0, 16).transport, router.nic_of(16), router.intra_type(0, 1)
    ('NET', 'nic0', 'NVL')
    """

    def __init__(self, *, spec: SystemSpec, template: nx.DiGraph, index: dict[tuple[str, str], int],
                 latency: np.ndarray, stride: np.ndarray, edges_per_node: int, fabric: Fabric | None,
                 node_count: int, gpu_names: tuple[str, ...], nics: tuple[str, ...]) -> None:
        self.spec = spec
        self.template = template
        self._index = index
        self.latency = latency
        self._stride = stride
        self._edges_per_node = edges_per_node
        self.fabric = fabric
        self.node_count = node_count
        self.gpu_names = gpu_names
        self.nics = nics
        self.gpus_per_node = len(gpu_names)
        self.devices = node_count * self.gpus_per_node
        self._intra: dict[tuple[int, int], tuple[tuple[int, ...], float, str]] = {}
        self._local: dict[int, tuple[str, ...]] = {}
        self._nicpath: dict[tuple[int, str, bool], tuple[int, ...]] = {}
        self._net: dict[tuple[str, str], tuple[int, ...]] = {}
        self._routes: dict[tuple[int, int], Route] = {}
        self._via: dict[tuple[int, int, str, str, int], Route] = {}
        self._types: dict[tuple[int, int], str] = {}
        self._vias: dict[tuple[int, str, str, int], tuple[tuple[int, ...], ...]] = {}
        self._templates: dict[int, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {}
        self._ports: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def check_connected(self) -> None:
        """Raise :class:`~p2sim.util.errors.TopologyError` unless every GPU of a node reaches every
        other, and (between nodes) the first node's GPUs reach the last node's and back."""
        for a in range(self.gpus_per_node):
            for b in range(self.gpus_per_node):
                if a != b:
                    self.intra_route(a, b)
        if self.node_count > 1:
            if not self.spec.network_components and self.spec.fabric is None:
                raise TopologyError(f"{self.spec.source}: nodes: {self.node_count} nodes, but the file has no network "
                                    "([network] components or [fabric]) to join them: it describes one node")
            for a in range(self.gpus_per_node):
                self.route(a, self.devices - self.gpus_per_node + a)
                self.route(self.devices - self.gpus_per_node + a, a)

    # -- routing (rules in p2sim.topology.paths) -----------------------------------
    @cached_property
    def host_components(self) -> frozenset[str]:
        """Node 0's PCIe switches and CPUs: what host paths may pass through."""
        return frozenset(f"n0/{c}" for c, k in self.spec.components if k in ("pcie_switch", "cpu"))

    @cached_property
    def node_view(self) -> NodeView:
        """Node 0 as NCCL's path rules (:mod:`p2sim.topology.paths`) read it."""
        nccl = self.spec.nccl
        return NodeView(self.template, self.gpu_names, self.host_components, nccl.p2p_level, self.spec.source,
                        nccl.gdr_level)

    @cached_property
    def _edge_names(self) -> dict[int, tuple[str, str]]:
        """The template's edges by id (node 0's names of node 0's links)."""
        return {k: uv for uv, k in self._index.items()}

    def _edge_ids(self, path: list[str]) -> tuple[int, ...]:
        return tuple(self._index[(a, b)] for a, b in zip(path, path[1:]))

    def intra_route(self, a: int, b: int) -> tuple[tuple[int, ...], float, str]:
        """The route between local GPUs ``a`` and ``b`` of node 0: (edge ids, latency, transport)."""
        hit = self._intra.get((a, b))
        if hit is None:
            path, transport = gpu_gpu_path(self.node_view, self.gpu_names[a], self.gpu_names[b])
            ids = self._edge_ids(path)
            hit = (ids, float(sum(self.latency[list(ids)])), transport)
            self._intra[(a, b)] = hit
        return hit

    def intra_type(self, a: int, b: int) -> str:
        """NCCL's path type between local GPUs ``a`` and ``b`` (``NVL``, ``PIX``, ``PXB``, ``PHB``, ``SYS``)."""
        hit = self._types.get((a, b))
        if hit is None:
            ids = self.intra_route(a, b)[0]
            names = [self._edge_names[ids[0]][0]] + [self._edge_names[e][1] for e in ids]
            hit = self._types[(a, b)] = path_type(self.node_view, names)
        return hit

    def local_nics(self, local: int) -> tuple[str, ...]:
        """The usable NICs nearest to local GPU ``local`` (NCCL's 'local' NICs), in file order."""
        hit = self._local.get(local)
        if hit is None:
            near = local_nics(self.node_view, self.gpu_names[local], [f"n0/{x}" for x in self.nics])
            hit = tuple(n[3:] for n in near)
            self._local[local] = hit
        return hit

    @cached_property
    def net_path_type(self) -> str | None:
        """NCCL's ``typeInter`` of a node's graphs: the best path type between any GPU and a NIC (the search
        starts at the nearest, ``ncclTopoGetGpuMinPath(NET)``, and every GPU of a node has one); ``P2C`` where it
        runs through the GPU's own CPU over a C2C link (Grace: NCCL 2.27's PATH_P2C, src/graph/paths.cc
        mergePathType; ``PHB`` before); None without NICs.  A farther GPU's PXN path never beats the
        nearest GPU's own, so it does not enter the minimum."""
        order = ("NVL", "PIX", "PXB", "P2C", "PHB", "SYS")
        best: str | None = None
        for a, name in enumerate(self.gpu_names):
            for nic in self.local_nics(a):
                path = host_path(self.node_view, name, f"n0/{nic}")
                if path is None:
                    continue
                t = path_type(self.node_view, path)
                first = self.spec.classes.get(self.node_view.graph.edges[path[0], path[1]]["cls"])
                if t == "PHB" and first is not None and first.kind == "c2c":
                    t = "P2C"
                if best is None or order.index(t) < order.index(best):
                    best = t
        return best

    @cached_property
    def _nic_assignment(self) -> dict[int, str]:
        """Each local GPU's default NIC: the nearest, and among equally near ones the least used
        so far, so that a rail-optimised node gives GPU ``i`` NIC ``i``."""
        load = {nic: 0 for nic in self.nics}
        out = {}
        for a in range(self.gpus_per_node):
            near = self.local_nics(a)
            if not near:
                if self.node_count > 1:
                    raise TopologyError(f"{self.spec.source}: GPU {self.spec.gpus[a]} has no path to a NIC")
                continue
            nic = min(near, key=lambda n: (load[n], near.index(n)))
            load[nic] += 1
            out[a] = nic
        return out

    def nic_of(self, device: int) -> str:
        """The NIC (component name inside its node) that GPU ``device`` uses by default."""
        return self._nic_assignment[device % self.gpus_per_node]

    def switch_ports(self, switch: str) -> tuple[np.ndarray, np.ndarray]:
        """Per local GPU, the ids of its links up to and down from node 0's NVSwitch ``switch``
        (a component name inside the node; -1 where the GPU has no such link)."""
        hit = self._ports.get(switch)
        if hit is None:
            up = [self._index.get((f"n0/{g}", f"n0/{switch}"), -1) for g in self.spec.gpus]
            down = [self._index.get((f"n0/{switch}", f"n0/{g}"), -1) for g in self.spec.gpus]
            hit = self._ports[switch] = (np.array(up, dtype=np.int64), np.array(down, dtype=np.int64))
        return hit

    def _nic_edges(self, local: int, nic: str, up: bool) -> tuple[int, ...]:
        key = (local, nic, up)
        hit = self._nicpath.get(key)
        if hit is None:
            gpu, n = self.gpu_names[local], f"n0/{nic}"
            view = self.node_view
            path = gpu_nic_path(view, gpu, n, [f"n0/{x}" for x in self.nics]) if up else nic_gpu_path(view, n, gpu)
            hit = self._edge_ids(path)
            self._nicpath[key] = hit
        return hit

    @cached_property
    def _switch_paths(self) -> dict[str, tuple[dict[str, float], dict[str, list[str]]]]:
        """Shortest paths between the network's switches (all pairs, once).

        Routes between NICs run NIC -> switches -> NIC and never through a node or another
        NIC, so a route is the best (first switch, last switch) combination over these:
        searching the whole graph for each of a thousand-node ring's NIC pairs is what this
        avoids.
        """
        net = [x for x, d in self.template.nodes(data=True) if d["node"] is None]
        g = self.template.subgraph(net)
        return {s: nx.single_source_dijkstra(g, s, weight=hop_weight) for s in sorted(net)}

    def nic_routes(self) -> tuple[tuple[int, ...], ...]:
        """The network's route from each of node 0's NICs to each of node 1's (every node pair's, moved): what a
        flat network's link rates decide of the routes (:func:`~p2sim.topology.paths.hop_weight` breaks ties by
        bandwidth), for :meth:`~p2sim.topology.graph.Topology.rate_free_key`."""
        return tuple(self._net_route(f"n0/{a}", f"n1/{b}") for a in self.nics for b in self.nics)

    def _net_route(self, src: str, dst: str) -> tuple[int, ...]:
        hit = self._net.get((src, dst))
        if hit is not None:
            return hit
        g, paths = self.template, self._switch_paths
        best: tuple[float, list[str]] | None = None
        if g.has_edge(src, dst):  # NICs cabled back to back
            best = (hop_weight(src, dst, g.edges[src, dst]), [src, dst])
        ins = sorted(u for u in g.predecessors(dst) if u in paths)
        for s in sorted(v for v in g.successors(src) if v in paths):
            dist, route = paths[s]
            w0 = hop_weight(src, s, g.edges[src, s])
            for t in (u for u in ins if u in dist):
                w = w0 + dist[t] + hop_weight(t, dst, g.edges[t, dst])
                if best is None or w < best[0]:
                    best = (w, [src, *route[t], dst])
        if best is None:
            raise TopologyError(f"{self.spec.source}: the network does not join {src} and {dst}")
        out = self._edge_ids(best[1])
        self._net[(src, dst)] = out
        return out

    def _check_devices(self, *devices: int) -> None:
        for d in devices:
            if not 0 <= d < self.devices:
                raise TopologyError(f"device: {d} is not in 0..{self.devices - 1}")

    def route(self, src: int, dst: int) -> Route:
        """The route NCCL would use from GPU ``src`` to GPU ``dst``, through their default NICs (cached)."""
        key = (src, dst)
        hit = self._routes.get(key)
        if hit is not None:
            return hit
        self._check_devices(src, dst)
        if src == dst:
            raise TopologyError(f"device: a route from GPU {src} to itself")
        p, a = divmod(src, self.gpus_per_node)
        q, b = divmod(dst, self.gpus_per_node)
        if p == q:
            ids, _, transport = self.intra_route(a, b)
            off = p * self._edges_per_node
            r = self._make_route(tuple(e + off for e in ids), False, transport)
        else:
            r = self.route_via(src, dst, self.nic_of(src), self.nic_of(dst))
        self._routes[key] = r
        return r

    def route_via(self, src: int, dst: int, nic_out: str, nic_in: str, salt: int = 0) -> Route:
        """Between nodes: out of ``src``'s node through ``nic_out``, into ``dst``'s through ``nic_in`` (cached).

        ``salt`` tells a fabric with ECMP routing which flow this is (its channel): flows
        between the same ends may hash onto different ports.
        """
        if self.fabric is None or not self.fabric.ecmp:
            salt = 0
        key = (src, dst, nic_out, nic_in, salt)
        hit = self._via.get(key)
        if hit is not None:
            return hit
        self._check_devices(src, dst)
        p, a = divmod(src, self.gpus_per_node)
        q, b = divmod(dst, self.gpus_per_node)
        if p == q:
            raise TopologyError(f"device: GPUs {src} and {dst} share a node; no NIC route between them")
        mid = None
        if self.fabric is not None:
            x, y = self.fabric.nics.index(nic_out), self.fabric.nics.index(nic_in)
            mid = tuple(self.fabric.mids([p], [x], [q], [y], [salt])[1].tolist())
        r = self._via[key] = self._joined(src, dst, nic_out, nic_in, mid)
        return r

    def _joined(self, src: int, dst: int, nic_out: str, nic_in: str, mid: tuple[int, ...] | None) -> Route:
        """The route out of ``src``'s node through ``nic_out`` and into ``dst``'s through ``nic_in``: the node
        parts of :meth:`via_parts` moved to the two nodes, around ``mid`` (a fabric's links; ``None``: the
        network's own, from :meth:`via_parts`)."""
        (p, a), (q, b) = divmod(src, self.gpus_per_node), divmod(dst, self.gpus_per_node)
        out, net, into = self.via_parts(a, nic_out, nic_in, b)
        stride = self._stride
        edges = (tuple(e + p * int(stride[e]) for e in out) + (net if mid is None else mid)
                 + tuple(e + q * int(stride[e]) for e in into))
        return self._make_route(edges, True, "NET")

    def _fill_vias(self, src: np.ndarray, dst: np.ndarray, nic_out: np.ndarray, nic_in: np.ndarray,
                   salt: np.ndarray | None) -> None:
        """Keep :meth:`route_via`'s routes of the pairs between nodes of a fabric it has not kept yet (NICs by
        index into :attr:`nics`, ``-1`` the GPU's default), their fabric parts by one :meth:`Fabric.mids
        <p2sim.topology.fabric.Fabric.mids>` pass instead of one each: the same routes (the fabric's part of a
        route depends on its own row only), a ring's new hops at a few array passes' cost."""
        gpn, f = self.gpus_per_node, self.fabric
        ecmp = f.ecmp
        todo: dict[tuple, tuple[int, int, int, int]] = {}
        for i, (a, b, x, y) in enumerate(zip(src.tolist(), dst.tolist(), nic_out.tolist(), nic_in.tolist())):
            p, q = a // gpn, b // gpn
            if p == q or not (0 <= a < self.devices and 0 <= b < self.devices):
                continue  # inside a node, or a device route_via refuses itself
            key = (a, b, self.nic_of(a) if x < 0 else self.nics[x], self.nic_of(b) if y < 0 else self.nics[y],
                   int(salt[i]) if ecmp and salt is not None else 0)
            if key not in self._via and key not in todo:
                todo[key] = (p, f.nics.index(key[2]), q, f.nics.index(key[3]))
        if len(todo) < 2:
            return  # route_via's own is as cheap
        ends = np.array(list(todo.values()), dtype=np.int64)
        fp, fe = f.mids(ends[:, 0], ends[:, 1], ends[:, 2], ends[:, 3], np.array([k[4] for k in todo], dtype=np.int64))
        bounds, mids = fp.tolist(), fe.tolist()
        for i, key in enumerate(todo):
            self._via[key] = self._joined(key[0], key[1], key[2], key[3], tuple(mids[bounds[i]:bounds[i + 1]]))

    def via_parts(self, a: int, nic_out: str, nic_in: str, b: int) -> tuple[tuple[int, ...], ...]:
        """From local GPU ``a`` of node 0 through ``nic_out`` to local GPU ``b`` of node 1 through
        ``nic_in``, in three parts: moved with the sender's node, fixed (the switches), moved
        with the receiver's node (node-0 ids).  The network joins every node alike, so this is
        every node pair's route, moved."""
        key = (a, nic_out, nic_in, b)
        hit = self._vias.get(key)
        if hit is None and self.fabric is not None:  # the cables; the fabric between them depends on the nodes
            f = self.fabric
            up, down = f.cable(f.nics.index(nic_out), 0, True), f.cable(f.nics.index(nic_in), 0, False)
            hit = self._vias[key] = (self._nic_edges(a, nic_out, True) + (up,), (),
                                     (down,) + self._nic_edges(b, nic_in, False))
        if hit is None:
            net = self._net_route(f"n0/{nic_out}", f"n1/{nic_in}")
            last = net[-1] - int(self._stride[net[-1]])
            hit = self._vias[key] = (self._nic_edges(a, nic_out, True) + net[:1], net[1:-1],
                                     (last,) + self._nic_edges(b, nic_in, False))
        return hit

    def _make_route(self, edges: tuple[int, ...], inter: bool, transport: str) -> Route:
        return Route(edges, float(sum(self.latency[list(edges)])), inter, transport)

    # -- many routes at once --------------------------------------------------------
    def _route_template(self, code: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """A route in three parts of node-0 edge ids: moved with the sender's node, fixed, moved
        with the receiver's node (``code`` as :meth:`route_table` numbers it)."""
        hit = self._templates.get(code)
        if hit is not None:
            return hit
        gpn, nn = self.gpus_per_node, len(self.nics) + 1
        if code < gpn * gpn:  # inside a node
            hit = (self.intra_route(*divmod(code, gpn))[0], (), ())
        else:  # node 0 to node 1: route_via's parts, the last network edge moved back to node 0
            rest, b = divmod(code - gpn * gpn, gpn)
            rest, y = divmod(rest, nn)
            a, x = divmod(rest, nn)
            hit = self.via_parts(a, self.nic_of(a) if x == 0 else self.nics[x - 1], b=b,
                                  nic_in=self.nic_of(b) if y == 0 else self.nics[y - 1])
        self._templates[code] = hit
        return hit

    @cached_property
    def fabric_nic_ids(self) -> np.ndarray:
        """Each of :attr:`nics` as the fabric numbers it (read on every route table: 72 NICs a node on a
        GB200 rack)."""
        return np.array([self.fabric.nics.index(c) for c in self.nics], dtype=np.int64)

    @cached_property
    def _default_nics(self) -> np.ndarray:
        """Each local GPU's default NIC, an index into :attr:`nics` (read on every route table)."""
        return np.array([self.nics.index(self._nic_assignment[g]) if g in self._nic_assignment else 0
                         for g in range(self.gpus_per_node)], dtype=np.int64)

    def route_table(self, src: np.ndarray, dst: np.ndarray, nic_out: np.ndarray | None = None,
                    nic_in: np.ndarray | None = None, salt: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """The routes of many (sender, receiver) pairs at once, as :meth:`route` and :meth:`route_via` give them.

        ``nic_out`` / ``nic_in`` name each pair's NICs by index into ``nics`` (the topology's
        :attr:`~p2sim.topology.graph.Topology.nics`; ``-1``: the GPU's default NIC); they matter
        only between nodes; ``salt`` numbers each pair's flow for a fabric's ECMP hash
        (:meth:`route_via`).  Returns ``(indptr, edges)``: pair
        ``i`` takes ``edges[indptr[i]:indptr[i + 1]]``, in route order.  A route is computed once
        per (local GPUs, NICs) and moved to every node (each node is the same template, joined
        to the network the same way), so a ring over thousands of nodes costs a few array passes.

        Examples
        --------
        >>> from p2sim.topology import load_system
        >>> topo = load_system("a100", nodes=2)
        >>> indptr, edges = topo.router.route_table(np.array([0, 0]), np.array([1, 16]))
        >>> tuple(edges[indptr[1]:indptr[2]]) == topo.router.route(0, 16).edges
        True
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        n = len(src)
        if n <= _FEW_ROUTES:  # the cached routes, one by one: cheaper than the array passes here
            if nic_out is not None and self.fabric is not None:
                self._fill_vias(src, dst, nic_out, nic_in, salt)
            ids: list[int] = []
            ends = [0]
            for i, (a, b) in enumerate(zip(src.tolist(), dst.tolist())):
                if a // self.gpus_per_node == b // self.gpus_per_node or (nic_out is None and salt is None):
                    r = self.route(a, b)
                else:
                    x, y = (-1, -1) if nic_out is None else (int(nic_out[i]), int(nic_in[i]))
                    r = self.route_via(a, b, self.nic_of(a) if x < 0 else self.nics[x],
                                       self.nic_of(b) if y < 0 else self.nics[y], 0 if salt is None else int(salt[i]))
                ids += r.edges
                ends.append(len(ids))
            return np.array(ends, dtype=np.int64), np.array(ids, dtype=np.int64)
        if n:
            self._check_devices(int(src.min()), int(src.max()), int(dst.min()), int(dst.max()))
        if np.any(src == dst):
            raise TopologyError(f"device: a route from GPU {int(src[src == dst][0])} to itself")
        gpn, nn = self.gpus_per_node, len(self.nics) + 1
        p, a = np.divmod(src, gpn)
        q, b = np.divmod(dst, gpn)
        x = np.zeros(n, dtype=np.int64) if nic_out is None else np.asarray(nic_out, dtype=np.int64) + 1
        y = np.zeros(n, dtype=np.int64) if nic_in is None else np.asarray(nic_in, dtype=np.int64) + 1
        code = np.where(p == q, a * gpn + b, gpn * gpn + ((a * nn + x) * nn + y) * gpn + b)
        codes, which = np.unique(code, return_inverse=True)
        parts = [self._route_template(int(c)) for c in codes]
        lens = [np.array([len(t[k]) for t in parts], dtype=np.int64)[which] for k in range(3)]
        fab = None
        if self.fabric is not None:  # the fabric between the two cables, by arithmetic
            inter = np.flatnonzero(p != q)
            all_nics, default = self.fabric_nic_ids, self._default_nics
            xs = np.where(x[inter] > 0, x[inter] - 1, -1)
            ys = np.where(y[inter] > 0, y[inter] - 1, -1)
            xs = all_nics[np.where(xs < 0, default[a[inter]], xs)]
            ys = all_nics[np.where(ys < 0, default[b[inter]], ys)]
            fp, fe = self.fabric.mids(p[inter], xs, q[inter], ys, None if salt is None else np.asarray(salt)[inter])
            flen = np.zeros(n, dtype=np.int64)
            flen[inter] = np.diff(fp)
            fab = (flen, fe)
        total_len = lens[0] + lens[1] + lens[2] + (fab[0] if fab is not None else 0)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(total_len, out=indptr[1:])
        edges = np.empty(int(indptr[-1]), dtype=np.int64)
        start = indptr[:-1].copy()
        for k, moved in ((0, p), (1, None), ("fabric", None), (2, q)):
            if k == "fabric":
                if fab is not None:
                    ln = fab[0]
                    within = np.arange(int(ln.sum()), dtype=np.int64) - np.repeat(np.cumsum(ln) - ln, ln)
                    edges[np.repeat(start, ln) + within] = fab[1]
                    start += ln
                continue
            flat = np.fromiter((e for t in parts for e in t[k]), dtype=np.int64)
            offsets = np.zeros(len(parts), dtype=np.int64)
            np.cumsum([len(t[k]) for t in parts[:-1]], out=offsets[1:])
            ln = lens[k]
            total = int(ln.sum())
            if total:
                within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(ln) - ln, ln)
                vals = flat[np.repeat(offsets[which], ln) + within]
                if moved is not None:
                    vals = vals + np.repeat(moved, ln) * self._stride[vals]
                edges[np.repeat(start, ln) + within] = vals
            start += ln
        return indptr, edges
