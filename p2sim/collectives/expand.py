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

import math
from collections.abc import Sequence

from ..errors import InputError
from ..topology import Topology
from ..topology.settings import ModelRates
from .channels import Segment, channel_count, segments
from .latency import collective_latency
from .nccl_tables import ALGOS, NVLS_CHANNELS, PROTOS
from .nvls import SWITCH, nvls_hops, nvls_switch, nvls_tree_hops
from .pattern import Collective, Flow, Hop, make_flow
from .protocols import channel_cap_gbps, collective_cap_gbps, link_share
from .ring import ring_factor, ring_hops
from .ringsearch import best_rings, ring_throughput
from .tree import tree_hops

__all__ = ["Expander", "ALGORITHMS", "ALGO_CHOICES", "check_algo", "net_rate_gbps", "NET_RATE_DEFAULTS"]

ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree")
ALGO_CHOICES = ("auto",) + ALGORITHMS
GB = 1e9

# Per-channel network rate by transport, GB/s.  InfiniBand/RoCE and EFA: one connection
# (queue pair / SRD endpoint) per channel reaches the NIC's line rate, so only links bind.
# TCP sockets: NCCL's socket transport moves a channel through a few helper threads and
# sockets (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD), bounded by CPU copies; the
# figure is the calibration fit on P2's measurements (GCP, TCP; see the README).
NET_RATE_DEFAULTS = {"ib": math.inf, "roce": math.inf, "efa": math.inf, "tcpx": math.inf, "socket": math.inf}

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


def _max_sent_to_net(hops: Sequence[Hop], topo: Topology) -> float:
    """Most bytes any node sends into the network per byte of the flow's share."""
    per: dict[int, float] = {}
    for h in hops:
        if h.inter_node:
            n = topo.node_of(h.src)
            per[n] = per.get(n, 0.0) + h.coef * h.overhead
    return max(per.values(), default=0.0)


class Expander:
    """Builds collectives on one topology; every result is cached."""

    def __init__(self, topo: Topology, rates: ModelRates | None = None) -> None:
        self.topo = topo
        self.rates = topo.spec.rates if rates is None else rates
        self.arch = topo.spec.nccl.arch
        self._rings: dict[tuple[int, ...], tuple] = {}
        self._cache: dict[tuple, Collective] = {}
        self._choice: dict[tuple, tuple[str, str]] = {}

    # -- structure -----------------------------------------------------------------
    def rings(self, local: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], float], ...]:
        hit = self._rings.get(local)
        if hit is None:
            hit = best_rings(self.topo, local)
            self._rings[local] = hit
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
        return all(self.topo.intra_type(a, b) == "NVL" for s in segs for a in s.local(self.topo)
                   for b in s.local(self.topo) if a != b)

    def channels(self, members: Sequence[int]) -> int:
        """Ring channels NCCL would build for this group."""
        segs = segments(self.topo, members)
        mix = self._ring_mix(segs)
        t = self._mix_throughput(mix[segs[0].node]) if len(segs) == 1 else math.inf
        return channel_count(self.topo, segs, t)

    def available(self, op: str, members: Sequence[int]) -> list[tuple[str, str]]:
        """The (algorithm, protocol) pairs NCCL may use for this collective, in NCCL's order."""
        segs = segments(self.topo, members)
        nvls = self._nvls_switches(segs)
        out = []
        for a in ALGOS:
            if a == "tree" and op != "AllReduce":
                continue
            if a == "nvls" and (nvls is None or len(segs) > 1 or op not in ("AllReduce", "ReduceScatter", "AllGather")):
                continue
            if a == "nvls_tree" and (nvls is None or len(segs) == 1 or op != "AllReduce"):
                continue
            for p in PROTOS:
                if a in ("nvls", "nvls_tree") and p != "Simple":
                    continue
                if p == "LL128" and not self._nvlink_only(segs):
                    continue  # NCCL enables LL128 by default only over NVLink
                out.append((a, p))
        return out

    def _nvls_switches(self, segs: Sequence[Segment]) -> list[str] | None:
        if self.arch not in ("hopper", "blackwell") or not self.topo.spec.nccl.nvls:
            return None
        sw = [nvls_switch(self.topo, s) for s in segs]
        return None if any(x is None for x in sw) or any(len(s.members) < 2 for s in segs) else sw

    # -- expansion -----------------------------------------------------------------
    def collective(self, algo: str, proto: str, op: str, members: Sequence[int], nbytes: float) -> Collective:
        """The collective ``op`` over ``members`` with this algorithm and protocol, for ``nbytes``."""
        members = tuple(members)
        segs = segments(self.topo, members)
        full = self.channels(members)
        if algo in ("nvls", "nvls_tree"):
            used = NVLS_CHANNELS[self.arch]
        else:
            # NCCL drops channels while each would get less than threads x threshold bytes
            per = _THREADS[proto] * _THRESHOLD[proto] * (len(members) if proto == "LL" and algo == "ring" else 1)
            used = max(1, min(full, int(nbytes // per)))
        share = link_share(algo, proto, op, len(segs), nbytes, self.arch)
        key = (algo, proto, op, members, used, round(share, 12))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._build(algo, proto, op, members, segs, used, share, nbytes)
            self._cache[key] = hit
        return hit

    def _build(self, algo: str, proto: str, op: str, members: tuple[int, ...], segs: list[Segment], used: int,
               share: float, nbytes: float) -> Collective:
        topo, n = self.topo, len(members)
        nodes = len(segs)
        mix = self._ring_mix(segs)
        free = {s.node: len(mix[s.node]) == 1 and _free(topo, s) for s in segs}
        if algo == "ring":
            bus = ring_factor(op, n)
            pairs = max(1, used // 2)
            groups = ring_hops(topo, op, members, segs, mix, free, pairs)
            per_flow = [used] if nodes == 1 else [2] * len(groups)
            graph = [max(1, c // 2) for c in per_flow]
        elif algo == "tree":
            bus = 2.0  # NCCL: a tree's busBw is twice its algorithm bandwidth
            graph_channels = max(1, used // 2)
            groups = tree_hops(topo, segs, mix, graph_channels)
            per_flow = [2] * len(groups)
            graph = [1] * len(groups)
        elif algo == "nvls":
            bus = ring_factor(op, n)
            eff = share
            share = 1.0
            groups = [nvls_hops(topo, op, segs[0], self._nvls_switches(segs)[0], eff)]
            per_flow, graph = [used], [used]
        else:  # nvls_tree
            bus = ring_factor(op, n)
            eff = share
            share = 1.0
            groups = nvls_tree_hops(topo, segs, self._nvls_switches(segs), eff)
            per_flow = [max(1, used // len(groups))] * len(groups)
            graph = [1] * len(groups)
        groups, per_flow, graph = _merge(groups, per_flow, graph)
        net = net_rate_gbps(topo, algo, self.rates) * GB
        ch_cap = channel_cap_gbps(algo, proto, nodes, self.arch, self._channel_rate(algo)) * GB
        flows = []
        total = sum(per_flow)
        for hops, k, g in zip(groups, per_flow, graph):
            caps = []
            out_net = _max_sent_to_net(hops, topo)
            if math.isfinite(net) and out_net > 0:  # each channel's network connection
                caps.append((k * net, out_net / share))
            if math.isfinite(ch_cap):
                caps.append((g * ch_cap, bus))
            flows.append(make_flow(hops, k / total, k, 1.0 / share, tuple(caps)))
        coll_cap = collective_cap_gbps(proto, nodes, self.arch) * GB
        shared = ((coll_cap, tuple(bus for _ in flows)),) if math.isfinite(coll_cap) else ()
        intra_hw = "nvlink" if self._nvlink_only(segs) else "pci"
        intra, inter = _route_latencies(topo, flows)
        lat = collective_latency(algo, proto, op, n, nodes, intra_hw, intra, inter, nbytes, used, self.arch)
        return Collective(algo, proto, op, members, nodes, used, tuple(flows), lat, bus, shared)

    def _channel_rate(self, algo: str) -> float | None:
        return self.rates.tree_channel_rate if algo in ("tree", "nvls_tree") else self.rates.ring_channel_rate

    # -- NCCL's automatic choice -----------------------------------------------------
    def analytic_seconds(self, coll: Collective, nbytes: float) -> float:
        """Uncontended time: latency plus bytes over the collective's algorithm bandwidth."""
        return coll.latency + nbytes / coll.algbw(self.topo.capacity)

    def choose(self, op: str, members: Sequence[int], nbytes: float, algo: str = "auto",
               proto: str = "auto") -> tuple[str, str]:
        """The (algorithm, protocol) NCCL would run (``algo``/``proto`` force one, like NCCL_ALGO/NCCL_PROTO)."""
        key = (op, tuple(members), nbytes, algo, proto)
        hit = self._choice.get(key)
        if hit is not None:
            return hit
        avail = self.available(op, members)
        cands = [(a, p) for a, p in avail if (algo == "auto" or a == algo) and (proto == "auto" or p == proto)]
        if not cands:  # the forced algorithm cannot run this collective here: NCCL runs it as a ring
            cands = [(a, p) for a, p in avail if a == "ring" and (proto == "auto" or p == proto)]
        if not cands:
            cands = [("ring", "Simple")]
        best = min(cands, key=lambda ap: self.analytic_seconds(self.collective(*ap, op, members, nbytes), nbytes))
        self._choice[key] = best
        return best


def _merge(groups: list[list[Hop]], per_flow: list[int], graph: list[int]) -> tuple[list, list, list]:
    """Channels whose hops are identical become one flow (they would progress in lockstep)."""
    keys: dict[tuple, int] = {}
    out_g: list[list[Hop]] = []
    out_k: list[int] = []
    out_c: list[int] = []
    for hops, k, g in zip(groups, per_flow, graph):
        key = tuple((h.src, h.dst, h.coef, h.edges, h.overhead) for h in hops)
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

    return _one_switch(topo, seg.local(topo)) if len(seg.members) > 2 else True


def _route_latencies(topo: Topology, flows: Sequence[Flow]) -> tuple[float, float]:
    """The slowest intra-node and inter-node route of the collective (seconds, from the file's links)."""
    intra = inter = 0.0
    for f in flows:
        for h in f.hops:
            if SWITCH in (h.src, h.dst):
                continue
            lat = float(topo.latency[list(h.edges)].sum())
            if h.inter_node:
                inter = max(inter, lat)
            else:
                intra = max(intra, lat)
    return intra, inter
