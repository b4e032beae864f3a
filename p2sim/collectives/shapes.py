"""Groups up to the topology's symmetries: what decides how a collective expands, not where it is.

:meth:`Shapes.shape` names a group by its members' node offsets, their GPUs' classes in the
node's graph (Weisfeiler-Lehman) and how they relate to each other; NCCL's choice, channel counts
and estimates are decided once per shape (:meth:`Shapes.memo`) and shared by every expander
given the same caches and rates (:class:`~p2sim.collectives.caches.Expansions`).  The first stage
:class:`~p2sim.collectives.expand.Expander` composes; it holds the shapes and per-shape decisions of its
:class:`~p2sim.collectives.caches.Expansions` and the GPU classes of its
:class:`~p2sim.collectives.caches.CollectiveCaches`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import networkx as nx
import numpy as np

from ..topology import Topology
from .caches import PER_SHAPE, CollectiveCaches, Expansions
from .decisions import MISSING

__all__ = ["Shapes"]

_PORTS_SEEN = ("estimate",)  # memos whose value depends on an ECMP fabric's ports (the rest: on the shape alone)


class Shapes:
    """The shape stage of an :class:`~p2sim.collectives.expand.Expander`: groups named up to the topology's
    symmetries, and what is decided once per shape (:meth:`memo`), kept in ``shared``."""

    def __init__(self, topo: Topology, caches: CollectiveCaches, shared: Expansions) -> None:
        self.topo = topo
        self.caches = caches
        self._shapes = shared.shapes
        self._by_shape = shared.by_shape
        self._decisions = shared.decisions

    def shape(self, members: Sequence[int]) -> tuple:
        """A group up to the topology's symmetries: what decides how it expands, not where it is.

        Every node of a p2sim topology is the same template joined to the network the same
        way, so moving a group between nodes changes nothing; inside a node, GPUs that the
        node's links cannot tell apart (same Weisfeiler-Lehman class of the node graph) are
        interchangeable when they relate to each other alike (path type, the route's
        narrowest link and hops, shared NICs).  Groups of one shape are congruent in every
        shipped system: NCCL's choice, channel counts and estimates are computed once per
        shape (the event-driven model still expands every group on its own links).
        """
        members = tuple(members)
        hit = self._shapes.get(members)
        if hit is not None:
            return hit
        gpn = self.topo.gpus_per_node
        arr = np.asarray(members, dtype=np.int64)
        node = arr // gpn
        fabric = self.topo.move_key(node, ports=False)  # where the group sits in a fabric's tiers
        f = self.topo.fabric  # and, on an ECMP fabric, the group itself (its ports)
        own = self.topo.move_key(node) if f is not None and f.ecmp else fabric
        # per member: node offset and local GPU class; per node (in order of first appearance):
        # the relations of its members' pairs in member order -- together they say what the
        # pairs (i, j, relation) of same-node members would, read in a fixed order
        per = np.concatenate([node - node.min(), self._class_ids[arr % gpn]]).tobytes()
        by_node: dict[int, list[int]] = {}
        for m in members:
            by_node.setdefault(m // gpn, []).append(m % gpn)
        rel = np.fromiter((self._segment_relations(tuple(v)) for v in by_node.values()), np.int64, len(by_node))
        # the last part: what only NCCL's estimate and choice see (through the link loads, ECMP's ports)
        self._shapes[members] = out = (per, rel.tobytes(), fabric, None if own == fabric else own)
        return out

    @functools.cached_property
    def _class_ids(self) -> np.ndarray:
        """Each local GPU's class (:attr:`_gpu_classes`) as a small integer."""
        names = sorted(set(self._gpu_classes))
        return np.array([names.index(c) for c in self._gpu_classes], dtype=np.int64)

    def _segment_relations(self, local: tuple[int, ...]) -> int:
        """An id of the relations of every pair (in order) of a node's members ``local``."""
        key = ("segment relations", local)
        hit = self._by_shape.get(key)
        if hit is None:
            rels = tuple(self._relation(a, b) for i, a in enumerate(local) for b in local[i + 1:])
            ids = self._by_shape.setdefault("relation ids", {})
            hit = self._by_shape[key] = ids.setdefault(rels, len(ids))
        return hit

    @functools.cached_property
    def _gpu_classes(self) -> tuple[str, ...]:
        """Each local GPU's Weisfeiler-Lehman class in the node's graph (kinds and capacities)."""
        caches = self.caches
        if caches.gpu_classes is None:
            caches.gpu_classes = self._wl_classes()
        return caches.gpu_classes

    def _wl_classes(self) -> tuple[str, ...]:
        # full-duplex links: the undirected graph says as much, and hashes stably across networkx versions
        node0 = self.topo.template.subgraph(x for x, d in self.topo.template.nodes(data=True)
                                         if d["node"] == 0).to_undirected()
        for u, v, d in node0.edges(data=True):
            d["cap"] = f"{d['bandwidth']:.6g}"
        h = nx.weisfeiler_lehman_subgraph_hashes(node0, node_attr="kind", edge_attr="cap", iterations=3)
        return tuple(h[g][-1] for g in self.topo.gpu_names)

    def _relation(self, a: int, b: int) -> tuple:
        key = ("relation", a, b)
        if key not in self._by_shape:
            ids = self.topo.router.intra_route(a, b)[0]
            self._by_shape[key] = (self.topo.router.intra_type(a, b), len(ids), float(self.topo.capacity[list(ids)].min()),
                                   self.topo.router.local_nics(a) == self.topo.router.local_nics(b))
        return self._by_shape[key]

    def memo(self, what: str, members: Sequence[int], extra: tuple, compute):
        """``compute()`` once per shape: up to ECMP's ports, but for NCCL's estimate, whose algorithm
        bandwidth is the links' the ports load (two channels hashed onto one port halve it)."""
        shape = self.shape(members)
        key = (what, shape if what in _PORTS_SEEN else shape[:3]) + extra
        if what in PER_SHAPE:  # decided by the first group of the shape: read and written through the log
            hit = self._decisions.read(self._by_shape, key)
            return self._decisions.write(self._by_shape, key, compute()) if hit is MISSING else hit
        if key not in self._by_shape:
            self._by_shape[key] = compute()
        return self._by_shape[key]

