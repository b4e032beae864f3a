"""NCCL's pipeline: why a medium-size collective runs below its links' rate.

A channel moves its share of the buffer in chunks through each connection's FIFO of
``NCCL_STEPS`` (8) slots (``src/include/device.h``).  A sender may fill the free slots; a slot
comes back once the receiver has taken its data -- a flag over NVLink or PCIe, a round trip on
the network.  That is window flow control: with ``F`` bytes in flight, a connection moves at most

    ``F / (2 sigma + 2 w + u / beta)``

bytes per second, where ``u`` is what the receiver must hold before it releases a slot and
``beta`` the connection's rate on its links.  The round trip is what a slot's return really
costs on the network (``src/transport/net.cc``, ``sendProxyProgress`` / ``recvProxyProgress``;
the IB plugin's ``net_ib``): the slot's data crosses the wire once (``w``, the route's own
one-way latency as the system file states it), the receiving proxy sees it complete, flushes it
and hands it to the GPU, and once the GPU has consumed it re-posts the receive, whose
clear-to-send crosses the wire back (``w`` again) before the sender's proxy may post the slot's
next step.  ``sigma`` is the transport's per-step turn-around at each end -- NCCL's network
step (:mod:`.transports`), which stands for a whole step of the proxies, the flush and the
GPU's hand-over.  The wire counts once each way, not twice as in NCCL's latency model (there
the network plugin's latency is counted twice for Simple's receive flush, a cost the step
``sigma`` already holds here).

``F`` is per connection, NCCL's proxy posting depth ``maxDepth = min(NCCL_STEPS,
NCCL_SHARED_STEPS / nsubs)`` slots (``net.cc``; a collective's connection has one sub, so 8),
advancing ``sliceSteps`` at a time.  For a ring AllReduce, ReduceScatter or AllGather with Simple, a
chunk takes ``CHUNKSTEPS`` = 4 of the 8 slots and moves as two slices (``SLICESTEPS`` = 2,
``src/include/collectives.h``): ``F`` is two chunks and ``u`` a slice; every other pattern moves a
chunk per slot, eight in flight.  A flow's network traffic may run over more connections than its
channels: NVLS-Tree runs every head's tree on every NVLS channel
(:meth:`~p2sim.collectives.algorithms.base.Algorithm.connections`).  A collective's connections
never use the shared proxy buffers (``NCCL_NET_SHARED_BUFFERS``, ``NCCL_SHARED_STEPS`` = 16 slots
a channel shared by its peers): ``sendSetup`` / ``recvSetup`` in ``net.cc`` share only connections
set up without a graph, point-to-point ones; the plugin's grouped receives (``maxRecvs``, 8 in
``net_ib``) group the receives of such shared connections, so neither changes a collective's window.

The chunk ``c`` is NCCL's for the size (``src/enqueue.cc``, ``calcCollChunking``): a ring cuts
each channel's bytes into one chunk per rank, at most ``NCCL_BUFFSIZE / 8 x 4`` (2 MiB with the
default 4 MiB buffer); trees and pipelines chunk one Simple step (512 KiB); LL carries 32 KiB
of data per step and LL128 576,000 B; NVLS chunks ``NCCL_NVLS_CHUNKSIZE`` (128 KiB), NVLS-Tree
at most 64 KiB from 4 nodes (``src/transport/nvls.cc``), both cut for small sizes (NVLS to 64,
32, 16 KiB below 64, 8 and 2 chunks per head; NVLS-Tree to 256, 128, 64, 32 KiB below 32, 16,
4 and 1).  Small chunks make the
window bind: busbw climbs with the size until the links bind instead -- the medium-size ramp.
With a network step of tens of microseconds it binds up to hundreds of MiB; over NVLink
(a few microseconds) hardly at all.

Examples
--------
>>> nccl = NcclSettings()  # NCCL's defaults: 4 MiB buffers, 128 KiB NVLS chunks
>>> chunking("ring", "Simple", "AllReduce", nccl, 2)
2097152
>>> chunk_size("ring", "Simple", "AllReduce", 2**20, 16, nccl, 1)  # 1 MiB per channel, 16 ranks
65536
>>> round(window("ring", "Simple", "AllReduce", 65536, 14e-6, 12.5e9) / 1e9, 2)  # IB step, 100G channel
4.28
>>> round(window("ring", "Simple", "AllReduce", 2 * 2**20, 14e-6, 12.5e9) / 1e9, 2)  # largest chunks: the link binds
37.49
>>> round(window("ring", "Simple", "AllReduce", 2 * 2**20, 14e-6, 12.5e9, wire=10e-6) / 1e9, 2)  # a 10 us wire
31.8
"""

from __future__ import annotations

import math

from ..topology.settings import NcclSettings
from .algorithms import algorithm
from .algorithms.ring import RING_OPS, SIMPLE_SLICES

__all__ = ["chunking", "chunk_size", "in_flight", "window", "step_cap", "RING_OPS", "SIMPLE_SLICES"]


def chunking(algo: str, proto: str, op: str, nccl: NcclSettings, nodes: int) -> int:
    """NCCL's largest chunk (bytes of data) for this pattern and protocol (``nodes``: NVLink domains):
    :meth:`~p2sim.collectives.algorithms.base.Algorithm.chunking`."""
    return algorithm(algo).chunking(proto, op, nccl, nodes)


def chunk_size(algo: str, proto: str, op: str, channel_bytes: float, ranks: int, nccl: NcclSettings, heads: int,
               nodes: int = 1) -> int:
    """The chunk NCCL moves for this size (bytes).

    ``channel_bytes`` is a channel's share of the buffer; a ring cuts it into one chunk per rank
    (``ranks``); NVLS and NVLS-Tree cut their chunk while a channel holds few chunks per head
    (``heads``): :meth:`~p2sim.collectives.algorithms.base.Algorithm.chunk_size`.
    """
    return algorithm(algo).chunk_size(proto, op, channel_bytes, ranks, nccl, heads, nodes)


def in_flight(algo: str, proto: str, op: str, chunk: int) -> tuple[float, float]:
    """Bytes a connection has in flight and what a receiver holds before it frees a slot."""
    return algorithm(algo).in_flight(proto, op, chunk)


def step_cap(algo: str, proto: str, op: str, chunk: int, cost: float, beta: float) -> float:
    """A channel's rate when each Simple step (a slice of a ring, else a chunk) costs ``cost``
    seconds that pipelining does not hide, on top of its bytes at ``beta`` (``[model] step_cost``).

    Only Simple synchronises per step (``prims_simple.h``: wait for the peer's flag, copy, fence,
    post); LL and LL128 carry their flags in every line and need no such step."""
    if cost <= 0 or proto != "Simple":
        return math.inf
    unit = in_flight(algo, proto, op, chunk)[1]
    return unit / (cost + unit / beta)


def window(algo: str, proto: str, op: str, chunk: int, sigma: float, beta: float,
           channel_bytes: float = math.inf, wire: float = 0.0) -> float:
    """The most bytes per second one connection moves over a hop, given its chunk, the transport's
    per-step turn-around ``sigma`` (s), the route's one-way latency ``wire`` (s), its rate on the
    links ``beta`` (bytes/s; ``inf`` if unbounded) and its share of the buffer (a pipeline whose
    chunks all fit in flight never waits for a slot): ``F / (2 sigma + 2 wire + u / beta)``."""
    a = algorithm(algo)
    flight, unit = a.in_flight(proto, op, chunk)
    if sigma + wire <= 0 or (not a.streams(op) and channel_bytes <= flight):  # a ring's ranks always stream
        return math.inf
    return flight / (2 * sigma + 2 * wire + unit / beta)
