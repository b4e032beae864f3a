"""From (algorithm, protocol, collective, group) to a :class:`~p2sim.collectives.pattern.Collective`.

:class:`Expander` builds a collective's channels and flows for one topology (cached),
attaches the protocol's link share, NCCL's per-channel caps and the network's
per-channel rate, and computes its start-up latency.  :meth:`Expander.choose` is NCCL's
automatic choice (:mod:`.choice`): among the algorithms and protocols this group can use, the
one whose time by NCCL's own tuning model is least.  It composes four stages that live beside it,
each holding its part of the caches: group shapes (:mod:`.shapes`), the structures of each
algorithm's channels (:mod:`.structure`), the choice (:mod:`.choice`) and a structure's flows with their
protocol (:mod:`.flows`); it keeps each group's settings and the collectives it builds.
``NCCL_ALGO`` / ``NCCL_PROTO`` are ``algo`` / ``proto``: a forced algorithm that a collective does
not have at all (a tree for an AllGather) runs it as a ring, as NCCL 2.19-2.23 did under
``NCCL_ALGO=Tree`` (its ring backup, tuning.cc) and P2's runs relied on; one the system or the group
cannot run (NVLS on an A100, CollNet without SHARP, NVLS Tree inside one node) is refused, as NCCL
refuses it ("no algorithm/protocol available", enqueue.cc): :meth:`Choice.why_not` says why.

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

import math
from collections.abc import Sequence

import numpy as np

from ..topology import Topology
from ..topology.settings import ModelRates
from ..util.errors import InputError
from .algorithms import algorithm
from .caches import CACHE_BYTES, CollectiveCaches
from .channels import Segment, scheduled_channels, segments, threads_used
from .decisions import MISSING
from .choice import ALGO_CHOICES, ALGORITHMS, Choice, check_algo
from .flows import GB, NET_RATE_DEFAULTS, TCP_TRANSPORTS, Flows, net_rate_gbps
from .latency import collective_latency
from .p2p import P2P_ALGO, P2P_OPS, P2P_PROTO, p2p_collective
from .pattern import Collective
from .protocols import collective_cap_gbps, tuning_share
from .shapes import Shapes
from .structure import Structures, moved_collective, placed_collective
from .transports import reported_latency_us

__all__ = ["Expander", "ALGORITHMS", "ALGO_CHOICES", "check_algo", "check_forced", "net_rate_gbps",
           "NET_RATE_DEFAULTS", "TCP_TRANSPORTS", "CACHE_BYTES"]  # re-exported

def check_forced(topo: Topology, algo: str, proto: str = "auto", op: str | None = None,
                 members: Sequence[int] | None = None) -> None:
    """Refuse (:class:`InputError`, before any simulation) a forced algorithm or protocol that NCCL could not run
    here: on this system at all, or, given, for collective ``op`` (not one it has) over ``members``."""
    why = Expander(topo).why_not(algo, op, members, proto)
    if why is not None:
        what = f"on {topo.spec.name}" if op is None else (
            f"{op}" + (f" over {len(set(members))} GPUs" if members is not None else "") + f" on {topo.spec.name}")
        raise InputError(f"algo: {algo} cannot run {what}: {why}")


class Expander:
    """Builds collectives on one topology; every result is cached in ``caches``.

    Four stages, each holding its part of the caches, composed here: :attr:`shapes` (groups up to the
    topology's symmetries, :mod:`.shapes`), :attr:`structures` (ring searches, channel counts and each group's
    hops, :mod:`.structure`), :attr:`choice` (NCCL's choice, :mod:`.choice`) and :attr:`flows` (a structure with
    its protocol's shares, caps and latency, :mod:`.flows`); the expander itself keeps each group's settings
    and the collectives it builds.  Expanders given one :class:`~p2sim.collectives.caches.CollectiveCaches`
    share its ring searches and, with the same rates, every expansion; one given none makes its own.  The
    caches' :meth:`~p2sim.collectives.caches.CollectiveCaches.forget_order` drops what depends on the order
    groups came in.
    """

    def __init__(self, topo: Topology, rates: ModelRates | None = None, caches: CollectiveCaches | None = None
                 ) -> None:
        if caches is not None and caches.topo is not topo:
            raise ValueError("Expander: the caches belong to another topology")
        self.topo = topo
        self.rates = topo.spec.rates if rates is None else rates
        self.arch = topo.spec.nccl.arch
        self.caches = CollectiveCaches(topo) if caches is None else caches
        # everything below is a function of (topology, rates): expanders given these caches share it
        shared = self.shared = self.caches.expansions(self.rates)
        self._cache = shared.cache
        self._moved = shared.moved
        self._settings_of = shared.settings
        self.shapes = Shapes(topo, self.caches, shared)
        self.structures = Structures(topo, self.caches, shared, self.shapes)
        self.flows = Flows(topo, self.rates, self.shapes, self.structures)
        self.choice = Choice(topo, self.caches, shared, self.shapes, self.structures, self._settings, self.tuning,
                             self.tuning_bound)

    # -- what the stages answer ----------------------------------------------------
    def shape(self, members: Sequence[int]) -> tuple:
        """:meth:`Shapes.shape <p2sim.collectives.shapes.Shapes.shape>`."""
        return self.shapes.shape(members)

    def rings(self, local: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], float], ...]:
        """The ring mix of a node's GPUs ``local`` (:meth:`Structures.rings <.structure.Structures.rings>`)."""
        return self.structures.rings(local)

    def channels(self, members: Sequence[int]) -> int:
        """Ring channels NCCL would build for this group (:meth:`.structure.Structures.channels`)."""
        return self.structures.channels(members)

    def available(self, op: str, members: Sequence[int], proto: str = "auto") -> list[tuple[str, str]]:
        """:meth:`Choice.available <.choice.Choice.available>`."""
        return self.choice.available(op, members, proto)

    def why_not(self, algo: str, op: str | None = None, members: Sequence[int] | None = None,
                proto: str = "auto") -> str | None:
        """:meth:`Choice.why_not <.choice.Choice.why_not>`."""
        return self.choice.why_not(algo, op, members, proto)

    def choose(self, op: str, members: Sequence[int], nbytes: float, algo: str = "auto",
               proto: str = "auto") -> tuple[str, str]:
        """The (algorithm, protocol) NCCL would run (:meth:`Choice.choose <.choice.Choice.choose>`)."""
        return self.choice.choose(op, members, nbytes, algo, proto)

    def estimate(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> float:
        """:meth:`Choice.estimate <.choice.Choice.estimate>`."""
        return self.choice.estimate(algo, proto, op, members, nbytes)

    def estimate_bound(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> float:
        """:meth:`Choice.estimate_bound <.choice.Choice.estimate_bound>`."""
        return self.choice.estimate_bound(algo, proto, op, members, nbytes)

    def analytic_seconds(self, coll: Collective, nbytes: float) -> float:
        """Uncontended time: latency plus bytes over the collective's algorithm bandwidth."""
        return self.choice.analytic_seconds(coll, nbytes)

    # -- expansion -----------------------------------------------------------------
    def _settings(self, algo: str, proto: str, op: str, members: tuple[int, ...], nbytes: float) -> tuple:
        """What of ``nbytes`` shapes a collective: channels used, link share, NCCL's ring plateau (per group; per
        size, nodes and channels where that is all they read, Algorithm.settings_by_count: a GB200 rack's 72 places)."""
        key = (algo, proto, op, members, nbytes)
        log = self.shared.decisions  # by count, the first group of a size decides: read and written through the log
        hit = log.read(self._settings_of, key)
        if hit is MISSING:
            a, full = algorithm(algo), self.structures.channels(members)
            nodes = len({m // self.topo.gpus_per_node for m in members})
            alike = ("by count", algo, proto, op, len(members), nodes, full, nbytes) if a.settings_by_count() else key
            hit = log.read(self._settings_of, alike)
            if hit is MISSING:
                hit = log.write(self._settings_of, alike,
                                self._compute_settings(a, proto, op, members, full, nodes, nbytes))
            log.write(self._settings_of, key, hit)
        return hit

    def _compute_settings(self, a, proto: str, op: str, members: tuple, full: int, nodes: int, nbytes: float) -> tuple:
        nc = a.channels_used(self.topo, proto, members, full, nbytes, self.caches)  # topoGetAlgoInfo's count (enqueue.cc)
        # the scheduler gives every channel at least 32 KiB of traffic (scheduleCollTasksToPlan; Algorithm.scheduled)
        used = scheduled_channels(op, proto, nbytes, len(members), nc) if a.scheduled else nc
        # threads each channel's CTA moves data with (topoGetAlgoInfo halves them below nc x nt x threshold):
        # what a channel's rate scales with where no NCCL figure caps it (Algorithm.cta_protos)
        threads = threads_used(proto, nbytes, nc, a.threshold(proto, len(members))) if proto in a.cta_protos else 0
        share = a.link_share(proto, op, nodes, nbytes, self.arch)
        plateau = nbytes / (full * len(members)) >= 64  # see latency.collective_latency: comm->nChannels
        # the pipeline's chunk (pipeline.py): the window it allows binds medium sizes
        heads = a.heads(self.topo, members, self.caches)
        chunk = a.chunk_size(proto, op, nbytes / used, len(members), self.topo.spec.nccl, heads, nodes)
        # a channel's loop, for pipelines whose stages pass whole loops on (Algorithm.fill_loops): a chunk per
        # head, the last loop's chunks cut to what the channel has left (all_reduce.h: lastChunkSize)
        loop = min(heads * chunk, nbytes / used) if a.fill_loops(op, nodes) else 0.0
        # a pipeline whose chunks all fit in flight never waits for a slot (pipeline.window): for an algorithm that
        # does not stream, across nodes, whether a connection's bytes fit depends on the size itself, so sizes
        # that may fit (a connection carries at least 1/(4 x channels x heads) of the buffer) key apart
        flight = a.in_flight(proto, op, chunk)[0]
        fits = (nbytes if nodes > 1 and not a.streams(op) and nbytes <= 4 * flight * used * max(1, heads)
                else None)
        return used, round(share, 12), plateau, chunk, loop, threads, fits

    def collective(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> Collective:
        """The collective ``op`` over ``members`` with this algorithm and protocol, for ``nbytes``."""
        members = tuple(members)
        if op in P2P_OPS:  # AllToAll / SendRecv: NCCL's grouped sends and receives (p2p.py), no algorithm to pick
            return self._p2p(op, members, nbytes)
        used, share, plateau, chunk, loop, threads, fits = self._settings(algo, proto, op, members, nbytes)
        key = (algo, proto, op, members, used, share, plateau, chunk, loop, threads, fits)
        hit = self._cache.get(key)
        if hit is not None:
            self.shared.touch(self._cache, key)
        else:
            # the same group on other nodes, built before: move it here (an exact symmetry)
            gpn = self.topo.gpus_per_node
            first = min(members) // gpn
            local = tuple(m - first * gpn for m in members)
            # groups with equal local members and fabric keys are each other moved (an exact symmetry)
            where = self.topo.move_key(np.asarray(members, dtype=np.int64) // gpn)
            mkey = (algo, proto, op, local, where, used, share, plateau, chunk, loop, threads, fits)
            seen = self._moved.get(mkey)
            if seen is not None:
                self.shared.touch(self._moved, mkey)
                hit = moved_collective(self.topo, seen, first - min(seen.members) // gpn)
            else:
                # the same group at other places of its nodes, built there: permute it here (an exact symmetry)
                hit = self._placed(algo, proto, op, members, nbytes, (used, share, plateau, chunk, loop, threads, fits))
                if hit is None:
                    st = self.structures.of(algo, op, members, local, where, used, share)
                    hit = self.flows.finish(st.moved(self.topo, first), algo, proto, op, members, used, share, nbytes,
                                            chunk, loop, threads)
                self.shared.keep(self._moved, mkey, hit)
            self.shared.keep(self._cache, key, hit)
        return hit

    def _placed(self, algo: str, proto: str, op: str, members: tuple[int, ...], nbytes: float,
                settings: tuple) -> Collective | None:
        """The collective of ``members`` as its canonical group's (:meth:`~p2sim.topology.places.PlaceSymmetry.canonical`:
        its blocks of places renumbered in order) with the places permuted back (:func:`.structure.placed_collective`),
        or None where the node has no place symmetry, the group is its own canonical form, or the canonical group's
        settings differ from its own (then it is built where it is).  Exact: the permutation is an automorphism of
        the system, and every stage that builds a collective (channels, NICs, rings, trees, NVLS heads) chooses
        alike for groups whose places keep their order (tests/test_places.py builds both and compares them)."""
        sym = self.topo.places
        if sym is None:
            return None
        canon, perm = sym.canonical(members)
        if perm is None or self._settings(algo, proto, op, canon, nbytes) != settings:
            return None
        return placed_collective(self.topo, self.collective(algo, proto, op, canon, nbytes), perm, members)

    def _p2p(self, op: str, members: tuple[int, ...], nbytes: float) -> Collective:
        """The point-to-point collective (:func:`~.p2p.p2p_collective`), cached like the others."""
        key = (P2P_ALGO, P2P_PROTO, op, members, nbytes)
        hit = self._cache.get(key)
        if hit is None:
            hit = p2p_collective(self.topo, self.rates, op, members, nbytes, self.structures.channels(members))
            self.shared.keep(self._cache, key, hit)
        else:
            self.shared.touch(self._cache, key)
        return hit

    def _build(self, algo: str, proto: str, op: str, members: tuple[int, ...], segs: list[Segment], used: int,
               share: float, nbytes: float) -> Collective:
        """The collective built where it is, from nothing cached but ring searches."""
        chunk, loop, threads = self._settings(algo, proto, op, members, nbytes)[3:6]
        st = self.structures.build(algo, op, members, segs, used, share)
        return self.flows.finish(st, algo, proto, op, members, used, share, nbytes, chunk, loop, threads)

    def tuning(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> tuple[float, float]:
        """NCCL's own (latency, bandwidth) of a collective, as :attr:`Collective.tuning`, without keeping it.

        NCCL's choice weighs every (algorithm, protocol) it may run; only the chosen one is
        simulated, so only that one's flows are worth caching: over 16,384 GPUs each candidate's
        flows hold tens of MiB.  The structures (hops, loads) stay cached for all.
        """
        members = tuple(members)
        if op in P2P_OPS:
            return self._p2p(op, members, nbytes).tuning
        used, share, plateau, chunk, loop, threads, fits = self._settings(algo, proto, op, members, nbytes)
        hit = self._cache.get((algo, proto, op, members, used, share, plateau, chunk, loop, threads, fits))
        if hit is not None:
            return hit.tuning
        gpn = self.topo.gpus_per_node
        first = min(members) // gpn
        local = tuple(m - first * gpn for m in members)
        where = self.topo.move_key(np.asarray(members, dtype=np.int64) // gpn)
        seen = self._moved.get((algo, proto, op, local, where, used, share, plateau, chunk, loop, threads, fits))
        if seen is not None:  # the same group moved: an exact symmetry keeps its figures
            return seen.tuning
        st = self.structures.of(algo, op, members, local, where, used, share)
        tuned, rate = self.flows.tuned(st.moved(self.topo, first), algo, proto, op, members, used, share, nbytes, chunk,
                                  threads)[:2]
        return tuned.latency, rate * tuning_share(algo, op)

    def tuning_bound(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float
                     ) -> tuple[float, float]:
        """A (latency, bandwidth) no worse than :meth:`tuning`'s, without the structure: ``latency + nbytes /
        bandwidth`` is at most NCCL's estimate (:meth:`Choice.choose` prunes by it).  The latency is
        :func:`collective_latency` of :meth:`Flows.tuned <.flows.Flows.tuned>`'s arguments with the routes' latencies (sums of
        non-negative link latencies) at 0: every algorithm's latency is monotone in its per-step latencies
        (non-negative weights, a ring's ``max``), as IEEE rounding is; nodes and ``nvlink`` are the
        structure's own.  The bandwidth bounds ``algbw`` (a minimum of link, flow and collective caps) by two
        of its terms: LL's collective cap over the bus factor (every flow's coefficient; shares sum to 1), and
        the flows' channel caps ``g_i cap / (bus k_i / K)``, whose least is at most their mean weighted by
        ``k_i / K``: ``G cap / bus``, ``G`` the graph channels in all where the algorithm knows them
        (:meth:`~p2sim.collectives.algorithms.base.Algorithm.graph_channels`, ``bus_factor``)."""
        members = tuple(members)
        a = algorithm(algo)
        used = self._settings(algo, proto, op, members, nbytes)[0]
        segs = segments(self.topo, members)
        nodes, nccl = len(segs), self.topo.spec.nccl
        intra_hw = "nvlink" if self.structures.nvlink_only(segs, members) else "pci"
        told = reported_latency_us(nccl.transport, nccl.net_latency) * 1e-6 if nodes > 1 else 0.0
        lat = collective_latency(algo, proto, op, len(members), nodes, intra_hw, 0.0, 0.0 + told, nbytes,
                                 self.structures.channels(members), self.arch)
        bus = a.bus_factor(op, len(members))
        rate = math.inf
        coll_cap = collective_cap_gbps(proto, nodes, self.arch) * GB
        if math.isfinite(coll_cap) and bus > 0:
            rate = min(rate, coll_cap / bus)
        graph = a.graph_channels(used)
        ch_cap = a.tuning_channel_cap(proto, nodes, self.arch, self.flows.channel_rate(algo), self.topo.spec.nccl) * GB
        if graph is not None and math.isfinite(ch_cap) and bus > 0:
            rate = min(rate, graph * ch_cap / bus)
        return lat, rate * tuning_share(algo, op)
