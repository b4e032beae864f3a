"""The flows stage: a collective's structure with its protocol -- link shares, caps, pipeline and latency.

:class:`Flows` turns a :class:`~p2sim.collectives.structure.Structure` (the hops of an algorithm's channels)
into a :class:`~p2sim.collectives.pattern.Collective` for one protocol and size: the protocol's link share,
NCCL's per-channel and per-collective caps, the network's per-channel rate (:func:`net_rate_gbps`), the
pipeline's window (:mod:`.pipeline`) and the start-up latency (NCCL's, plus the pipeline fill NCCL's model
leaves out).  The last stage :class:`~p2sim.collectives.expand.Expander` composes; it keeps nothing of its own
(the expander keeps the collectives it finishes) and reads the node rates once per group shape (:class:`.shapes.Shapes`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..topology import Topology
from ..topology.settings import ModelRates
from .algorithms import algorithm
from .binding import CAP_CHANNEL, CAP_NET, CAP_RAIL, CAP_STEP, CAP_WINDOW
from .channels import channel_count, nic_gbps, segments
from .latency import collective_latency, step_latencies
from .nccl_tables import MAX_THREADS
from .pattern import Collective, Flow
from .pipeline import in_flight, step_cap, window
from .protocols import collective_cap_gbps, tuning_share
from .rails import message_rate, rail_rate
from .shapes import Shapes
from .structure import Structure, Structures
from .transports import control_wait_us, reported_latency_us, stream_task_bytes, wire_bytes

__all__ = ["Flows", "net_rate_gbps", "NET_RATE_DEFAULTS", "TCP_TRANSPORTS"]

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
    v = algorithm(algo).net_rate(rates)
    return v if v is not None else NET_RATE_DEFAULTS[topo.spec.nccl.transport]


class Flows:
    """The flows stage of an :class:`~p2sim.collectives.expand.Expander` (see the module's text)."""

    def __init__(self, topo: Topology, rates: ModelRates, shapes: Shapes, structures: Structures) -> None:
        self.topo = topo
        self.rates = rates
        self.arch = topo.spec.nccl.arch
        self.shapes = shapes
        self.structures = structures
        nccl = topo.spec.nccl
        # the network device's rails and the plugin's least stripe ([nccl] ofi_rails, ofi_min_stripe_size); one
        # rail where the plugin does not stripe (its SENDRECV protocol, or another transport)
        self._rails = (nccl.ofi_rails, nccl.ofi_min_stripe_size) if nccl.ofi_protocol == "RDMA" else (1, 1)
        self._rail_device: float | None = None  # the network device's rate, read once where its rails count

    def tuned(self, st: Structure, algo: str, proto: str, op: str, members: tuple[int, ...], used: int,
              share: float, nbytes: float, chunk: int, threads: int = 0) -> tuple[Collective, float, tuple, tuple, tuple]:
        """The collective as NCCL's model sees it (no pipeline window, no launch cost), its algorithm
        bandwidth, and what :meth:`finish` adds to it (per-step latencies, transport, latency args)."""
        topo, nodes, a = self.topo, st.nodes, algorithm(algo)
        if a.share_in_hops:
            share = 1.0  # NVLS's efficiency is in its hops' overhead
        net = min(net_rate_gbps(topo, algo, self.rates), self.stream_cap(algo, proto, op, chunk)) * GB
        ch_cap = a.tuning_channel_cap(proto, nodes, self.arch, self.channel_rate(algo), topo.spec.nccl) * GB
        cta = self.cta_cap(algo, proto, members, used, threads, share) * GB
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
        args = (algo, proto, op, len(members), nodes, intra_hw, st.intra, st.inter, nbytes, self.structures.channels(members),
                self.arch)
        # NCCL chooses by its own model: its per-step figures plus the latency the network plugin reports
        # (graph->latencyInter, tuning.cc; transports.reported_latency_us), no launch cost, no pipeline window
        told = reported_latency_us(nccl.transport, nccl.net_latency) * 1e-6 if nodes > 1 else 0.0
        nccl_args = args if told == 0.0 else args[:7] + (st.inter + told,) + args[8:]
        tuned = Collective(algo, proto, op, members, nodes, used, tuple(flows), collective_latency(*nccl_args), st.bus,
                           shared)
        rate = tuned.algbw(topo.capacity)  # NCCL's model has no CTA cap, nor the newest per-channel figure (t)
        caps = (([lambda f, g: f.channels * cta] if math.isfinite(cta) else [])
                + ([lambda f, g: g * t] if (t := a.channel_cap(proto, nodes, self.arch, self.channel_rate(algo)) * GB) < ch_cap else []))
        tuned = replace(tuned, flows=tuple(replace(f, caps=f.caps + tuple((c(f, g), st.bus) for c in caps),  # time only
                        cap_kinds=f.cap_kinds + (CAP_CHANNEL,) * len(caps)) for f, g in zip(tuned.flows, st.graph)))
        return tuned, rate, steps, transport, args

    def finish(self, st: Structure, algo: str, proto: str, op: str, members: tuple[int, ...], used: int,
               share: float, nbytes: float, chunk: int, loop: float = 0.0, threads: int = 0) -> Collective:
        """The collective of a structure with this protocol: link shares, caps and latency (NCCL's, plus the
        pipeline's fill where its stages pass whole loops of ``loop`` bytes per channel on: :meth:`fill`)."""
        tuned, rate, steps, transport, args = self.tuned(st, algo, proto, op, members, used, share, nbytes, chunk,
                                                         threads)
        flows = self.windowed(list(tuned.flows), st, algo, proto, op, chunk, steps, rate, nbytes, used)
        lat = (collective_latency(*args, *transport, self.rates.launch or 0.0)
               + self.fill(algo, op, st.nodes, used, loop, rate)
               + self.forwarded(algo, proto, op, members, st.nodes, used, chunk, rate)
               + self.control_wait(algo, proto, members, st.nodes, chunk, transport[1]))
        return replace(tuned, flows=tuple(flows), latency=lat,
                       tuning=(tuned.latency, rate * tuning_share(algo, op)))

    @staticmethod
    def fill(algo: str, op: str, nodes: int, used: int, loop: float, rate: float) -> float:
        """Seconds the pipeline takes to fill and drain beyond its bytes at ``rate`` (the collective's algorithm
        bandwidth, bytes/s): :meth:`~p2sim.collectives.algorithms.base.Algorithm.fill_loops` loops of ``loop``
        bytes on each of ``used`` channels.  NCCL's tuning model leaves it out (its NVLS latency is one step),
        so it shapes the prediction, not NCCL's choice."""
        loops = algorithm(algo).fill_loops(op, nodes)
        if not loops or loop <= 0 or not (0 < rate < math.inf):
            return 0.0
        return loops * used * loop / rate

    def forwarded(self, algo: str, proto: str, op: str, members: tuple[int, ...], nodes: int, used: int,
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
        node = self.shapes.memo("node_rate", members, (), lambda: self.node_ring_rate(members)) * GB
        hop = min(slow, used * chunk / node) if node > 0 else slow
        return max(0.0, net * slow + intra * hop - slow)

    def control_wait(self, algo: str, proto: str, members: tuple[int, ...], nodes: int, chunk: int,
                     step_us: float | None) -> float:
        """Seconds the collective's first network step waits for the receiver's control message
        (:func:`~p2sim.collectives.transports.control_wait_us`: aws-ofi-nccl's RDMA protocol above its eager
        size); NCCL's model leaves it out (the plugin's reported latency stands for every step alike)."""
        if nodes == 1:
            return 0.0
        nccl = self.topo.spec.nccl
        net_algo = algorithm(algo).network_step(len(members), nodes)
        return control_wait_us(nccl.transport, nccl.ofi_protocol, net_algo, proto, chunk, step_us) * 1e-6

    def windowed(self, flows: list[Flow], st: Structure, algo: str, proto: str, op: str, chunk: int,
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
            rails = math.inf
            if st.nodes > 1:
                conns = a.connections(f.channels, used)  # the network connections carrying the flow
                beta_net = rate * f.share * per_hop / conns
                # a step's message moves at its stripes' rate where the device's rails share it out (rails.py)
                rails, striped = self.rails(algo, proto, op, chunk, nbytes * f.share / conns)
                win = window(algo, proto, op, chunk, steps[1], min(beta_net, striped), nbytes * f.share / conns,
                             st.inter)
                # the tighter of the two caps on the flow (a cap over its connections against one per channel)
                if (win < w) if conns == f.channels else (win * conns < w * f.channels):
                    w, coef, kind = win, per_hop / conns, CAP_WINDOW
            caps, kinds = f.caps, f.cap_kinds
            if math.isfinite(w):
                caps, kinds = caps + ((w, coef),), kinds + (kind,)
            if math.isfinite(rails):  # each connection's messages on the rails they cover
                caps, kinds = caps + ((rails, per_hop / conns),), kinds + (CAP_RAIL,)
            out.append(replace(f, caps=caps, cap_kinds=kinds) if caps is not f.caps else f)
        return out

    def rails(self, algo: str, proto: str, op: str, chunk: int, conn_bytes: float) -> tuple[float, float]:
        """One network connection's most bytes per second on the device's rails, and one of its messages' rate
        (both ``inf`` where the plugin does not stripe: one rail, its SENDRECV protocol, another transport).  A
        message is a step's unit (:func:`~p2sim.collectives.pipeline.in_flight`) in its protocol's lines, as many in
        flight as the window holds, or as the connection's ``conn_bytes`` fill where a pipeline (not a ring, whose
        ranks always stream) has fewer (:func:`~p2sim.collectives.rails.rail_rate`)."""
        rails, least = self._rails
        flight, unit = in_flight(algo, proto, op, chunk) if rails > 1 else (0.0, 0.0)
        if unit <= 0:
            return math.inf, math.inf
        if self._rail_device is None:  # the slowest NIC's link, as NCCL is told: the rails together
            self._rail_device = nic_gbps(self.topo) * GB
        message = wire_bytes(proto, unit)
        messages = flight / unit if algorithm(algo).streams(op) else min(flight / unit, math.ceil(conn_bytes / unit))
        return (rail_rate(self._rail_device, rails, least, message, messages),
                message_rate(self._rail_device, rails, least, message))

    def stream_cap(self, algo: str, proto: str, op: str, chunk: int) -> float:
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

    def cta_cap(self, algo: str, proto: str, members: tuple[int, ...], used: int, threads: int,
                share: float) -> float:
        """Bus bandwidth (GB/s) one channel's CTA moves when NCCL runs fewer channels or threads than the group's
        full count (``inf`` otherwise, or where the algorithm or a ``*channel_rate`` caps its channels): its
        share of the node's ring rate (NCCL sizes its channels to fill the NVLinks, two CTAs per NVLink:
        channels.py), times its protocol's data share, times its threads over the protocol's most (a CTA's
        copies scale with its warps).  At the full count the links bind, as before."""
        full = self.structures.channels(members)
        if (proto not in algorithm(algo).cta_protos or self.channel_rate(algo) is not None
                or (used >= full and threads >= MAX_THREADS[proto])):
            return math.inf
        per = self.shapes.memo("cta", members, (), lambda: self.node_channel_rate(members))
        return per * share * threads / MAX_THREADS[proto]

    def node_ring_rate(self, members: Sequence[int]) -> float:
        """GB/s a ring through a node of this group carries on its hops, all its channels together."""
        segs = segments(self.topo, members)
        return self.structures.mix_throughput(self.structures.ring_mix(segs)[segs[0].node])

    def node_channel_rate(self, members: Sequence[int]) -> float:
        """GB/s one of NCCL's channels in a node of this group carries on its ring hop: the node's ring rate
        over the channels NCCL fits there (channel_count, search.cc and connect.cc)."""
        segs = segments(self.topo, members)
        t = self.structures.mix_throughput(self.structures.ring_mix(segs)[segs[0].node])
        return t / channel_count(self.topo, segs[:1], t) if math.isfinite(t) else math.inf

    def channel_rate(self, algo: str) -> float | None:
        return algorithm(algo).channel_rate(self.rates)
