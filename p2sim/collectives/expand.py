"""From (algorithm, protocol, collective, group) to a :class:`~p2sim.collectives.pattern.Collective`.

:class:`Expander` builds a collective's channels and flows for one topology (cached),
attaches the protocol's link share, NCCL's per-channel caps and the network's
per-channel rate, and computes its start-up latency.  :meth:`Expander.choose` is NCCL's
automatic choice: among the algorithms and protocols this group can use, the one whose
uncontended time (latency + bytes / algorithm bandwidth, NCCL's tuning model evaluated
on this topology) is least.  ``NCCL_ALGO`` / ``NCCL_PROTO`` are ``algo`` / ``proto``: a
forced algorithm the collective cannot use falls back to the ring (as NCCL runs
non-AllReduce collectives as rings under ``NCCL_ALGO=Tree``).

Examples
--------
>>> from p2sim.topology import load_system
>>> ex = Expander(load_system("h100", nodes=1))
>>> ex.choose("AllReduce", tuple(range(8)), 2**30)
('nvls', 'Simple')
>>> ex.choose("AllReduce", tuple(range(8)), 8)
('ring', 'LL')
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from ..util.errors import InputError
from ..topology import Topology
from ..topology.settings import ModelRates
from .channels import Segment, channel_count, segments
from .collnet import collnet_chain_tables, collnet_direct_tables, collnet_heads, collnet_possible
from .latency import collective_latency, step_latencies
from .pipeline import chunk_size, in_flight, step_bound, window
from .nccl_tables import (ALGOS, COLLNET_DIRECT_EFFICIENCY, COLLNET_MAX_LOCAL, NVLS_CHANNELS,
                          NVLS_CHANNELS_ONE_DOMAIN, PROTOS)
from .nvls import nvls_switch, nvls_table, nvls_tree_tables
from .pattern import Collective, Flow, HopTable, MovedHops
from .protocols import channel_cap_gbps, tuning_share, collective_cap_gbps, link_share
from .ring import ring_factor, ring_tables
from .ringsearch import best_rings, ring_throughput
from .tree import tree_tables

__all__ = ["Expander", "ALGORITHMS", "ALGO_CHOICES", "check_algo", "net_rate_gbps", "NET_RATE_DEFAULTS"]

ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain")
# "collnet" is NCCL_ALGO=CollNet: either CollNet algorithm, whichever NCCL's model prefers
ALGO_CHOICES = ("auto",) + ALGORITHMS + ("collnet",)
COLLNET = ("collnet_direct", "collnet_chain")
GB = 1e9

# Per-channel network rate by transport, GB/s.  InfiniBand/RoCE and EFA: one connection
# (queue pair / SRD endpoint) per channel reaches the NIC's line rate, so only links bind.
# TCP sockets: NCCL's socket transport moves a channel through a few helper threads and
# sockets (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD), bounded by CPU copies, so one
# communicator may not fill a NIC; no public figure gives that rate, so the default is
# uncapped and calibration fits it per system (P2's A100 over GCP's TCP: a tree channel at
# 0.65 GB/s; see the README's validation section).
NET_RATE_DEFAULTS = {"ib": math.inf, "roce": math.inf, "efa": math.inf, "cxi": math.inf, "tcpx": math.inf,
                     "socket": math.inf}

TCP_TRANSPORTS = ("socket", "tcpx")  # transports whose connections are TCP streams
SOCKET_TASK = 65536  # NCCL_SOCKET_MIN_TASKSIZE: the least a socket stream carries of a step (net_socket.cc)

# NCCL's threads per channel and bytes per thread before it adds a channel
# (maxThreads and NCCL_*_THREAD_THRESHOLD in src/graph/tuning.cc, src/include/comm.h)
_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}
_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}


def check_algo(text: str, choices: Sequence[str] = ALGO_CHOICES) -> str:
    t = text.lower().replace("-", "_")
    if t not in choices:
        raise InputError(f"algo: {text!r} is not one of {', '.join(choices)}")
    return t


def net_rate_gbps(topo: Topology, algo: str, rates: ModelRates) -> float:
    """The per-channel network rate of ``algo`` (GB/s): calibrated or file value, else the transport's."""
    v = rates.tree_net_rate if algo in ("tree", "nvls_tree") else rates.ring_net_rate
    return v if v is not None else NET_RATE_DEFAULTS[topo.spec.nccl.transport]


def _max_sent_to_net(table: HopTable, topo: Topology) -> float:
    """Most bytes any node sends into the network per byte of the flow's share."""
    inter = table.inter & (table.src >= 0)  # a GPU's sends (not a SHARP tree's own hop)
    if not inter.any():
        return 0.0
    # summed per node in hop order, as a running sum per node would
    return float(np.bincount(table.src[inter] // topo.gpus_per_node, weights=(table.coef * table.overhead)[inter]).max())


@dataclass(frozen=True, eq=False)
class _Structure:
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

    def moved(self, topo: Topology, node: int) -> _Structure:
        """The same structure for the group moved to start at ``node``."""
        d = node - self.first
        if d == 0:
            return self
        move = topo.mover(self.first)
        return _Structure(tuple(t.moved(move, d, topo.gpus_per_node) for t in self.tables),
                          tuple((move(e, d), c) for e, c in self.loads), self.per_flow, self.graph,
                          self.out_net, self.intra, self.inter, self.bus, node, self.nodes, self.nvlink)


_PER_SHAPE = ("channels", "available", "estimate")  # Expander._memo's decisions, one per group shape


class _Shared:
    """The caches of every :class:`Expander` of one topology with the same rates."""

    def __init__(self) -> None:
        self.cache: dict[tuple, Collective] = {}
        self.choice: dict[tuple, tuple[str, str]] = {}
        self.by_shape: dict[tuple, object] = {}
        self.shapes: dict[tuple[int, ...], tuple] = {}
        self.moved: dict[tuple, Collective] = {}
        self.structures: dict[tuple, _Structure] = {}
        self.settings: dict[tuple, tuple] = {}
        self.chosen: dict[tuple, tuple[str, str]] = {}

    def forget_shapes(self) -> None:
        """Drop what was decided once per group shape (NCCL's choice, channels, estimates):
        the first group of a shape decides for all, so across independent tasks the decisions
        must not depend on which task ran first.  Caches exact per group stay."""
        for d in (self.choice, self.settings, self.chosen):
            d.clear()
        for key in [k for k in self.by_shape if k[0] in _PER_SHAPE]:
            del self.by_shape[key]


class Expander:
    """Builds collectives on one topology; every result is cached.

    Expanders of one topology with the same rates share their caches (a topology's
    ``memo``); :meth:`forget_shapes` drops those that depend on the order groups came in.
    """

    @staticmethod
    def forget_shapes(topo: Topology) -> None:
        """:meth:`_Shared.forget_shapes` for every expander of ``topo``."""
        for key, value in topo.memo.items():
            if isinstance(key, tuple) and key[0] == "expander":
                value.forget_shapes()

    def __init__(self, topo: Topology, rates: ModelRates | None = None) -> None:
        self.topo = topo
        self.rates = topo.spec.rates if rates is None else rates
        self.arch = topo.spec.nccl.arch
        # everything below is a function of (topology, rates): expanders of one topology share it
        key = ("expander", self.rates)
        shared = topo.memo.get(key)
        if shared is None:
            shared = topo.memo[key] = _Shared()
        self._cache = shared.cache
        self._choice = shared.choice
        self._by_shape = shared.by_shape
        self._shapes = shared.shapes
        self._moved = shared.moved
        self._structures = shared.structures
        self._settings_of = shared.settings
        self._chosen = shared.chosen

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
        fabric = self.topo.move_key(int(node.min()), int(node.max()))  # where the group sits in a fabric's tiers
        # per member: node offset and local GPU class; per node (in order of first appearance):
        # the relations of its members' pairs in member order -- together they say what the
        # pairs (i, j, relation) of same-node members would, read in a fixed order
        per = np.concatenate([node - node.min(), self._class_ids[arr % gpn]]).tobytes()
        by_node: dict[int, list[int]] = {}
        for m in members:
            by_node.setdefault(m // gpn, []).append(m % gpn)
        rel = np.fromiter((self._segment_relations(tuple(v)) for v in by_node.values()), np.int64, len(by_node))
        self._shapes[members] = out = (per, rel.tobytes(), fabric)
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
        if "gpu classes" not in self.topo.memo:
            self.topo.memo["gpu classes"] = self._wl_classes()
        return self.topo.memo["gpu classes"]

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
            ids = self.topo._intra_route(a, b)[0]
            self._by_shape[key] = (self.topo.intra_type(a, b), len(ids), float(self.topo.capacity[list(ids)].min()),
                                   self.topo.local_nics(a) == self.topo.local_nics(b))
        return self._by_shape[key]

    def _memo(self, what: str, members: Sequence[int], extra: tuple, compute):
        key = (what, self.shape(members)) + extra
        if key not in self._by_shape:
            self._by_shape[key] = compute()
        return self._by_shape[key]

    # -- structure -----------------------------------------------------------------
    def rings(self, local: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], float], ...]:
        key = ("rings", local)  # a property of the topology: shared by every expander of it
        hit = self.topo.memo.get(key)
        if hit is None:
            hit = best_rings(self.topo, local)
            self.topo.memo[key] = hit
        return hit

    def _ring_mix(self, segs: Sequence[Segment]) -> dict[int, tuple]:
        return {s.node: self.rings(s.local(self.topo)) for s in segs}

    def _mix_throughput(self, mix: tuple) -> float:
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
                    for e in self.topo._intra_route(s, d)[0]:
                        loads[e] = loads.get(e, 0.0) + 0.5 * w
        return min(self.topo.capacity[e] / v for e, v in loads.items()) / GB

    def _nvlink_only(self, segs: Sequence[Segment]) -> bool:
        """Every intra-node path of the group is NVLink or one NVSwitch (NCCL's typeIntra <= NVB)."""
        locals_ = frozenset(s.local(self.topo) for s in segs)
        key = ("nvlink", locals_)
        if key not in self._by_shape:
            self._by_shape[key] = all(self.topo.intra_type(a, b) == "NVL" for loc in locals_ for a in loc
                                      for b in loc if a != b)
        return self._by_shape[key]

    def channels(self, members: Sequence[int]) -> int:
        """Ring channels NCCL would build for this group."""
        return self._memo("channels", members, (), lambda: self._channels(members))

    def _channels(self, members: Sequence[int]) -> int:
        segs = segments(self.topo, members)
        mix = self._ring_mix(segs)
        t = self._mix_throughput(mix[segs[0].node]) if len(segs) == 1 else math.inf
        return channel_count(self.topo, segs, t)

    def available(self, op: str, members: Sequence[int]) -> list[tuple[str, str]]:
        """The (algorithm, protocol) pairs NCCL may use for this collective, in NCCL's order."""
        return self._memo("available", members, (op,), lambda: self._available(op, members))

    def _available(self, op: str, members: Sequence[int]) -> list[tuple[str, str]]:
        segs = segments(self.topo, members)
        nvls = self._nvls_switches(segs)
        collnet = self._collnet(op, segs)
        out = []
        for a in ALGOS:
            if a not in self.topo.spec.nccl.algorithms:
                continue  # NCCL_ALGO (a cloud's NCCL profile may set it: GCP's TCPXO)
            if a == "tree" and op != "AllReduce":
                continue
            if a in COLLNET and a not in collnet:
                continue
            if a == "nvls" and (nvls is None or len(segs) > 1 or op not in ("AllReduce", "ReduceScatter", "AllGather")):
                continue
            if a == "nvls_tree" and (nvls is None or len(segs) == 1 or op != "AllReduce"):
                continue
            for p in PROTOS:
                if p not in self.topo.spec.nccl.protocols:
                    continue  # NCCL_PROTO (a network plugin may set it: aws-ofi-nccl on p4d)
                if a in ("nvls", "nvls_tree") + COLLNET and p != "Simple":
                    continue
                if p == "LL128" and not self._nvlink_only(segs):
                    continue  # NCCL enables LL128 by default only over NVLink
                out.append((a, p))
        return out

    def _collnet(self, op: str, segs: Sequence[Segment]) -> tuple[str, ...]:
        """The CollNet algorithms this AllReduce may use: CollNet enabled (``[nccl] collnet``, by default
        where the fabric reduces), two nodes or more, at most eight GPUs on each, a SHARP tree over the
        nodes; Direct also needs an NVSwitch (``tuning.cc``, ``enqueue.cc``)."""
        enabled = self.topo.spec.nccl.collnet
        fabric = self.topo.fabric
        if enabled is None:
            enabled = fabric is not None and all(t.sharp for t in fabric.spec.tiers)
        if (not enabled or op != "AllReduce" or len(segs) < 2
                or max(len(s.members) for s in segs) > COLLNET_MAX_LOCAL or not collnet_possible(self.topo, segs)):
            return ()
        switch = any(k == "nvswitch" for _, k in self.topo.spec.components)
        return COLLNET if switch else ("collnet_chain",)

    def _nvls_switches(self, segs: Sequence[Segment]) -> list[str] | None:
        if self.arch not in ("hopper", "blackwell") or not self.topo.spec.nccl.nvls:
            return None
        sw = [nvls_switch(self.topo, s) for s in segs]
        return None if any(x is None for x in sw) or any(len(s.members) < 2 for s in segs) else sw

    # -- expansion -----------------------------------------------------------------
    def _settings(self, algo: str, proto: str, op: str, members: tuple[int, ...], nbytes: float) -> tuple:
        """What of ``nbytes`` shapes a collective: channels used, link share, NCCL's ring plateau."""
        key = (algo, proto, op, members, nbytes)
        hit = self._settings_of.get(key)
        if hit is None:
            hit = self._settings_of[key] = self._compute_settings(algo, proto, op, members, nbytes)
        return hit

    def _compute_settings(self, algo: str, proto: str, op: str, members: tuple[int, ...], nbytes: float) -> tuple:
        full = self.channels(members)
        if algo in ("nvls", "nvls_tree"):  # fewer on Blackwell inside one NVLink domain (nvls.cc)
            one = len(segments(self.topo, members)) == 1
            used = (NVLS_CHANNELS_ONE_DOMAIN if one else NVLS_CHANNELS)[self.arch]
        elif algo == "collnet_direct":  # one channel per head (NCCL's collnet graph)
            used = len(collnet_heads(self.topo, segments(self.topo, members)[0]))
        elif algo == "collnet_chain":  # NCCL adds half again to saturate the GPUs' links (connect.cc)
            used = min(64, full + full // 2)
        else:
            # NCCL drops channels while each would get less than threads x threshold bytes
            per = _THREADS[proto] * _THRESHOLD[proto] * (len(members) if proto == "LL" and algo == "ring" else 1)
            used = max(1, min(full, int(nbytes // per)))
        nodes = len({m // self.topo.gpus_per_node for m in members})
        share = link_share(algo, proto, op, nodes, nbytes, self.arch)
        plateau = nbytes / (used * len(members)) >= 64  # see latency.collective_latency
        # the pipeline's chunk (pipeline.py): the window it allows binds medium sizes
        heads = self._heads(algo, members)
        chunk = chunk_size(algo, proto, op, nbytes / used, len(members), self.topo.spec.nccl, heads, nodes)
        return used, round(share, 12), plateau, chunk

    def _heads(self, algo: str, members: tuple[int, ...]) -> int:
        """NVLS's and CollNet Direct's heads (the chunk shrinks with few chunks per head), else 1."""
        if algo in ("nvls", "nvls_tree"):
            return max(len(s.members) for s in segments(self.topo, members))
        if algo == "collnet_direct":
            return len(collnet_heads(self.topo, segments(self.topo, members)[0]))
        return 1

    def collective(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> Collective:
        """The collective ``op`` over ``members`` with this algorithm and protocol, for ``nbytes``."""
        members = tuple(members)
        used, share, plateau, chunk = self._settings(algo, proto, op, members, nbytes)
        key = (algo, proto, op, members, used, share, plateau, chunk)
        hit = self._cache.get(key)
        if hit is None:
            # the same group on other nodes, built before: move it here (an exact symmetry)
            gpn = self.topo.gpus_per_node
            first = min(members) // gpn
            local = tuple(m - first * gpn for m in members)
            # groups with equal local members and fabric keys are each other moved (an exact symmetry)
            where = self.topo.move_key(first, max(members) // gpn)
            seen = self._moved.get((algo, proto, op, local, where, used, share, plateau, chunk))
            if seen is not None:
                hit = _moved(self.topo, seen, first - min(seen.members) // gpn)
            else:
                skey = (algo, op, local, where, used, share if algo in ("nvls", "nvls_tree") else None)
                st = self._structures.get(skey)
                if st is None:  # the hops do not depend on the protocol: built once for all three
                    st = self._structure(algo, op, members, segments(self.topo, members), used, share)
                    self._structures[skey] = st
                hit = self._finish(st.moved(self.topo, first), algo, proto, op, members, used, share, nbytes, chunk)
                self._moved[(algo, proto, op, local, where, used, share, plateau, chunk)] = hit
            self._cache[key] = hit
        return hit

    def estimate(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> float:
        """:meth:`analytic_seconds` of the collective, computed once per group shape."""
        members = tuple(members)
        settings = self._settings(algo, proto, op, members, nbytes)
        lat, bw = self._memo("estimate", members, (algo, proto, op) + settings, lambda: self._estimate(
            algo, proto, op, members, nbytes))
        return lat + nbytes / bw

    def _estimate(self, algo: str, proto: str, op: str, members: tuple[int, ...], nbytes: float) -> tuple:
        return self.collective(algo, proto, op, members, nbytes).tuning

    def _build(self, algo: str, proto: str, op: str, members: tuple[int, ...], segs: list[Segment], used: int,
               share: float, nbytes: float) -> Collective:
        """The collective built where it is, from nothing cached but ring searches."""
        chunk = self._settings(algo, proto, op, members, nbytes)[3]
        return self._finish(self._structure(algo, op, members, segs, used, share), algo, proto, op, members, used,
                            share, nbytes, chunk)

    def _structure(self, algo: str, op: str, members: tuple[int, ...], segs: list[Segment], used: int,
                   share: float) -> _Structure:
        topo, n = self.topo, len(members)
        nodes = len(segs)
        mix = self._ring_mix(segs)
        free = {s.node: len(mix[s.node]) == 1 and _free(topo, s) for s in segs}
        if algo == "ring":
            bus = ring_factor(op, n)
            pairs = max(1, used // 2)
            groups = ring_tables(topo, op, members, segs, mix, free, pairs)
            per_flow = [used] if nodes == 1 else [2] * len(groups)
            graph = [max(1, c // 2) for c in per_flow]
        elif algo == "tree":
            bus = 2.0  # NCCL: a tree's busBw is twice its algorithm bandwidth
            graph_channels = max(1, used // 2)
            groups = tree_tables(topo, segs, mix, graph_channels)
            per_flow = [2] * len(groups)
            graph = [1] * len(groups)
        elif algo == "nvls":
            bus = ring_factor(op, n)
            groups = [nvls_table(topo, op, segs[0], self._nvls_switches(segs)[0], share)]
            per_flow, graph = [used], [used]
        elif algo == "nvls_tree":
            bus = ring_factor(op, n)
            groups = nvls_tree_tables(topo, segs, self._nvls_switches(segs), share)
            per_flow = [max(1, used // len(groups))] * len(groups)
            graph = [1] * len(groups)
        elif algo == "collnet_direct":
            bus = 2.0  # as a tree's: NCCL's algorithm bandwidth is half the bus bandwidth
            groups = collnet_direct_tables(topo, segs, 1.0 / COLLNET_DIRECT_EFFICIENCY[self.arch])
            per_flow, graph = [1] * len(groups), [1] * len(groups)
        else:  # collnet_chain
            bus = 2.0
            groups = collnet_chain_tables(topo, segs, mix, used)
            per_flow, graph = [1] * len(groups), [1] * len(groups)
        groups, per_flow, graph = _merge(groups, per_flow, graph)
        lats = [t.route_latencies(topo.latency) for t in groups]
        return _Structure(tuple(groups), tuple(t.load() for t in groups), tuple(per_flow), tuple(graph),
                          tuple(_max_sent_to_net(t, topo) for t in groups),
                          max(x[0] for x in lats), max(x[1] for x in lats), bus,
                          min(members) // topo.gpus_per_node, nodes, self._nvlink_only(segs))

    def _finish(self, st: _Structure, algo: str, proto: str, op: str, members: tuple[int, ...], used: int,
                share: float, nbytes: float, chunk: int) -> Collective:
        """The collective of a structure with this protocol: link shares, caps and latency."""
        topo, nodes = self.topo, st.nodes
        if algo in ("nvls", "nvls_tree"):
            share = 1.0  # NVLS's efficiency is in its hops' overhead
        net = min(net_rate_gbps(topo, algo, self.rates), self._stream_cap(algo, proto, op, chunk)) * GB
        ch_cap = channel_cap_gbps(algo, proto, nodes, self.arch, self._channel_rate(algo)) * GB
        nccl = topo.spec.nccl
        transport = (nccl.transport, self.rates.step_latency if self.rates.step_latency is not None
                     else nccl.step_latency)
        intra_hw = "nvlink" if st.nvlink else "pci"
        steps = step_latencies(algo, proto, len(members), nodes, intra_hw, st.intra, st.inter, *transport)
        flows = []
        total = sum(st.per_flow)
        for table, (edges, coef), out_net, k, g in zip(st.tables, st.loads, st.out_net, st.per_flow, st.graph):
            caps = []
            if math.isfinite(net) and out_net > 0:  # each channel's network connection
                caps.append((k * net, out_net / share))
            if math.isfinite(ch_cap):
                caps.append((g * ch_cap, st.bus))
            flows.append(Flow(k / total, k, edges, coef * (1.0 / share), table, tuple(caps)))
        coll_cap = collective_cap_gbps(proto, nodes, self.arch) * GB
        shared = ((coll_cap, tuple(st.bus for _ in flows)),) if math.isfinite(coll_cap) else ()
        args = (algo, proto, op, len(members), nodes, intra_hw, st.intra, st.inter, nbytes, used, self.arch)
        # NCCL chooses by its own model: its per-step figures, no launch cost, no pipeline window
        tuned = Collective(algo, proto, op, members, nodes, used, tuple(flows), collective_latency(*args), st.bus,
                           shared)
        rate = tuned.algbw(topo.capacity)
        flows = self._windowed(flows, st, algo, proto, op, chunk, steps, rate, nbytes)
        lat = collective_latency(*args, *transport, self.rates.launch or 0.0)
        return replace(tuned, flows=tuple(flows), latency=lat,
                       tuning=(tuned.latency, rate * tuning_share(algo, op)))

    def _windowed(self, flows: list[Flow], st: _Structure, algo: str, proto: str, op: str, chunk: int,
                  steps: tuple[float, float], rate: float, nbytes: float) -> list[Flow]:
        """The flows with the pipeline's limits as one more cap per channel (pipeline.py): the window of
        chunks over the network step's round trip, for groups that cross nodes (inside a node a step
        takes a few microseconds and the window binds only where the latency term already rules), and
        a calibrated per-step cost (``[model] step_cost``), for every group."""
        cost = (self.rates.step_cost or 0.0) * 1e-6
        if st.nodes == 1 and cost <= 0:
            return flows
        per_hop = st.bus if algo == "ring" else 1.0  # a ring channel moves its share x bus factor per hop
        out = []
        for f in flows:
            beta = rate * f.share * per_hop / f.channels  # a channel's bytes per second on its links
            w = step_bound(algo, proto, op, chunk, cost, beta)
            if st.nodes > 1:
                w = min(w, window(algo, proto, op, chunk, steps[1], beta, nbytes * f.share / f.channels))
            out.append(replace(f, caps=f.caps + ((w, per_hop / f.channels),)) if math.isfinite(w) else f)
        return out

    def _stream_cap(self, algo: str, proto: str, op: str, chunk: int) -> float:
        """A channel's network rate over TCP (GB/s): its streams times ``[model] stream_rate``, one
        stream per 64 KiB of a step (net_socket.cc: tasks of at least NCCL_SOCKET_MIN_TASKSIZE)."""
        r = self.rates.stream_rate
        nccl = self.topo.spec.nccl
        if r is None or nccl.transport not in TCP_TRANSPORTS:
            return math.inf
        step = in_flight(algo, proto, op, chunk)[1]
        return r * min(nccl.socket_streams, max(1, math.ceil(step / SOCKET_TASK)))

    def _channel_rate(self, algo: str) -> float | None:
        return self.rates.tree_channel_rate if algo in ("tree", "nvls_tree") else self.rates.ring_channel_rate

    # -- NCCL's automatic choice -----------------------------------------------------
    def analytic_seconds(self, coll: Collective, nbytes: float) -> float:
        """Uncontended time: latency plus bytes over the collective's algorithm bandwidth."""
        return coll.latency + nbytes / coll.algbw(self.topo.capacity)

    def choose(self, op: str, members: Sequence[int], nbytes: float, algo: str = "auto",
               proto: str = "auto") -> tuple[str, str]:
        """The (algorithm, protocol) NCCL would run (``algo``/``proto`` force one, like NCCL_ALGO/NCCL_PROTO)."""
        direct = (op, members if isinstance(members, tuple) else tuple(members), nbytes, algo, proto)
        hit = self._chosen.get(direct)
        if hit is not None:
            return hit
        key = (op, self.shape(members), nbytes, algo, proto)  # groups of one shape choose alike
        hit = self._choice.get(key)
        if hit is not None:
            self._chosen[direct] = hit
            return hit
        avail = self.available(op, members)
        cands = [(a, p) for a, p in avail if (algo == "auto" or a == algo or (algo == "collnet" and a in COLLNET))
                 and (proto == "auto" or p == proto)]
        if not cands:  # the forced algorithm cannot run this collective here: NCCL runs it as a ring
            cands = [(a, p) for a, p in avail if a == "ring" and (proto == "auto" or p == proto)]
        if not cands:
            cands = [("ring", "Simple")]
        best = min(cands, key=lambda ap: self.estimate(*ap, op, members, nbytes))
        self._choice[key] = self._chosen[direct] = best
        return best


def _moved(topo: Topology, c: Collective, nodes: int) -> Collective:
    """Collective ``c`` moved ``nodes`` nodes on."""
    if nodes == 0:
        return c
    d = nodes * topo.gpus_per_node
    move = topo.mover(min(c.members) // topo.gpus_per_node)
    flows = tuple(Flow(f.share, f.channels, move(f.edges, nodes), f.coef,
                       (f.table if isinstance(f.table, MovedHops) else MovedHops(f.table, move, 0, topo.gpus_per_node)
                        ).moved(move, nodes, topo.gpus_per_node), f.caps) for f in c.flows)
    return Collective(c.algo, c.proto, c.op, tuple(m + d for m in c.members), c.nodes, c.channels, flows, c.latency,
                      c.bus_factor, c.shared_caps, c.tuning)


def _merge(groups: list[HopTable], per_flow: list[int], graph: list[int]) -> tuple[list, list, list]:
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


def _free(topo: Topology, seg: Segment) -> bool:
    """Any ring order is as good inside this segment (all members on one NVSwitch)."""
    from .ringsearch import _one_switch

    local = seg.local(topo)
    key = ("one switch", local)
    if key not in topo.memo:
        topo.memo[key] = _one_switch(topo, local) if len(local) > 2 else True
    return topo.memo[key]
