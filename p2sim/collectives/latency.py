"""NCCL's latency model (``src/graph/tuning.cc``): the start-up time of one collective.

Per algorithm and protocol a base latency, plus per-step hardware latencies: ``intra``
for a step inside a node (NVLink or PCI), ``inter`` for a step across the network.

* ring: ``base + (nsteps - nInter) x intra + nInter x inter``, with ``nsteps`` =
  2(n-1) for AllReduce and n-1 for ReduceScatter / AllGather, ``nInter`` = 2(nodes-1)
  or nodes-1; an inter-node ring's intra steps cost at least NCCL's network post
  overhead; Broadcast and Reduce pipeline into ``base + one step``;
* tree: ``base + 2 ((ppn - 1) intra + log2(nodes) inter)``;
* NVLS: ``intra (+ inter across nodes)``; NVLS-Tree: ``intra + 2 log2(nodes) inter``;
* CollNet Direct: ``2 (intra + 0.4 (ppn - 1)) + inter``; CollNet Chain: ``2 (ppn - 1) intra
  + inter`` (no base; the SHARP tree's depth is not in NCCL's model);
* a multi-node Simple ring AllReduce of more than 64 bytes per channel and rank is
  1.4x (1.9x before Ampere) slower to start (NCCL's "plateau effect of ring").

p2sim's per-step latencies are NCCL's figures plus the routes' own latencies from the
system file, which hold what NCCL's figures do not (shipped files: 0 inside a node, the
transport's per-message time on the network).  In NCCL's own model (what it chooses by) an
inter-node Simple step counts the network route's latency twice, as NCCL counts the network
plugin's (the receive flush); in p2sim's time once: the flush is a loopback read on the
receiver's own NIC (``net_ib``), and the wire is crossed once.

Examples
--------
>>> us = 1e-6
>>> round(collective_latency("ring", "Simple", "AllReduce", 8, 1, "nvlink", 0.0, 0.0, 2**30, 24, "ampere") / us, 1)
56.0
>>> round(collective_latency("tree", "LL", "AllReduce", 16, 2, "nvlink", 0.0, 0.0, 8, 16, "hopper") / us, 1)
25.2
"""

from __future__ import annotations

from .algorithms import algorithm
from .algorithms.ring import ring_steps
from .nccl_tables import hw_latency
from .transports import flush_us, network_step_us, route_crossings

__all__ = ["collective_latency", "ring_steps", "step_latencies"]

US = 1e-6


def step_latencies(algo: str, proto: str, ranks: int, nodes: int, intra_hw: str, intra_route: float,
                   inter_route: float, transport: str | None = None, step_us: float | None = None,
                   arch: str | None = None) -> tuple[float, float]:
    """One step's latency (s) inside a node and across the network: NCCL's per-step figure plus the
    route's own latency (in NCCL's own model, ``transport`` None, the network's twice for Simple, as NCCL
    counts its plugin's latency for the receive flush; once in p2sim's time); the network step is the transport's (:mod:`.transports`), the one NCCL charges the
    algorithm (:meth:`~p2sim.collectives.algorithms.base.Algorithm.network_step`), plus the plugin's GPUDirect
    flush where it crosses the device on ``arch`` (:func:`~p2sim.collectives.transports.flush_us`)."""
    intra = hw_latency(intra_hw, algo, proto) * US + intra_route
    net_algo = algorithm(algo).network_step(ranks, nodes)
    # NCCL's model counts its plugin's latency twice for Simple (tuning.cc: "the flush extra latency"); the
    # flush is a loopback RDMA read on the receiver's own NIC (net_ib/connect.cc: the gpuFlush QP is
    # connected to itself), so p2sim's time (a transport given) counts the route's wire once, or as often as
    # the transport's rendezvous crosses it (transports.route_crossings: cxi's offloaded Get)
    wire = route_crossings(transport, proto)
    step = network_step_us(transport, net_algo, proto, step_us)
    if arch is not None:  # the receiver's flush through the device (EFA before Hopper), p2sim's time only
        step += flush_us(transport, arch, net_algo, proto, step_us)
    inter = step * US + inter_route * wire
    return intra, inter


def collective_latency(algo: str, proto: str, op: str, ranks: int, nodes: int, intra_hw: str,
                       intra_route: float, inter_route: float, nbytes: float, channels: int, arch: str,
                       transport: str | None = None, step_us: float | None = None, launch_us: float = 0.0) -> float:
    """Start-up latency in seconds (route latencies in seconds): NCCL's own model with ``transport``
    ``None``, else with the transport's network step (:mod:`.transports`); ``launch_us`` is a
    per-collective cost NCCL's model leaves out (calibration fits it; 0 by default).  The formula is
    the algorithm's (:meth:`~p2sim.collectives.algorithms.base.Algorithm.latency`)."""
    intra, inter = step_latencies(algo, proto, ranks, nodes, intra_hw, intra_route, inter_route, transport, step_us,
                                  arch)
    return launch_us * US + algorithm(algo).latency(proto, op, ranks, nodes, intra, inter, nbytes, channels, arch)
