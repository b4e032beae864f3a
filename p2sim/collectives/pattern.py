"""What one collective puts on the links: its channels' fluid flows.

A collective runs on channels, each carrying an equal share of the buffer over its own
ring or tree (NCCL's structure).  Channels that take exactly the same links are one
:class:`Flow` (they would progress in lockstep anyway); a collective is a few flows.
While a flow progresses at ``x`` bytes of its share per second it loads directed link
``edges[i]`` with ``coef[i] * x`` bytes per second, and each of its ``caps``
``(capacity, coef)`` is a private limit ``coef * x <= capacity`` (per-channel
throughput).  A collective's ``shared_caps`` bound all its flows together (a limit on
the whole collective, such as the LL protocol's).  ``hops`` keep the per-GPU traffic
(sender, receiver, bytes per byte of the flow's share); a flow holds them as a
:class:`HopTable`, arrays that a ring over thousands of GPUs fills in a few passes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Hop", "HopTable", "MovedHops", "PlacedHops", "Flow", "Collective", "combine", "make_flow", "sum_by_edge"]


@dataclass(frozen=True)
class Hop:
    """``src`` sends ``coef`` bytes of data to ``dst`` per byte of its flow's share, over ``edges``.

    ``overhead`` is link bytes per data byte on this hop (NVLS's efficiency); a flow's
    protocol overhead applies on top (:func:`make_flow`).
    """

    src: int
    dst: int
    coef: float
    edges: tuple[int, ...]
    inter_node: bool
    overhead: float = 1.0


@dataclass(frozen=True, eq=False)
class HopTable:
    """Hops as arrays, in order: hop ``i`` is ``Hop(src[i], dst[i], coef[i],
    edges[indptr[i]:indptr[i + 1]], inter[i], overhead[i])``.

    Examples
    --------
    >>> t = HopTable.of([Hop(0, 1, 0.5, (3, 4), False), Hop(1, 0, 0.5, (5,), False)])
    >>> t.load()
    (array([3, 4, 5]), array([0.5, 0.5, 0.5]))
    >>> t.hops()[1]
    Hop(src=1, dst=0, coef=0.5, edges=(5,), inter_node=False, overhead=1.0)
    """

    src: np.ndarray  # int64; SWITCH (-1) for an NVSwitch
    dst: np.ndarray
    coef: np.ndarray
    inter: np.ndarray  # bool
    overhead: np.ndarray
    indptr: np.ndarray  # int64, len(src) + 1
    edges: np.ndarray  # int64
    # on an ECMP fabric, per hop its route's (fabric NIC out, NIC in, salt), -1 where it has none: a moved
    # copy's ports are the moved routes' hashes (Topology.move_edges); None: no hop's port moves
    ports: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.src)

    @classmethod
    def of(cls, hops: Sequence[Hop]) -> HopTable:
        n = len(hops)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(h.edges) for h in hops], out=indptr[1:])
        return cls(np.fromiter((h.src for h in hops), np.int64, n), np.fromiter((h.dst for h in hops), np.int64, n),
                   np.fromiter((h.coef for h in hops), float, n), np.fromiter((h.inter_node for h in hops), bool, n),
                   np.fromiter((h.overhead for h in hops), float, n),
                   indptr, np.fromiter((e for h in hops for e in h.edges), np.int64, int(indptr[-1])))

    @classmethod
    def concat(cls, tables: Sequence[HopTable]) -> HopTable:
        if len(tables) == 1:
            return tables[0]
        sizes = np.cumsum([0] + [len(t.edges) for t in tables[:-1]])
        indptr = np.concatenate([[0]] + [t.indptr[1:] + s for t, s in zip(tables, sizes)]).astype(np.int64)
        ports = None
        if any(t.ports is not None for t in tables):
            ports = np.concatenate([t.ports if t.ports is not None else np.full((len(t), 3), -1, dtype=np.int64)
                                    for t in tables])
        return cls(*(np.concatenate([getattr(t, f) for t in tables]) for f in ("src", "dst", "coef", "inter", "overhead")),
                   indptr, np.concatenate([t.edges for t in tables]), ports)

    def hops(self) -> tuple[Hop, ...]:
        ends = self.indptr.tolist()
        edges = self.edges.tolist()
        return tuple(Hop(s, d, c, tuple(edges[ends[i]:ends[i + 1]]), x, o) for i, (s, d, c, x, o) in enumerate(
            zip(self.src.tolist(), self.dst.tolist(), self.coef.tolist(), self.inter.tolist(),
                self.overhead.tolist())))

    def load(self) -> tuple[np.ndarray, np.ndarray]:
        """Link loads (data times overhead) on sorted directed edges: :func:`combine` of the hops.

        Summed in hop order, as :func:`combine` sums, so the two agree bit for bit.
        """
        return sum_by_edge(self.edges, np.repeat(self.coef * self.overhead, np.diff(self.indptr)))

    def key(self) -> bytes:
        """Equal for tables of identical hops (sender, receiver, coefficient, edges, overhead)."""
        return b"|".join(a.tobytes() for a in (self.src, self.dst, self.coef, self.overhead, self.indptr, self.edges))

    def route_latencies(self, latency: np.ndarray) -> tuple[float, float]:
        """The slowest route (summed latencies of its edges) among the hops to and from GPUs
        inside a node and across nodes; 0 without any."""
        lens = np.diff(self.indptr)
        nonempty = lens > 0
        if not nonempty.any():
            return 0.0, 0.0
        # one sequential sum per route, as numpy's reduceat sums each segment
        sums = np.add.reduceat(latency[self.edges], self.indptr[:-1][nonempty])
        # hops between GPUs, and a GPU's hops to and from the network's switches (CollNet: NET = -2)
        ends = lambda a: (a >= 0) | (a == -2)  # noqa: E731
        gpus = (ends(self.src) & ends(self.dst))[nonempty]
        inter = self.inter[nonempty]
        out = []
        for side in (~inter, inter):
            keep = gpus & side
            out.append(float(sums[keep].max()) if keep.any() else 0.0)
        return out[0], out[1]

    def moved(self, shift_edges, nodes: int, gpus: int) -> HopTable:
        """The hops ``nodes`` nodes on (``shift_edges`` moves edge ids, ``gpus`` GPUs per node)."""
        d = nodes * gpus
        if self.ports is None:
            edges = shift_edges(self.edges, nodes)
        else:  # each edge's route, (node, NIC, node, NIC, salt), for the ports ECMP hashed
            lens = np.diff(self.indptr)
            routes = np.repeat(np.column_stack([self.src // gpus, self.ports[:, 0], self.dst // gpus, self.ports[:, 1],
                                                self.ports[:, 2]]), lens, axis=0)
            edges = shift_edges(self.edges, nodes, routes)
        return HopTable(np.where(self.src >= 0, self.src + d, self.src), np.where(self.dst >= 0, self.dst + d, self.dst),
                        self.coef, self.inter, self.overhead, self.indptr, edges, self.ports)

    def movable(self, hashed: np.ndarray) -> bool:
        """Whether every edge in ``hashed`` (a mask of :attr:`edges`: ECMP's ports) has its route in :attr:`ports`."""
        if not hashed.any():
            return True
        if self.ports is None:
            return False
        hop = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.indptr))
        return bool((self.ports[hop[hashed], 2] >= 0).all())


@dataclass(frozen=True, eq=False)
class MovedHops:
    """A :class:`HopTable` moved ``nodes`` nodes on (``shift_edges`` moves edge ids), made
    only when read: a step of thousands of moved groups never needs their hops."""

    base: HopTable | PlacedHops
    shift_edges: Callable[[np.ndarray, int], np.ndarray]
    nodes: int
    gpus: int

    def table(self) -> HopTable:
        return self.base.moved(self.shift_edges, self.nodes, self.gpus)

    def hops(self) -> tuple[Hop, ...]:
        return self.table().hops()

    def moved(self, shift_edges, nodes: int, gpus: int) -> MovedHops:
        """Moved ``nodes`` further (``shift_edges`` is ignored: this table's own, from its base, applies)."""
        return MovedHops(self.base, self.shift_edges, self.nodes + nodes, gpus)


@dataclass(frozen=True, eq=False)
class PlacedHops:
    """A hop table (or a moved one) with its GPUs and links permuted inside their nodes (``devices`` and
    ``edges`` map them: a place symmetry, :mod:`p2sim.topology.places`), made only when read."""

    base: HopTable | MovedHops | PlacedHops
    devices: Callable[[np.ndarray], np.ndarray]
    edges: Callable[[np.ndarray], np.ndarray]

    def table(self) -> HopTable:
        t = self.base if isinstance(self.base, HopTable) else self.base.table()
        return HopTable(self.devices(t.src), self.devices(t.dst), t.coef, t.inter, t.overhead, t.indptr,
                        self.edges(t.edges), t.ports)

    def hops(self) -> tuple[Hop, ...]:
        return self.table().hops()

    def moved(self, shift_edges, nodes: int, gpus: int) -> HopTable:
        """The permuted table moved ``nodes`` nodes on (as :meth:`HopTable.moved`)."""
        return self.table().moved(shift_edges, nodes, gpus)


@dataclass(frozen=True, eq=False)
class Flow:
    """Channels of one collective that take the same links (see module docstring)."""

    share: float  # of the collective's buffer
    channels: int  # NCCL channels it carries
    edges: np.ndarray
    coef: np.ndarray
    table: HopTable | MovedHops | PlacedHops
    caps: tuple[tuple[float, float], ...] = ()  # (bytes/s, coef): private virtual links
    cap_kinds: tuple[str, ...] = ()  # what each cap is, for saying what binds (collectives/binding.py)

    @property
    def hops(self) -> tuple[Hop, ...]:
        return self.table.hops()


@dataclass(frozen=True, eq=False)
class Collective:
    """One collective of one group: algorithm, protocol, channels and flows.

    ``bus_factor`` is NCCL's ratio of bus to algorithm bandwidth for this algorithm
    (``busBw = algBw x bus_factor``); ``latency`` the start-up time in seconds.
    ``tuning`` is NCCL's own estimate of it, (latency s, algorithm bandwidth bytes/s): the
    figures NCCL chooses an algorithm and protocol by (``src/graph/tuning.cc``), without what
    its model leaves out (the pipeline's window, the transport's real step, launch costs).
    """

    algo: str
    proto: str
    op: str
    members: tuple[int, ...]
    nodes: int
    channels: int
    flows: tuple[Flow, ...]
    latency: float
    bus_factor: float
    shared_caps: tuple[tuple[float, tuple[float, ...]], ...] = ()  # (bytes/s, coef per flow)
    tuning: tuple[float, float] | None = None

    @property
    def crosses_nodes(self) -> bool:
        return self.nodes > 1

    def link_load(self) -> tuple[np.ndarray, np.ndarray]:
        """Link bytes per byte of buffer when every flow progresses in proportion to its share."""
        return self._link_load

    @functools.cached_property
    def _link_load(self) -> tuple[np.ndarray, np.ndarray]:
        return combine_weighted((f.edges, f.coef, f.share) for f in self.flows)

    def sent(self) -> dict[int, float]:
        """Data bytes each member sends per byte of buffer (to GPUs, or to an NVSwitch for NVLS)."""
        out: dict[int, float] = {m: 0.0 for m in self.members}
        for f in self.flows:
            for h in f.hops:
                if h.src in out:
                    out[h.src] += h.coef * f.share
        return out

    def received(self) -> dict[int, float]:
        """Data bytes each member receives per byte of buffer."""
        out: dict[int, float] = {m: 0.0 for m in self.members}
        for f in self.flows:
            for h in f.hops:
                if h.dst in out:
                    out[h.dst] += h.coef * f.share
        return out

    def algbw(self, capacity: np.ndarray) -> float:
        """Uncontended bytes of buffer per second: every flow at its share, no other traffic.

        Kept for the last capacity array asked (a search bounds the same cached collective over and
        over on its topology's capacities); the array is held, so its identity stays its own."""
        kept = self.__dict__.get("_algbw_kept")
        if kept is not None and kept[0] is capacity:
            return kept[1]
        rate = self._algbw(capacity)
        self.__dict__["_algbw_kept"] = (capacity, rate)  # frozen: as functools.cached_property stores
        return rate

    def _algbw(self, capacity: np.ndarray) -> float:
        edges, coef = self.link_load()
        rate = float(np.min(capacity[edges] / coef)) if len(edges) else np.inf
        for f in self.flows:
            for cap, c in f.caps:
                rate = min(rate, cap / (c * f.share))
        for cap, per_flow in self.shared_caps:
            load = sum(c * f.share for c, f in zip(per_flow, self.flows))
            if load > 0:
                rate = min(rate, cap / load)
        return rate


def combine(hops: Iterable[Hop]) -> tuple[np.ndarray, np.ndarray]:
    """Sum the per-hop link loads (data times overhead) onto directed edges (sorted edge ids)."""
    loads: dict[int, float] = {}
    for h in hops:
        for e in h.edges:
            loads[e] = loads.get(e, 0.0) + h.coef * h.overhead
    return _arrays(loads)


def combine_weighted(parts: Iterable[tuple[np.ndarray, np.ndarray, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``coef * w`` onto edges (sorted), in the parts' order (as a running sum per edge would)."""
    parts = list(parts)
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    edges = np.concatenate([np.asarray(e, dtype=np.int64) for e, _, _ in parts])
    coef = np.concatenate([np.asarray(c, dtype=float) * w for _, c, w in parts])
    return sum_by_edge(edges, coef)


def sum_by_edge(edges: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct edge ids (sorted) and the sum of ``weights`` on each, added in array order.

    Edge ids are dense (a topology's link indices), so counting into an array the size of the
    largest id is linear where sorting them is not; sparse ids fall back to :func:`numpy.unique`.
    Both add each edge's weights in the order they come, so they agree bit for bit.
    """
    if len(edges) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    size = int(edges.max()) + 1
    if size > 8 * len(edges) + 4096:
        uniq, inverse = np.unique(edges, return_inverse=True)
        return uniq, np.bincount(inverse.reshape(-1), weights=weights, minlength=len(uniq))
    present = np.flatnonzero(np.bincount(edges, minlength=size))
    return present, np.bincount(edges, weights=weights, minlength=size)[present]


def _arrays(loads: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    edges = np.fromiter(sorted(loads), dtype=np.int64, count=len(loads))
    coef = np.fromiter((loads[e] for e in edges), dtype=float, count=len(loads))
    return edges, coef


def make_flow(hops: Sequence[Hop] | HopTable, share: float, channels: int, scale: float = 1.0,
              caps: tuple[tuple[float, float], ...] = ()) -> Flow:
    """A flow of ``hops``; ``scale`` multiplies its link load (a protocol's overhead)."""
    table = hops if isinstance(hops, HopTable) else HopTable.of(hops)
    edges, coef = table.load()
    return Flow(share, channels, edges, coef * scale, table, caps)
