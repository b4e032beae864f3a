"""A fabric (:mod:`.fabric_spec`) instantiated for a node count: its links and routes by arithmetic.

Nothing is materialised edge by edge.  The links are numbered in blocks, after the
nodes' own links:

* **cables**: per NIC ``i`` of the node file, ``2 N`` ids: node ``p``'s NIC up to its
  leaf at ``2p``, down from it at ``2p + 1`` (the ``link`` class);
* **uplinks** of every tier but the top: per switch group ``g`` of the tier, one trunk up
  and one down (``adaptive`` routing: a flow spreads over all of the group's ports, so
  they act as one link of their total capacity), or ``k`` ports up and ``k`` down
  (``ecmp``: a flow takes one port, chosen by a hash of its ends, its ``salt`` (the
  collectives number each queue pair of a channel's connection), the tier and the seed);
* **pairs** of an ``all-to-all`` tier under ``ecmp``: one directed link between every two
  groups it joins, each the pair's share of their uplinks (minimal routing).

Groups at tier ``t``: node ``p`` is in group ``p // G_t``; leaves also split by rail
(leaf ``(p // G_0) R + rail``).  A leaf's uplink capacity is its NIC cables' over the
oversubscription (or its ``uplinks`` ports at the class's rate), counted for a full group
even when the last group is partly filled (a switch's ports are cabled whoever uses
them); a higher group's, its children's uplinks over its own oversubscription.

A route between NIC ``x`` of node ``p`` and NIC ``y`` of node ``q`` climbs to the lowest
tier where the two meet -- the same leaf, else the lowest tier whose group holds both --
and back down.  Moving a group of nodes by ``d`` is an exact symmetry when, at every tier,
every member moves by the same number of that tier's groups -- the group's shape relative to
the tiers is the same (:meth:`Fabric.move_keys`); the link ids then move by arithmetic too
(:meth:`Fabric.move`).

Examples
--------
>>> from .fabric_spec import FabricSpec, Tier
>>> from .spec import LinkClass
>>> spec = FabricSpec((Tier("leaf", 2, 2.0), Tier("spine", None)))
>>> cls = {"nic": LinkClass("nic", 50.0, 0.5), "leaf": LinkClass("leaf", 50.0, 0.5)}
>>> f = Fabric(spec, cls, ("nic0",), nodes=4, first=0)
>>> f.capacity[f.uplink_ids(0, 0)] / 1e9          # 2 NICs of 50 GB/s, oversubscribed 2:1
array([50., 50.])
>>> [f.describe(e) for e in f.route(0, 0, 3, 0)]   # node 0 to node 3: leaf 0, spine, leaf 1
['cable nic0 of node 0 up', 'leaf 0 up', 'leaf 1 down', 'cable nic0 of node 3 down']
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..util.errors import TopologyError
from .fabric_spec import GB, FabricSpec, check_ports, uplink_ports

__all__ = ["Fabric"]

US = 1e-6
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit hash (deterministic, no state; arrays wrap silently)."""
    h = np.atleast_1d(h)
    h = (h ^ (h >> np.uint64(30))) * _MIX[1]
    h = (h ^ (h >> np.uint64(27))) * _MIX[2]
    return h ^ (h >> np.uint64(31))


_MASK = 2**64 - 1
_M0, _M1, _M2 = (int(m) for m in _MIX)


def _mix_one(seed: int, values: Sequence[int]) -> int:
    """:meth:`Fabric._hash` of one route in Python's integers (numpy's per-call cost dominates a
    single route, and a connection's queue pairs multiply the routes): bit for bit the same."""
    h = (seed * _M0) & _MASK
    for v in values:
        h ^= (v + _M0) & _MASK  # numpy's uint64 wraps the same way
        h ^= h >> 30
        h = (h * _M1) & _MASK
        h ^= h >> 27
        h = (h * _M2) & _MASK
        h ^= h >> 31
    return h


@dataclass(frozen=True)
class _Block:
    kind: str  # cable, up (trunks or ports), pair
    tier: int  # up: the tier whose groups own the uplinks; pair: the all-to-all tier
    nic: int  # cable: the NIC
    first: int
    count: int


class Fabric:
    """A :class:`~p2sim.topology.fabric_spec.FabricSpec` over ``nodes`` nodes with the NICs ``nics``
    (the node file's NIC components), its link ids starting at ``first``."""

    def __init__(self, spec: FabricSpec, classes: Mapping[str, object], nics: Sequence[str], nodes: int,
                 first: int, uplinks: Mapping[tuple[int, int], float] | None = None, source: str = "fabric") -> None:
        """``uplinks``: (tier, group) -> ports, groups with fewer uplinks than their tier's (faults);
        ``source``: the system file, for messages."""
        self.spec, self.nodes, self.nics = spec, nodes, tuple(nics)
        R = spec.rails
        if R > 1 and len(spec.tiers) == 1:
            raise TopologyError(f"fabric: {R} rails need a tier above the leaves to join them")
        if R > 1 and len(self.nics) % R:
            raise TopologyError(f"fabric.rails: {R} rails do not divide the node's {len(self.nics)} NICs evenly")
        if not self.nics and nodes > 1:
            raise TopologyError("fabric: the node has no NIC to reach the fabric")
        self.rail = np.arange(len(self.nics), dtype=np.int64) % R
        self.top = len(spec.tiers) - 1
        self.sizes = [t.nodes for t in spec.tiers[:-1]]  # G_t, nodes per group, below the top tier
        self.ecmp = spec.routing == "ecmp"
        link = classes[spec.link]
        cable = link.bandwidth * link.efficiency * GB  # type: ignore[attr-defined]
        # groups per tier, uplink capacity per group, ports per group
        self.groups = [-(-nodes // g) * (R if t == 0 else 1) for t, g in enumerate(self.sizes)]
        self.children = [0] + [self._children(t) for t in range(1, len(spec.tiers))]
        # the file and --vary check this first, with their own names; a calibrated class's rate reaches here only
        check_ports(spec, classes, len(self.nics), source)
        self.up_capacity, self.ports = uplink_ports(spec, classes, len(self.nics))
        self.port_latency = [classes[t.name].latency * US for t in spec.tiers[:-1]]  # type: ignore[attr-defined]
        blocks: list[_Block] = []
        at = first
        for i in range(len(self.nics)):
            blocks.append(_Block("cable", 0, i, at, 2 * nodes))
            at += 2 * nodes
        for t in range(len(self.sizes)):
            n = 2 * self.groups[t] * (self.ports[t] if self.ecmp else 1)
            blocks.append(_Block("up", t, -1, at, n))
            at += n
        self.pair_tiers = [t for t in range(1, len(spec.tiers)) if spec.tiers[t].connect == "all-to-all" and self.ecmp]
        for t in self.pair_tiers:  # a direct link between every two groups needs a port at each end
            c, below = self.children[t], spec.tiers[t - 1].name
            if c - 1 > self.ports[t - 1]:
                raise TopologyError(f"fabric.tiers[{t}]: at {nodes} nodes the {spec.tiers[t].name} tier joins {c} "
                                    f"{below} groups all-to-all, but under ecmp routing each pair is a direct link "
                                    f"and a {below} group has {self.ports[t - 1]} uplink ports for its {c - 1} peers")
        for t in self.pair_tiers:
            c = self.children[t]
            n = self._parents(t) * c * c
            blocks.append(_Block("pair", t, -1, at, n))
            at += n
        self.blocks, self.first, self.end = blocks, first, at
        self._starts = [b.first for b in blocks]
        self._by = {(b.kind, b.tier, b.nic): b for b in blocks}
        cap, lat, cls_names = [], [], []
        for b in blocks:
            if b.kind == "cable":
                cap.append(np.full(b.count, cable))
                lat.append(np.full(b.count, link.latency * US))  # type: ignore[attr-defined]
                cls_names.append((spec.link, b.count))
            elif b.kind == "up":
                per = self.up_capacity[b.tier] / (self.ports[b.tier] if self.ecmp else 1)
                cap.append(np.full(b.count, per))
                lat.append(np.full(b.count, self.port_latency[b.tier]))
                cls_names.append((spec.tiers[b.tier].name, b.count))
            else:  # a pair's share of the uplinks of the groups it joins
                c = self.children[b.tier]
                cap.append(np.full(b.count, self.up_capacity[b.tier - 1] / max(1, c - 1)))
                lat.append(np.full(b.count, self.port_latency[b.tier - 1]))
                cls_names.append((spec.tiers[b.tier - 1].name, b.count))
        self.capacity = np.concatenate(cap) if cap else np.zeros(0)
        self.latency = np.concatenate(lat) if lat else np.zeros(0)
        self.edge_class = tuple(c for c, n in cls_names for _ in range(n))
        # per group, the uplink ports it has (fewer where a fault took some): ECMP hashes over those
        self.group_ports = [np.full(self.groups[t], self.ports[t], dtype=np.int64) for t in range(len(self.sizes))]
        for (t, g), n in (uplinks or {}).items():
            self._fault_uplinks(t, g, n)

    def _fault_uplinks(self, t: int, g: int, n: float) -> None:
        """Group ``g`` of tier ``t`` keeps ``n`` uplink ports (of its tier's port rate)."""
        if not 0 <= t < len(self.sizes):
            raise TopologyError(f"fabric: the top tier {self.spec.tiers[-1].name} has no uplinks")
        if not 0 <= g < self.groups[t]:
            raise TopologyError(f"fabric: {self.spec.tiers[t].name} {g} is not a group (0..{self.groups[t] - 1})")
        port = self.up_capacity[t] / self.ports[t]
        if not 0 < n <= self.ports[t]:
            raise TopologyError(f"fabric: {self.spec.tiers[t].name} {g} has {self.ports[t]} uplink ports; "
                                f"{n:g} is not a number of them in 1..{self.ports[t]}")
        ids = self.uplink_ids(t, g) - self.first
        if self.ecmp:  # the lost ports are the last ones; flows hash over the rest
            self.group_ports[t][g] = max(1, int(n))
            self.capacity[ids[2 * int(n):]] = 0.0
        else:
            self.capacity[ids] = n * port

    # -- structure -------------------------------------------------------------------
    def _children(self, t: int) -> int:
        """How many groups of tier ``t - 1`` one group of tier ``t`` joins."""
        below = self.groups[t - 1]
        if t == self.top:
            return below
        per = self.sizes[t] // self.sizes[t - 1]
        return per * (self.spec.rails if t - 1 == 0 else 1)

    def _parents(self, t: int) -> int:
        return 1 if t == self.top else self.groups[t]

    def group(self, t: int, node: np.ndarray | int, nic: np.ndarray | int = 0) -> np.ndarray | int:
        """The group of tier ``t`` that node ``node`` (and, for the leaves, NIC ``nic``) belongs to."""
        if t == 0:
            return (node // self.sizes[0]) * self.spec.rails + self.rail[nic]
        return node // self.sizes[t]

    def meeting_tier(self, p: np.ndarray, x: np.ndarray, q: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The lowest tier where NIC ``x`` of node ``p`` and NIC ``y`` of node ``q`` meet."""
        t = np.full(np.shape(p), self.top, dtype=np.int64)
        for k in reversed(range(len(self.sizes))):
            same = self.group(k, p, x) == self.group(k, q, y)
            t = np.where(same, k, t)
        return t

    def uplink_ids(self, t: int, g: int) -> np.ndarray:
        """The up and down ids of group ``g``'s uplinks at tier ``t`` (trunk, or every port)."""
        b = self._by[("up", t, -1)]
        k = self.ports[t] if self.ecmp else 1
        return b.first + 2 * g * k + np.arange(2 * k)

    def cable(self, nic: int, node: int, up: bool) -> int:
        return self._by[("cable", 0, nic)].first + 2 * node + (0 if up else 1)

    # -- routes ------------------------------------------------------------------------
    def _hash(self, p, x, q, y, salt, t) -> np.ndarray:
        values = (p, x, q, y, salt, t)
        if all(np.size(v) == 1 for v in values):  # one route (route_via): the same hash in Python's integers
            return np.array([_mix_one(self.spec.seed, [int(np.asarray(v).reshape(-1)[0]) for v in values])],
                            dtype=np.uint64)
        h = np.array((self.spec.seed * int(_MIX[0])) % 2**64, dtype=np.uint64)  # wrapping arithmetic
        for v in values:
            h = _mix(h ^ (np.asarray(v).astype(np.uint64) + _MIX[0]))
        return h

    def mids(self, p, x, q, y, salt=None) -> tuple[np.ndarray, np.ndarray]:
        """The fabric part of many routes between their NIC cables: ``(indptr, edges)``.

        ``p, x`` are the sending nodes and NICs (indices into :attr:`nics`), ``q, y`` the
        receiving ones, ``salt`` a per-flow number (its channel) that ECMP hashes too.
        """
        p, x, q, y = (np.asarray(a, dtype=np.int64) for a in (p, x, q, y))
        salt = np.zeros(len(p), dtype=np.int64) if salt is None else np.asarray(salt, dtype=np.int64)
        meet = self.meeting_tier(p, x, q, y)
        parts: list[tuple[np.ndarray, np.ndarray]] = []  # (pair index, edge id) in route order per pair
        for T in range(1, self.top + 1):
            sel = np.flatnonzero(meet == T)
            if not len(sel):
                continue
            pp, xx, qq, yy, ss = p[sel], x[sel], q[sel], y[sel], salt[sel]
            pair = T in self.pair_tiers
            climb = T - 1 if pair else T
            ups, downs = [], []
            for t in range(climb):
                b = self._by[("up", t, -1)]
                gs, gd = self.group(t, pp, xx), self.group(t, qq, yy)
                if self.ecmp:  # one port, alive at both ends, by the flow's hash
                    k = self.ports[t]
                    alive = np.minimum(self.group_ports[t][gs], self.group_ports[t][gd]).astype(np.uint64)
                    j = (self._hash(pp, xx, qq, yy, ss, t) % alive).astype(np.int64)
                    ups.append(b.first + 2 * (gs * k + j))
                    downs.append(b.first + 2 * (gd * k + j) + 1)
                else:
                    ups.append(b.first + 2 * gs)
                    downs.append(b.first + 2 * gd + 1)
            if pair:
                b, c = self._by[("pair", T, -1)], self.children[T]
                a, z = self._child(T, pp, xx), self._child(T, qq, yy)
                parent = np.zeros_like(pp) if T == self.top else self.group(T, pp)
                ups.append(b.first + (parent * c + a) * c + z)
            seq = ups + downs[::-1]
            for k, e in enumerate(seq):
                parts.append((sel, e))
        n = len(p)
        if not parts:
            return np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
        rows = np.concatenate([r for r, _ in parts])
        ids = np.concatenate([e for _, e in parts])
        order = np.argsort(rows, kind="stable")  # per pair in route order (parts were appended in order)
        counts = np.bincount(rows, minlength=n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return indptr, ids[order].astype(np.int64)

    def _child(self, T: int, node: np.ndarray, nic: np.ndarray) -> np.ndarray:
        """Index of a node's tier ``T - 1`` group among the children of its tier ``T`` group."""
        g = self.group(T - 1, node, nic)
        if T == self.top:
            return g
        return g - self.group(T, node) * self.children[T]

    def route(self, p: int, x: int, q: int, y: int, salt: int = 0) -> list[int]:
        """One route, cables included: NIC ``x`` of node ``p`` to NIC ``y`` of node ``q``."""
        indptr, edges = self.mids([p], [x], [q], [y], [salt])
        return [self.cable(x, p, True), *edges.tolist(), self.cable(y, q, False)]

    def sharp_tree(self, nodes: np.ndarray, nic: int) -> np.ndarray | None:
        """The uplinks (up and down) of the SHARP reduction tree over ``nodes`` through NIC ``nic`` of
        each: one stream up and one down per switch group below the tree's root, the lowest tier
        whose one group holds every node.  ``None`` when a tier on the way does not reduce."""
        nodes = np.unique(np.asarray(nodes, dtype=np.int64))
        out = []
        for t in range(self.top + 1):
            if not self.spec.tiers[t].sharp:
                return None
            if t == self.top:
                break
            groups = np.unique(self.group(t, nodes, nic))
            if len(groups) == 1:
                break
            b = self._by[("up", t, -1)]
            if self.ecmp:  # the subnet manager pins a tree to one port per group
                k = self.ports[t]
                j = (self._hash(groups, nic, groups, nic, 0, t) % self.group_ports[t][groups].astype(np.uint64)
                     ).astype(np.int64)
                ids = b.first + 2 * (groups * k + j)
            else:
                ids = b.first + 2 * groups
            out += [ids, ids + 1]
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    # -- symmetry ------------------------------------------------------------------------
    def move_keys(self, nodes: np.ndarray, ports: bool = True) -> np.ndarray:
        """What groups of nodes (a row each, ``nodes[i]`` in member order) must share for one to be another
        moved: an array with a row per group, equal rows (of groups of equal shape) are each other moved.

        The group's shape relative to the tiers: per tier, each member's tier group less the first
        node's.  Two groups of one node shape (``nodes - first``) with equal patterns are each other
        moved by ``d`` (the first nodes' difference) with every member shifting by the same number of
        groups at every tier -- the shift :meth:`move` applies, so the move is exact (the switches of
        a tier are alike, and a group's links and routes depend only on which of them it uses).  This
        is coarser than "where the first node sits in its group": a data-parallel group with one node
        per pipeline stage of every unit is one class wherever its stage is.  The first column is
        ``-1``, or the first node where a group over several nodes is only itself: with ECMP (a
        route's port depends on the nodes themselves), or when it spans into a partly filled last
        group of a tier (irregular: flow-level symmetry is left to find what is alike).
        ``ports=False`` leaves ECMP out: groups equal up to their ports, whose routes :meth:`move`
        re-hashes when it is given each port's route.
        """
        nodes = np.atleast_2d(np.asarray(nodes, dtype=np.int64))
        first, last = nodes.min(axis=1), nodes.max(axis=1)
        multi = first != last
        alone = multi & (self.ecmp and ports)
        cols = []
        for s in self.sizes:
            spans = first // s != last // s
            if self.nodes % s:
                alone = alone | (spans & (last // s == self.nodes // s))
            cols.append(np.where(spans[:, None], nodes // s - (first // s)[:, None], 0))
        return np.concatenate([np.where(alone, first, -1)[:, None], *cols], axis=1)

    def hashed(self, edges: np.ndarray) -> np.ndarray:
        """Which of the links ``edges`` are ports an ECMP hash chose (none under adaptive routing)."""
        edges = np.asarray(edges, dtype=np.int64)
        out = np.zeros(len(edges), dtype=bool)
        if self.ecmp:
            for b in self.blocks:
                if b.kind == "up":
                    out |= (edges >= b.first) & (edges < b.first + b.count)
        return out

    def move(self, edges: np.ndarray, first: int, shifts: np.ndarray, routes: np.ndarray | None = None) -> np.ndarray:
        """The ids of fabric links ``edges`` (of a group whose first node is ``first``) after moving
        by every node shift in ``shifts``: an array ``(len(shifts), len(edges))``.

        Under ECMP a port is a hash of its route, so ``routes`` gives each edge's route as a row
        ``(p, x, q, y, salt)`` (nodes before the move, fabric NICs, the flow's salt): a moved port
        is the moved route's hash, as :meth:`mids` computes it there (uplinks' ports only)."""
        edges = np.asarray(edges, dtype=np.int64)
        d = np.asarray(shifts, dtype=np.int64)[:, None]
        out = np.broadcast_to(edges[None, :], (d.shape[0], len(edges))).copy()
        which = np.searchsorted(self._starts, edges, side="right") - 1
        for bi in np.unique(which).tolist():
            b = self.blocks[bi]
            sel = which == bi
            e = edges[sel][None, :]
            if b.kind == "cable":
                out[:, sel] = e + 2 * d
                continue
            if b.kind == "up":
                t, k = b.tier, (self.ports[b.tier] if self.ecmp else 1)
                rel = e - b.first
                g, rest = rel // (2 * k), rel % (2 * k)
                shift = self._group_shift(t, first, d)
                if self.ecmp and d.any():  # the moved route's port, by the hash mids takes, over the ports alive at both ends
                    if routes is None:
                        raise ValueError("Fabric.move: ECMP ports move only with their routes")
                    p, x, q, y, salt = (routes[sel, i][None, :] for i in range(5))
                    p, q = p + d, q + d
                    alive = np.minimum(self.group_ports[t][self.group(t, p, x)],
                                       self.group_ports[t][self.group(t, q, y)]).astype(np.uint64)
                    rest = 2 * (self._hash(p, x, q, y, salt, t) % alive).astype(np.int64) + rest % 2
                out[:, sel] = b.first + 2 * k * (g + shift) + rest
                continue
            T, c = b.tier, self.children[b.tier]
            rel = e - b.first
            parent, a, z = rel // (c * c), (rel // c) % c, rel % c
            child = self._group_shift(T - 1, first, d)
            if T == self.top:
                out[:, sel] = b.first + (a + child) * c + z + child
            else:
                # id = first + (parent c + a) c + z, and parent c + a is child a's global index
                moved_parent = parent + self._group_shift(T, first, d)
                out[:, sel] = b.first + (parent * c + a + child) * c + (parent * c + z + child - moved_parent * c)
        return out

    def _group_shift(self, t: int, first: int, d: np.ndarray) -> np.ndarray:
        """How far a tier-``t`` group id moves when the nodes move by ``d`` (leaves: by whole rails)."""
        size = self.sizes[t]
        shift = (first + d) // size - first // size
        return shift * (self.spec.rails if t == 0 else 1)

    # -- names ---------------------------------------------------------------------------
    def _block(self, edge: int) -> _Block:
        return self.blocks[bisect.bisect_right(self._starts, edge) - 1]

    def switch_name(self, t: int, g: int) -> str:
        name = self.spec.tiers[t].name
        return name if t == self.top else f"{name}{g}"

    def edge_name(self, edge: int) -> tuple[str, str]:
        """The directed link ``edge`` as ``(u, v)`` names: ``n<p>/<nic>`` and ``net/<switch>``."""
        b = self._block(edge)
        rel = edge - b.first
        if b.kind == "cable":
            node, down = divmod(rel, 2)
            leaf = f"net/{self.switch_name(0, 0 if self.top == 0 else int(self.group(0, node, b.nic)))}"
            nic = f"n{node}/{self.nics[b.nic]}"
            return (leaf, nic) if down else (nic, leaf)
        if b.kind == "up":
            t = b.tier
            k = self.ports[t] if self.ecmp else 1
            g, rest = divmod(rel, 2 * k)
            down = rest % 2  # every port of a group joins the same (aggregated) switch group above
            upper = f"net/{self.switch_name(t + 1, self._parent_of(t, g))}"
            low = f"net/{self.switch_name(t, g)}"
            return (upper, low) if down else (low, upper)
        T, c = b.tier, self.children[b.tier]
        parent, a, z = rel // (c * c), (rel // c) % c, rel % c
        base = 0 if T == self.top else parent * c
        return f"net/{self.switch_name(T - 1, base + a)}", f"net/{self.switch_name(T - 1, base + z)}"

    def _parent_of(self, t: int, g: int) -> int:
        """The tier ``t + 1`` group holding group ``g`` of tier ``t``."""
        if t + 1 == self.top:
            return 0
        first_node = (g // self.spec.rails if t == 0 else g) * self.sizes[t]
        return first_node // self.sizes[t + 1]

    def describe(self, edge: int) -> str:
        """A link in words, for messages and tests."""
        b = self._block(edge)
        rel = edge - b.first
        if b.kind == "cable":
            node, down = divmod(rel, 2)
            return f"cable {self.nics[b.nic]} of node {node} {'down' if down else 'up'}"
        if b.kind == "up":
            k = self.ports[b.tier] if self.ecmp else 1
            g, rest = divmod(rel, 2 * k)
            j, down = divmod(rest, 2)
            port = f" port {j}" if self.ecmp else ""
            return f"{self.spec.tiers[b.tier].name} {g}{port} {'down' if down else 'up'}"
        c = self.children[b.tier]
        return f"{self.spec.tiers[b.tier].name} pair {rel // c % c} -> {rel % c} (of group {rel // (c * c)})"

    def switches(self) -> list[tuple[str, str]]:
        """Every switch (group) as ``(name, kind)``, for drawing the whole graph."""
        out = [(self.switch_name(t, g), "network_switch") for t in range(len(self.sizes)) for g in range(self.groups[t])]
        # the top tier: a Clos tier's switches, or where an all-to-all tier's groups' links meet
        out.append((self.switch_name(self.top, 0), "network_switch"))
        return out

    def summary(self) -> list[dict[str, object]]:
        """Per tier: groups, uplink capacity and ports per group, oversubscription (for ``p2sim topo``)."""
        out = []
        for t, tier in enumerate(self.spec.tiers):
            row: dict[str, object] = {"tier": tier.name, "connect": tier.connect, "sharp": tier.sharp}
            if t < self.top:
                row.update(nodes=self.sizes[t], groups=self.groups[t], uplink_GBps=self.up_capacity[t] / GB,
                           ports=self.ports[t])
            out.append(row)
        return out

