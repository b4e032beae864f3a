"""Bus bandwidth: nccl-tests' way of making a collective's rate comparable with its links' rate.

nccl-tests (``all_reduce_perf`` and friends) report, per message size, a time and two
bandwidths: ``algbw = size / time`` and ``busbw = algbw x bus factor``, where the bus
factor makes busbw comparable with the links' rate whatever the rank count
(nccl-tests' ``doc/PERFORMANCE.md``):

=================  ==============
collective         bus factor
=================  ==============
AllReduce          2 (n - 1) / n
ReduceScatter      (n - 1) / n
AllGather          (n - 1) / n
Broadcast, Reduce  1
=================  ==============

``size`` is the larger of a rank's input and output buffers (the whole gathered output
for AllGather, the whole input for ReduceScatter), which is also what p2sim takes as a
collective's buffer.

Examples
--------
>>> bus_factor("AllReduce", 8)
1.75
>>> round(busbw_of("AllReduce", 8, 2**30, 0.01) / 1e9, 2)   # GB/s
187.9
"""

from __future__ import annotations

__all__ = ["COLLECTIVES", "bus_factor", "busbw_of"]

COLLECTIVES = ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce")


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus factor of ``collective`` on ``ranks`` ranks."""
    if collective == "AllReduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("ReduceScatter", "AllGather"):
        return (ranks - 1) / ranks
    if collective in ("Broadcast", "Reduce"):
        return 1.0
    raise ValueError(f"unknown collective {collective!r}")


def busbw_of(collective: str, ranks: int, size_bytes: float, seconds: float) -> float:
    """Bus bandwidth in bytes/s of one timed collective."""
    return size_bytes / seconds * bus_factor(collective, ranks)
