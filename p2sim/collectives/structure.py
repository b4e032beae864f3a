"""A collective's structure: the hops its channels take, before its protocol.

:class:`Structure` is what an algorithm's channels put on the links of one group -- per flow its
hop table, link loads, channels and the most bytes a node sends into the network, and the
slowest routes inside and between nodes -- built once per algorithm and shared by the three
protocols.  :class:`Structures` is the stage of :class:`~p2sim.collectives.expand.Expander` that
builds and keeps them (ring searches and mixes, the group's channel count; each algorithm's hops are its
object's :meth:`~p2sim.collectives.algorithms.base.Algorithm.structure`), holding the ring searches and
one-switch answers of its :class:`~p2sim.collectives.caches.CollectiveCaches` and the structures of its
:class:`~p2sim.collectives.caches.Expansions`; :func:`moved_collective`,
:func:`merge_flows` the helpers that move a collective between nodes and merge identical
channels.  Imports the topology layer, the collectives' pattern modules and the algorithms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..topology import Topology
from .algorithms import algorithm
from .caches import CollectiveCaches, Expansions
from .channels import Segment, channel_count, segments
from .pattern import Collective, Flow, HopTable, MovedHops, PlacedHops
from .hops.ringsearch import best_rings, ring_throughput
from .shapes import Shapes

__all__ = ["Structure", "Structures", "max_sent_to_net", "moved_collective", "placed_collective", "merge_flows", "free_segment"]

GB = 1e9


def max_sent_to_net(table: HopTable, topo: Topology) -> float:
    """Most bytes any node sends into the network per byte of the flow's share."""
    inter = table.inter & (table.src >= 0)  # a GPU's sends (not a SHARP tree's own hop)
    if not inter.any():
        return 0.0
    # summed per node in hop order, as a running sum per node would
    return float(np.bincount(table.src[inter] // topo.gpus_per_node, weights=(table.coef * table.overhead)[inter]).max())


@dataclass(frozen=True, eq=False)
class Structure:
    """What a collective's channels put on the links, before its protocol: per flow its hops,
    link loads (data times hop overhead), channels, graph channels and most bytes a node sends
    into the network; the slowest intra- and inter-node routes (s)."""

    tables: tuple[HopTable, ...]
    loads: tuple[tuple[np.ndarray, np.ndarray], ...]
    per_flow: tuple[int, ...]
    graph: tuple[int, ...]
    out_net: tuple[float, ...]
    intra: float
    inter: float
    bus: float
    first: int  # the node of the group's first member
    nodes: int
    nvlink: bool  # every intra-node path of the group is NVLink (NCCL's intra latency)
    # on an ECMP fabric: the channels' tables before merging, (tables, channels, graph channels), each port
    # with its route -- a moved group's ports are re-hashed and its identical channels merged anew
    raw: tuple[tuple[HopTable, ...], tuple[int, ...], tuple[int, ...]] | None = None

    def moved(self, topo: Topology, node: int) -> Structure:
        """The same structure for the group moved to start at ``node``."""
        d = node - self.first
        if d == 0:
            return self
        move = topo.mover(self.first)
        if self.raw is not None:
            # ECMP: the moved routes hash to other ports, so channels alike here may differ there (and the
            # other way round): merged again, loads summed again; the routes' latencies and what a node
            # sends are the same (every port of a tier alike), so the slowest routes stay
            raw = tuple(t.moved(move, d, topo.gpus_per_node) for t in self.raw[0])
            groups, per_flow, graph = merge_flows(list(raw), list(self.raw[1]), list(self.raw[2]))
            return Structure(tuple(groups), tuple(t.load() for t in groups), tuple(per_flow), tuple(graph),
                             tuple(max_sent_to_net(t, topo) for t in groups), self.intra, self.inter, self.bus,
                             node, self.nodes, self.nvlink, (raw, self.raw[1], self.raw[2]))
        return Structure(tuple(t.moved(move, d, topo.gpus_per_node) for t in self.tables),
                          tuple((move(e, d), c) for e, c in self.loads), self.per_flow, self.graph,
                          self.out_net, self.intra, self.inter, self.bus, node, self.nodes, self.nvlink)



class Structures:
    """The structure stage of an :class:`~p2sim.collectives.expand.Expander`: ring searches and mixes, channel
    counts and each group's :class:`Structure`, kept in the caches it is given (see the module's text)."""

    def __init__(self, topo: Topology, caches: CollectiveCaches, shared: Expansions, shapes: Shapes) -> None:
        self.topo, self.caches, self.shared, self.shapes = topo, caches, shared, shapes
        # what it keeps: per-shape answers (NVLink only) and the structures, in the ledger of ``shared``
        self._by_shape, self._structures = shared.by_shape, shared.structures

    def channels(self, members: Sequence[int]) -> int:
        """Ring channels NCCL would build for this group."""
        return self.shapes.memo("channels", members, (), lambda: self._channels(members))

    def _channels(self, members: Sequence[int]) -> int:
        segs = segments(self.topo, members)
        mix = self.ring_mix(segs)
        t = self.mix_throughput(mix[segs[0].node]) if len(segs) == 1 else math.inf
        return channel_count(self.topo, segs, t)

    def rings(self, local: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], float], ...]:
        rings = self.caches.rings  # a property of the topology: shared by every expander given these caches
        hit = rings.get(local)
        if hit is None:
            hit = rings[local] = best_rings(self.topo, local)
        return hit

    def ring_mix(self, segs: Sequence[Segment]) -> dict[int, tuple]:
        return {s.node: self.rings(s.local(self.topo)) for s in segs}

    def mix_throughput(self, mix: tuple) -> float:
        """GB/s per ring hop of a ring mix (the LP's optimum; one ring for two GPUs)."""
        if len(mix) == 1:
            order = mix[0][0]
            return ring_throughput(self.topo, order) / GB if len(order) > 1 else math.inf
        loads: dict[int, float] = {}
        for order, w in mix:
            n = len(order)
            for i in range(n):
                a, b = order[i], order[(i + 1) % n]
                for s, d in ((a, b), (b, a)):
                    for e in self.topo.router.intra_route(s, d)[0]:
                        loads[e] = loads.get(e, 0.0) + 0.5 * w
        return min(self.topo.capacity[e] / v for e, v in loads.items()) / GB

    def mix_and_free(self, segs: Sequence[Segment]) -> tuple[dict[int, tuple], dict[int, bool]]:
        """:meth:`ring_mix`, and per node whether any ring order is as good (one ring, :meth:`free_segment`):
        both read a node only through its local GPUs, so each local set is looked up once per group (a group
        may span thousands of nodes, most of them alike)."""
        topo, mix, free = self.topo, {}, {}
        seen: dict[tuple[int, ...], tuple[tuple, bool]] = {}
        for s in segs:
            local = s.local(topo)
            hit = seen.get(local)
            if hit is None:
                rings = self.rings(local)
                hit = seen[local] = (rings, len(rings) == 1 and self.free_segment(s))
            mix[s.node], free[s.node] = hit
        return mix, free

    def free_segment(self, seg: Segment) -> bool:
        """:func:`free_segment`, kept per local GPU set."""
        local = seg.local(self.topo)
        hit = self.caches.one_switch.get(local)
        if hit is None:
            hit = self.caches.one_switch[local] = free_segment(self.topo, seg)
        return hit

    def nvlink_only(self, segs: Sequence[Segment], members: Sequence[int] | None = None) -> bool:
        """Every intra-node path of the group is NVLink or one NVSwitch (NCCL's typeIntra <= NVB).

        Given the group's ``members``, once per shape: the shape's relations name every same-node pair's path
        type (:meth:`~p2sim.collectives.shapes.Shapes.shape`), so groups of one shape answer alike, and the
        answer is asked of every candidate NCCL's choice bounds (otherwise each node's GPU set, every time)."""
        if members is not None:
            return self.shapes.memo("nvlink only", members, (), lambda: self.nvlink_only(segs))
        locals_ = frozenset(s.local(self.topo) for s in segs)
        key = ("nvlink", locals_)
        if key not in self._by_shape:
            self._by_shape[key] = all(self.topo.router.intra_type(a, b) == "NVL" for loc in locals_ for a in loc
                                      for b in loc if a != b)
        return self._by_shape[key]

    def build(self, algo: str, op: str, members: tuple[int, ...], segs: list[Segment], used: int,
              share: float) -> Structure:
        topo = self.topo
        nodes = len(segs)
        mix, free = self.mix_and_free(segs)
        bus, raw, raw_flow, raw_graph = algorithm(algo).structure(topo, op, members, segs, mix, free, used, share,
                                                                  self.caches)
        groups, per_flow, graph = merge_flows(raw, raw_flow, raw_graph)
        lats = [t.route_latencies(topo.latency) for t in groups]
        kept = None
        if nodes > 1 and topo.fabric is not None and topo.fabric.ecmp:  # ports that move with their routes
            hashed = [topo.hashed(t.edges) for t in raw]
            if any(h.any() for h in hashed) and all(t.movable(h) for t, h in zip(raw, hashed)):
                kept = (tuple(raw), tuple(raw_flow), tuple(raw_graph))
        return Structure(tuple(groups), tuple(t.load() for t in groups), tuple(per_flow), tuple(graph),
                          tuple(max_sent_to_net(t, topo) for t in groups),
                          max(x[0] for x in lats), max(x[1] for x in lats), bus,
                          min(members) // topo.gpus_per_node, nodes, self.nvlink_only(segs, members), kept)

    def of(self, algo: str, op: str, members: tuple[int, ...], local: tuple[int, ...], where: object,
           used: int, share: float) -> Structure:
        """The structure of ``algo``'s channels for this group, built once and kept (moved to where the group is,
        from a group equal up to its nodes: ``local`` its members in its first node, ``where`` its fabric key)."""
        skey = (algo, op, local, where, used, share if algorithm(algo).share_in_hops else None)
        # on an ECMP fabric, groups equal up to their ports share a structure that keeps its ports' routes
        # (Structure.raw): moved, they are re-hashed; a structure without them is only its group's
        fabric = self.topo.fabric
        free = (self.topo.move_key(np.asarray(members, dtype=np.int64) // self.topo.gpus_per_node, ports=False)
                if fabric is not None and fabric.ecmp else where)
        fkey = skey[:3] + (free,) + skey[4:]
        for k in dict.fromkeys((skey, fkey)):
            st = self._structures.get(k)
            if st is not None:
                self.shared.touch(self._structures, k)
                if k != skey:  # moved here once (the re-hash), for this group's protocols and algorithms
                    st = st.moved(self.topo, min(members) // self.topo.gpus_per_node)
                    self.shared.keep(self._structures, skey, st)
                return st
        # the hops do not depend on the protocol: built once for all three
        st = self.build(algo, op, members, segments(self.topo, members), used, share)
        self.shared.keep(self._structures, fkey if self.movable(st) else skey, st)
        return st

    def movable(self, st: Structure) -> bool:
        """Whether ``st`` moves exactly between groups equal up to an ECMP fabric's ports: it has none,
        or it keeps each one's route (:attr:`Structure.raw`)."""
        return st.raw is not None or not any(self.topo.hashed(e).any() for e, _ in st.loads)



def moved_collective(topo: Topology, c: Collective, nodes: int) -> Collective:
    """Collective ``c`` moved ``nodes`` nodes on."""
    if nodes == 0:
        return c
    d = nodes * topo.gpus_per_node
    move = topo.mover(min(c.members) // topo.gpus_per_node)
    flows = tuple(Flow(f.share, f.channels, move(f.edges, nodes), f.coef,
                       (f.table if isinstance(f.table, MovedHops) else MovedHops(f.table, move, 0, topo.gpus_per_node)
                        ).moved(move, nodes, topo.gpus_per_node), f.caps, f.cap_kinds) for f in c.flows)
    return Collective(c.algo, c.proto, c.op, tuple(m + d for m in c.members), c.nodes, c.channels, flows, c.latency,
                      c.bus_factor, c.shared_caps, c.tuning)


def placed_collective(topo: Topology, c: Collective, perm: tuple[int, ...], members: tuple[int, ...]
                      ) -> Collective:
    """Collective ``c`` with its places permuted in their nodes by ``perm`` (the topology's place symmetry,
    :meth:`~p2sim.topology.places.PlaceSymmetry.canonical`): the collective of ``members`` (``c``'s members
    permuted).  Each flow's links are permuted and put back in ascending order with their loads (as a flow
    built there lists them, :func:`~.pattern.sum_by_edge`); everything else is the same figure."""
    sym = topo.places
    edges = lambda e: sym.move_edges(e, perm)  # noqa: E731
    devices = lambda d: sym.move_devices(d, perm)  # noqa: E731
    flows = []
    for f in c.flows:
        e = edges(f.edges)
        order = np.argsort(e, kind="stable")
        flows.append(Flow(f.share, f.channels, e[order], f.coef[order], PlacedHops(f.table, devices, edges), f.caps,
                          f.cap_kinds))
    return Collective(c.algo, c.proto, c.op, members, c.nodes, c.channels, tuple(flows), c.latency, c.bus_factor,
                      c.shared_caps, c.tuning)


def merge_flows(groups: list[HopTable], per_flow: list[int], graph: list[int]) -> tuple[list, list, list]:
    """Channels whose hops are identical become one flow (they would progress in lockstep)."""
    keys: dict[bytes, int] = {}
    out_g: list[HopTable] = []
    out_k: list[int] = []
    out_c: list[int] = []
    for hops, k, g in zip(groups, per_flow, graph):
        key = hops.key()
        i = keys.get(key)
        if i is None:
            keys[key] = len(out_g)
            out_g.append(hops)
            out_k.append(k)
            out_c.append(g)
        else:
            out_k[i] += k
            out_c[i] += g
    return out_g, out_k, out_c


def free_segment(topo: Topology, seg: Segment) -> bool:
    """Any ring order is as good inside this segment (all members on one NVSwitch)."""
    from .hops.ringsearch import _one_switch

    local = seg.local(topo)
    return _one_switch(topo, local) if len(local) > 2 else True
