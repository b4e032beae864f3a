"""From (algorithm, protocol, collective, group) to a :class:`~p2sim.collectives.pattern.Collective`.

:class:`Expander` builds a collective's channels and flows for one topology (cached),
attaches the protocol's link share, NCCL's per-channel caps and the network's
per-channel rate, and computes its start-up latency.  :meth:`Expander.choose` is NCCL's
automatic choice (:mod:`.choice`): among the algorithms and protocols this group can use, the
one whose time by NCCL's own tuning model is least.  The parts live beside it: group shapes
(:mod:`.shapes`), the structures of each algorithm's channels (:mod:`.structure`), the choice.
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
from dataclasses import replace

import numpy as np

from ..topology import Topology
from ..topology.settings import ModelRates
from ..util.errors import InputError
from .channels import Segment, channel_count, scheduled_channels, segments, threads_used
from .algorithms import algorithm
from .choice import ALGO_CHOICES, ALGORITHMS, Choice, check_algo
from .latency import collective_latency, step_latencies
from .transports import control_wait_us, reported_latency_us, stream_task_bytes
from .binding import CAP_CHANNEL, CAP_NET, CAP_STEP, CAP_WINDOW
from .pattern import Collective, Flow
from .p2p import P2P_ALGO, P2P_OPS, P2P_PROTO, p2p_collective
from .nccl_tables import MAX_THREADS
from .pipeline import in_flight, step_cap, window
from .protocols import collective_cap_gbps, tuning_share
from .caches import CollectiveCaches
from .shapes import ShapeMemo
from .structure import Structure, Structures, moved_collective

__all__ = ["Expander", "ALGORITHMS", "ALGO_CHOICES", "check_algo", "check_forced", "net_rate_gbps",
           "NET_RATE_DEFAULTS"]  # re-exported

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

def net_rate_gbps(topo: Topology, algo: str, rates: ModelRates) -> float:
    """The per-channel network rate of ``algo`` (GB/s): calibrated or file value, else the transport's."""
    v = rates.tree_net_rate if algorithm(algo).tree_rates else rates.ring_net_rate
    return v if v is not None else NET_RATE_DEFAULTS[topo.spec.nccl.transport]


def check_forced(topo: Topology, algo: str, proto: str = "auto", op: str | None = None,
                 members: Sequence[int] | None = None) -> None:
    """Refuse (:class:`InputError`, before any simulation) a forced algorithm or protocol that NCCL could not run
    here: on this system at all, or, given, for collective ``op`` (not one it has) over ``members``."""
    why = Expander(topo).why_not(algo, op, members, proto)
    if why is not None:
        what = f"on {topo.spec.name}" if op is None else (
            f"{op}" + (f" over {len(set(members))} GPUs" if members is not None else "") + f" on {topo.spec.name}")
        raise InputError(f"algo: {algo} cannot run {what}: {why}")


# bytes of arrays the built collectives and structures of one topology may hold before the least
# recently used are dropped (a design figure, not a model one: unbounded, a 16,384-GPU rank on the
# 3-tier SuperPOD reached 5 GiB; at 128 MiB it stays near 0.5 GiB but rebuilds enough to run over
# twice as long, while 2,048-node sweeps on h100 and p5 stay at 265-266 MiB, 366 MiB at 384 MiB;
# dropping only costs rebuilding, never a result)
CACHE_BYTES = 128 * 2**20


def _arrays_nbytes(obj: object) -> int:
    """Bytes of the numpy arrays a collective's flows or a structure's tables hold (one level deep)."""
    raw = getattr(obj, "raw", None) or ((),)
    parts = (list(getattr(obj, "flows", ())) + list(getattr(obj, "tables", ())) + list(getattr(obj, "loads", ()))
             + [t for t in raw[0] if t not in getattr(obj, "tables", ())])
    total = 0
    for p in parts:
        values = p if isinstance(p, tuple) else vars(p).values() if hasattr(p, "__dict__") else ()
        total += sum(v.nbytes for v in values if isinstance(v, np.ndarray))
    return total


class Expander(ShapeMemo, Structures, Choice):
    """Builds collectives on one topology; every result is cached in ``caches``.

    Expanders given one :class:`~p2sim.collectives.caches.CollectiveCaches` share its ring
    searches and, with the same rates, every expansion; one given none makes its own.  The
    caches' :meth:`~p2sim.collectives.caches.CollectiveCaches.forget_order` drops what depends
    on the order groups came in.
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
        shared = self.caches.expansions(self.rates)
        self._cache = shared.cache
        self._choice = shared.choice
        self._by_shape = shared.by_shape
        self._shapes = shared.shapes
        self._moved = shared.moved
        self._structures = shared.structures
        self._settings_of = shared.settings
        self._chosen = shared.chosen
        self._held = shared.held
        self._held_bytes = shared.held_bytes

    # -- structure -----------------------------------------------------------------
    def channels(self, members: Sequence[int]) -> int:
        """Ring channels NCCL would build for this group."""
        return self._memo("channels", members, (), lambda: self._channels(members))

    def _channels(self, members: Sequence[int]) -> int:
        segs = segments(self.topo, members)
        mix = self._ring_mix(segs)
        t = self._mix_throughput(mix[segs[0].node]) if len(segs) == 1 else math.inf
        return channel_count(self.topo, segs, t)

    # -- expansion -----------------------------------------------------------------
    def _settings(self, algo: str, proto: str, op: str, members: tuple[int, ...], nbytes: float) -> tuple:
        """What of ``nbytes`` shapes a collective: channels used, link share, NCCL's ring plateau (per group; per
        size, nodes and channels where that is all they read, Algorithm.settings_by_count: a GB200 rack's 72 places)."""
        key = (algo, proto, op, members, nbytes)
        hit = self._settings_of.get(key)
        if hit is None:
            a, full = algorithm(algo), self.channels(members)
            nodes = len({m // self.topo.gpus_per_node for m in members})
            alike = ("by count", algo, proto, op, len(members), nodes, full, nbytes) if a.settings_by_count() else key
            hit = self._settings_of.get(alike)
            if hit is None:
                hit = self._settings_of[alike] = self._compute_settings(a, proto, op, members, full, nodes, nbytes)
            self._settings_of[key] = hit
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
            self._touch(self._cache, key)
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
                self._touch(self._moved, mkey)
                hit = moved_collective(self.topo, seen, first - min(seen.members) // gpn)
            else:
                st = self._structure_of(algo, op, members, local, where, used, share)
                hit = self._finish(st.moved(self.topo, first), algo, proto, op, members, used, share, nbytes, chunk,
                                   loop, threads)
                self._keep(self._moved, mkey, hit)
            self._keep(self._cache, key, hit)
        return hit

    def _p2p(self, op: str, members: tuple[int, ...], nbytes: float) -> Collective:
        """The point-to-point collective (:func:`~.p2p.p2p_collective`), cached like the others."""
        key = (P2P_ALGO, P2P_PROTO, op, members, nbytes)
        hit = self._cache.get(key)
        if hit is None:
            hit = p2p_collective(self.topo, self.rates, op, members, nbytes, self.channels(members))
            self._keep(self._cache, key, hit)
        else:
            self._touch(self._cache, key)
        return hit

    def _keep(self, cache: dict, key: tuple, built: object) -> None:
        """Cache ``built`` and count what it holds; past :data:`CACHE_BYTES`, the least recently used
        collectives and structures are dropped (NCCL's per-shape decisions stay: they make results
        independent of what was built).  The arrays count, and the group's members as Python ints in
        the entry's key (about 40 bytes each)."""
        cache[key] = built
        size = _arrays_nbytes(built) + 40 * len(getattr(built, "members", ()) or ())
        ledger = self._held
        ledger[(id(cache), key)] = (cache, size)
        self._held_bytes[0] += size
        while self._held_bytes[0] > CACHE_BYTES and len(ledger) > 1:
            (_, old), (owner, old_size) = next(iter(ledger.items()))
            del ledger[(id(owner), old)]
            owner.pop(old, None)
            self._held_bytes[0] -= old_size

    def _touch(self, cache: dict, key: tuple) -> None:
        """A cache hit: its entry becomes the most recently used."""
        entry = self._held.pop((id(cache), key), None)
        if entry is not None:
            self._held[(id(cache), key)] = entry

    def _build(self, algo: str, proto: str, op: str, members: tuple[int, ...], segs: list[Segment], used: int,
               share: float, nbytes: float) -> Collective:
        """The collective built where it is, from nothing cached but ring searches."""
        chunk, loop, threads = self._settings(algo, proto, op, members, nbytes)[3:6]
        return self._finish(self._structure(algo, op, members, segs, used, share), algo, proto, op, members, used,
                            share, nbytes, chunk, loop, threads)

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
        st = self._structure_of(algo, op, members, local, where, used, share)
        tuned, rate = self._tuned(st.moved(self.topo, first), algo, proto, op, members, used, share, nbytes, chunk,
                                  threads)[:2]
        return tuned.latency, rate * tuning_share(algo, op)

    def tuning_bound(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float
                     ) -> tuple[float, float]:
        """A (latency, bandwidth) no worse than :meth:`tuning`'s, without the structure: ``latency + nbytes /
        bandwidth`` is at most NCCL's estimate (:meth:`Choice.choose` prunes by it).  The latency is
        :func:`collective_latency` of :meth:`_tuned`'s arguments with the routes' latencies (sums of
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
        intra_hw = "nvlink" if self._nvlink_only(segs, members) else "pci"
        told = reported_latency_us(nccl.transport, nccl.net_latency) * 1e-6 if nodes > 1 else 0.0
        lat = collective_latency(algo, proto, op, len(members), nodes, intra_hw, 0.0, 0.0 + told, nbytes,
                                 self.channels(members), self.arch)
        bus = a.bus_factor(op, len(members))
        rate = math.inf
        coll_cap = collective_cap_gbps(proto, nodes, self.arch) * GB
        if math.isfinite(coll_cap) and bus > 0:
            rate = min(rate, coll_cap / bus)
        graph = a.graph_channels(used)
        ch_cap = a.tuning_channel_cap(proto, nodes, self.arch, self._channel_rate(algo), self.topo.spec.nccl) * GB
        if graph is not None and math.isfinite(ch_cap) and bus > 0:
            rate = min(rate, graph * ch_cap / bus)
        return lat, rate * tuning_share(algo, op)

    def _structure_of(self, algo: str, op: str, members: tuple[int, ...], local: tuple[int, ...], where: object,
                      used: int, share: float) -> Structure:
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
                self._touch(self._structures, k)
                if k != skey:  # moved here once (the re-hash), for this group's protocols and algorithms
                    st = st.moved(self.topo, min(members) // self.topo.gpus_per_node)
                    self._keep(self._structures, skey, st)
                return st
        # the hops do not depend on the protocol: built once for all three
        st = self._structure(algo, op, members, segments(self.topo, members), used, share)
        self._keep(self._structures, fkey if self.movable(st) else skey, st)
        return st

    def _tuned(self, st: Structure, algo: str, proto: str, op: str, members: tuple[int, ...], used: int,
               share: float, nbytes: float, chunk: int, threads: int = 0) -> tuple[Collective, float, tuple, tuple, tuple]:
        """The collective as NCCL's model sees it (no pipeline window, no launch cost), its algorithm
        bandwidth, and what :meth:`_finish` adds to it (per-step latencies, transport, latency args)."""
        topo, nodes, a = self.topo, st.nodes, algorithm(algo)
        if a.share_in_hops:
            share = 1.0  # NVLS's efficiency is in its hops' overhead
        net = min(net_rate_gbps(topo, algo, self.rates), self._stream_cap(algo, proto, op, chunk)) * GB
        ch_cap = a.tuning_channel_cap(proto, nodes, self.arch, self._channel_rate(algo), topo.spec.nccl) * GB
        cta = self._cta_cap(algo, proto, members, used, threads, share) * GB
        nccl = topo.spec.nccl
        transport = (nccl.transport, self.rates.step_latency if self.rates.step_latency is not None
                     else nccl.step_latency)
        intra_hw = "nvlink" if st.nvlink else "pci"
        # the per-step turn-around of the pipeline's window: the transport's step without the route's own
        # latency, which the window counts once each way (pipeline.py)
        steps = step_latencies(algo, proto, len(members), nodes, intra_hw, st.intra, 0.0, *transport, self.arch)
        flows = []
        total = sum(st.per_flow)
        for table, (edges, coef), out_net, k, g in zip(st.tables, st.loads, st.out_net, st.per_flow, st.graph):
            caps, kinds = [], []
            if math.isfinite(net) and out_net > 0:  # each channel's network connection
                caps.append((k * net, out_net / share))
                kinds.append(CAP_NET)
            if math.isfinite(ch_cap):
                caps.append((g * ch_cap, st.bus))
                kinds.append(CAP_CHANNEL)
            flows.append(Flow(k / total, k, edges, coef * (1.0 / share), table, tuple(caps), tuple(kinds)))
        coll_cap = collective_cap_gbps(proto, nodes, self.arch) * GB
        shared = ((coll_cap, tuple(st.bus for _ in flows)),) if math.isfinite(coll_cap) else ()
        # NCCL's ring plateau counts the communicator's channels (comm->nChannels, ncclTopoGetAlgoTime), not those used
        args = (algo, proto, op, len(members), nodes, intra_hw, st.intra, st.inter, nbytes, self.channels(members),
                self.arch)
        # NCCL chooses by its own model: its per-step figures plus the latency the network plugin reports
        # (graph->latencyInter, tuning.cc; transports.reported_latency_us), no launch cost, no pipeline window
        told = reported_latency_us(nccl.transport, nccl.net_latency) * 1e-6 if nodes > 1 else 0.0
        nccl_args = args if told == 0.0 else args[:7] + (st.inter + told,) + args[8:]
        tuned = Collective(algo, proto, op, members, nodes, used, tuple(flows), collective_latency(*nccl_args), st.bus,
                           shared)
        rate = tuned.algbw(topo.capacity)  # NCCL's model has no CTA cap, nor the newest per-channel figure (t)
        caps = (([lambda f, g: f.channels * cta] if math.isfinite(cta) else [])
                + ([lambda f, g: g * t] if (t := a.channel_cap(proto, nodes, self.arch, self._channel_rate(algo)) * GB) < ch_cap else []))
        tuned = replace(tuned, flows=tuple(replace(f, caps=f.caps + tuple((c(f, g), st.bus) for c in caps),  # time only
                        cap_kinds=f.cap_kinds + (CAP_CHANNEL,) * len(caps)) for f, g in zip(tuned.flows, st.graph)))
        return tuned, rate, steps, transport, args

    def _finish(self, st: Structure, algo: str, proto: str, op: str, members: tuple[int, ...], used: int,
                share: float, nbytes: float, chunk: int, loop: float = 0.0, threads: int = 0) -> Collective:
        """The collective of a structure with this protocol: link shares, caps and latency (NCCL's, plus the
        pipeline's fill where its stages pass whole loops of ``loop`` bytes per channel on: :meth:`_fill`)."""
        tuned, rate, steps, transport, args = self._tuned(st, algo, proto, op, members, used, share, nbytes, chunk,
                                                          threads)
        flows = self._windowed(list(tuned.flows), st, algo, proto, op, chunk, steps, rate, nbytes, used)
        lat = (collective_latency(*args, *transport, self.rates.launch or 0.0)
               + self._fill(algo, op, st.nodes, used, loop, rate)
               + self._forwarded(algo, proto, op, members, st.nodes, used, chunk, rate)
               + self._control_wait(algo, proto, members, st.nodes, chunk, transport[1]))
        return replace(tuned, flows=tuple(flows), latency=lat,
                       tuning=(tuned.latency, rate * tuning_share(algo, op)))

    @staticmethod
    def _fill(algo: str, op: str, nodes: int, used: int, loop: float, rate: float) -> float:
        """Seconds the pipeline takes to fill and drain beyond its bytes at ``rate`` (the collective's algorithm
        bandwidth, bytes/s): :meth:`~p2sim.collectives.algorithms.base.Algorithm.fill_loops` loops of ``loop``
        bytes on each of ``used`` channels.  NCCL's tuning model leaves it out (its NVLS latency is one step),
        so it shapes the prediction, not NCCL's choice."""
        loops = algorithm(algo).fill_loops(op, nodes)
        if not loops or loop <= 0 or not (0 < rate < math.inf):
            return 0.0
        return loops * used * loop / rate

    def _forwarded(self, algo: str, proto: str, op: str, members: tuple[int, ...], nodes: int, used: int,
                   chunk: int, rate: float) -> float:
        """Seconds the last chunk waits behind the hops that store and forward whole chunks
        (:meth:`~p2sim.collectives.algorithms.base.Algorithm.forwarded_hops`) beyond its bytes at ``rate`` (the
        collective's algorithm bandwidth, bytes/s), which already count one pass through the slowest hop: a
        network hop takes the chunk at that pace (``used`` channels each at ``rate / used``), a hop inside a node
        at the node's ring rate shared by the ``used`` channels (every channel's chunk crosses the same GPUs'
        links at once), never slower.  NCCL's model counts each hop's latency only, so this shapes the
        prediction, not NCCL's choice."""
        intra, net = algorithm(algo).forwarded_hops(proto, op, len(members), nodes)
        if not (intra or net) or not (0 < rate < math.inf):
            return 0.0
        slow = used * chunk / rate
        node = self._memo("node_rate", members, (), lambda: self._node_ring_rate(members)) * GB
        hop = min(slow, used * chunk / node) if node > 0 else slow
        return max(0.0, net * slow + intra * hop - slow)

    def _control_wait(self, algo: str, proto: str, members: tuple[int, ...], nodes: int, chunk: int,
                      step_us: float | None) -> float:
        """Seconds the collective's first network step waits for the receiver's control message
        (:func:`~p2sim.collectives.transports.control_wait_us`: aws-ofi-nccl's RDMA protocol above its eager
        size); NCCL's model leaves it out (the plugin's reported latency stands for every step alike)."""
        if nodes == 1:
            return 0.0
        nccl = self.topo.spec.nccl
        net_algo = algorithm(algo).network_step(len(members), nodes)
        return control_wait_us(nccl.transport, nccl.ofi_protocol, net_algo, proto, chunk, step_us) * 1e-6

    def _windowed(self, flows: list[Flow], st: Structure, algo: str, proto: str, op: str, chunk: int,
                  steps: tuple[float, float], rate: float, nbytes: float, used: int) -> list[Flow]:
        """The flows with the pipeline's limits as one more cap per connection (pipeline.py): the window of
        chunks over a slot's round trip (the transport's turn-around ``steps[1]`` at each end, the slowest
        inter-node route's latency once each way), for groups that cross nodes (inside a node a step takes
        a few microseconds and the window binds only where the latency term already rules), and a
        calibrated per-step cost (``[model] step_cost``), per channel, for every group."""
        cost = (self.rates.step_cost or 0.0) * 1e-6
        if st.nodes == 1 and cost <= 0:
            return flows
        a = algorithm(algo)
        per_hop = st.bus if a.per_hop_bus else 1.0  # a ring channel: its share x bus factor per hop
        out = []
        for f in flows:
            beta = rate * f.share * per_hop / f.channels  # a channel's bytes per second on its links
            w, coef, kind = step_cap(algo, proto, op, chunk, cost, beta), per_hop / f.channels, CAP_STEP
            if st.nodes > 1:
                conns = a.connections(f.channels, used)  # the network connections carrying the flow
                beta_net = rate * f.share * per_hop / conns
                win = window(algo, proto, op, chunk, steps[1], beta_net, nbytes * f.share / conns, st.inter)
                # the tighter of the two caps on the flow (a cap over its connections against one per channel)
                if (win < w) if conns == f.channels else (win * conns < w * f.channels):
                    w, coef, kind = win, per_hop / conns, CAP_WINDOW
            out.append(replace(f, caps=f.caps + ((w, coef),), cap_kinds=f.cap_kinds + (kind,))
                       if math.isfinite(w) else f)
        return out

    def _stream_cap(self, algo: str, proto: str, op: str, chunk: int) -> float:
        """A channel's network rate over TCP (GB/s): its streams times ``[model] stream_rate``, one
        stream per task of a step (transports.stream_task_bytes: NCCL's socket tasks of at least 64 KiB,
        the TCPX plugin's chunks of NCCL_DYNAMIC_CHUNK_SIZE)."""
        r = self.rates.stream_rate
        nccl = self.topo.spec.nccl
        if r is None or nccl.transport not in TCP_TRANSPORTS:
            return math.inf
        step = in_flight(algo, proto, op, chunk)[1]
        task = stream_task_bytes(nccl.transport, nccl.dynamic_chunksize)
        return r * min(nccl.socket_streams, max(1, math.ceil(step / task)))

    def _cta_cap(self, algo: str, proto: str, members: tuple[int, ...], used: int, threads: int,
                 share: float) -> float:
        """Bus bandwidth (GB/s) one channel's CTA moves when NCCL runs fewer channels or threads than the group's
        full count (``inf`` otherwise, or where the algorithm or a ``*_channel_rate`` caps its channels): its
        share of the node's ring rate (NCCL sizes its channels to fill the NVLinks, two CTAs per NVLink:
        channels.py), times its protocol's data share, times its threads over the protocol's most (a CTA's
        copies scale with its warps).  At the full count the links bind, as before."""
        full = self.channels(members)
        if (proto not in algorithm(algo).cta_protos or self._channel_rate(algo) is not None
                or (used >= full and threads >= MAX_THREADS[proto])):
            return math.inf
        per = self._memo("cta", members, (), lambda: self._node_channel_rate(members))
        return per * share * threads / MAX_THREADS[proto]

    def _node_ring_rate(self, members: Sequence[int]) -> float:
        """GB/s a ring through a node of this group carries on its hops, all its channels together."""
        segs = segments(self.topo, members)
        return self._mix_throughput(self._ring_mix(segs)[segs[0].node])

    def _node_channel_rate(self, members: Sequence[int]) -> float:
        """GB/s one of NCCL's channels in a node of this group carries on its ring hop: the node's ring rate
        over the channels NCCL fits there (channel_count, search.cc and connect.cc)."""
        segs = segments(self.topo, members)
        t = self._mix_throughput(self._ring_mix(segs)[segs[0].node])
        return t / channel_count(self.topo, segs[:1], t) if math.isfinite(t) else math.inf

    def _channel_rate(self, algo: str) -> float | None:
        return self.rates.tree_channel_rate if algorithm(algo).tree_rates else self.rates.ring_channel_rate
