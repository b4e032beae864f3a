"""An algorithm's pipeline: the part of :class:`~.base.Algorithm` that says how its chunks move.

Contract
--------
Required: nothing -- the defaults are NCCL's generic pipeline (a buffer step per chunk, NCCL_STEPS slots, one
network connection per channel, every step in NCCL's latency).  Hooks with defaults:

* :meth:`Pipeline.simple_chunk` -- its largest Simple chunk (default: one step of the buffer);
* :meth:`Pipeline.chunk_size` -- the chunk for a size (default: :meth:`Pipeline.chunking` cut by :attr:`Pipeline.shrink`);
* :attr:`Pipeline.shrink` -- calcCollChunking's halvings of a Simple chunk (default: none);
* :meth:`Pipeline.streams` -- its ranks send chunk after chunk, a ring's pattern (default False);
* :meth:`Pipeline.in_flight` -- bytes a connection has in flight and a receiver holds (default: NCCL_STEPS chunks);
* :meth:`Pipeline.connections` -- network connections of a flow (default: one per channel);
* :meth:`Pipeline.fill_loops`, :meth:`Pipeline.forwarded_hops` -- pipeline fill NCCL's latency leaves out
  (default: none).

:meth:`Pipeline.chunking` (LL's and LL128's fixed steps, else :meth:`Pipeline.simple_chunk`) is not a hook.
"""

from __future__ import annotations

import math

from ...topology.settings import NcclSettings
from ..nccl_tables import LL128_STEP_DATA, LL_STEP_DATA, NCCL_STEPS

__all__ = ["Pipeline"]


class Pipeline:
    """How an algorithm's chunks move (see the module's contract)."""

    #: calcCollChunking's halvings of a Simple chunk for small sizes: (below this many chunks per head,
    #: down to this size), in order; none by default
    shrink: tuple[tuple[int, int], ...] = ()

    def streams(self, op: str) -> bool:
        """Its ranks send chunk after chunk (a ring's pattern): the window binds however few the chunks."""
        return False

    def simple_chunk(self, op: str, nccl: NcclSettings, nodes: int) -> int:
        """Its largest Simple chunk: one step of the buffer (NCCL_BUFFSIZE / NCCL_STEPS)."""
        return nccl.buffsize // NCCL_STEPS

    def chunking(self, proto: str, op: str, nccl: NcclSettings, nodes: int) -> int:
        """NCCL's largest chunk (bytes of data) for this pattern and protocol (``nodes``: NVLink domains)."""
        if proto == "LL":
            return LL_STEP_DATA
        if proto == "LL128":
            return LL128_STEP_DATA
        return self.simple_chunk(op, nccl, nodes)

    def chunk_size(self, proto: str, op: str, channel_bytes: float, ranks: int, nccl: NcclSettings, heads: int,
                   nodes: int = 1) -> int:
        """The chunk NCCL moves for this size (bytes): :meth:`chunking`, cut while a channel holds few
        chunks per head (:attr:`shrink`), never more than the channel's bytes."""
        chunk = self.chunking(proto, op, nccl, nodes)
        if proto == "Simple":
            for below, size in self.shrink:
                if channel_bytes < below * heads * chunk and chunk > size:
                    chunk = size
        return max(1, min(chunk, math.ceil(channel_bytes)))

    def fill_loops(self, op: str, nodes: int) -> int:
        """Loops of its pipeline the last bytes wait behind, beyond the bytes at the collective's rate, where its
        stages hand whole loops on and NCCL's latency model does not count them (NVLS, NVLS Tree); 0 elsewhere
        (a ring's and a tree's steps are in NCCL's latency)."""
        return 0

    def forwarded_hops(self, proto: str, op: str, ranks: int, nodes: int) -> tuple[int, int]:
        """The hops inside nodes and across the network that take a whole chunk in before they pass it on
        (store and forward), each beyond what NCCL's latency model counts (a per-step latency, no bytes): the
        last chunk waits behind each such hop for its bytes at that hop's rate.  ``(0, 0)``: none that the
        model leaves out (a ring's chunks are a 1/ranks share of its bytes; NVLS's loops: :meth:`fill_loops`)."""
        return 0, 0

    def in_flight(self, proto: str, op: str, chunk: int) -> tuple[float, float]:
        """Bytes a connection has in flight and what a receiver holds before it frees a slot: a chunk per
        slot, NCCL_STEPS slots."""
        return float(NCCL_STEPS * chunk), float(chunk)

    def connections(self, channels: int, used: int) -> int:
        """How many network connections (each with its own NCCL_STEPS slots in flight) carry the traffic
        of one flow of ``channels`` of the collective's ``used`` channels: one per channel."""
        return channels
