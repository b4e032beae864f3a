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
AllToAll           (n - 1) / n
SendRecv           1
=================  ==============

AllToAll and SendRecv are nccl-tests' ``alltoall_perf`` (``size`` is a rank's whole send buffer,
``size / n`` to each rank; ``src/alltoall.cu``) and ``sendrecv_perf`` (each rank sends ``size`` to the
next; ``src/sendrecv.cu``): :data:`P2P_COLLECTIVES`, simulated as grouped sends and receives
(:mod:`p2sim.collectives.p2p`), never steps of a reduction program.

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

__all__ = ["COLLECTIVES", "P2P_COLLECTIVES", "SIMULATED", "bus_factor", "busbw_of"]

COLLECTIVES = ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce")
P2P_COLLECTIVES = ("AllToAll", "SendRecv")
SIMULATED = COLLECTIVES + P2P_COLLECTIVES  # what sweep, validate and a step can simulate


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus factor of ``collective`` on ``ranks`` ranks."""
    if collective == "AllReduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("ReduceScatter", "AllGather", "AllToAll"):
        return (ranks - 1) / ranks
    if collective in ("Broadcast", "Reduce", "SendRecv"):
        return 1.0
    raise ValueError(f"unknown collective {collective!r}")


def busbw_of(collective: str, ranks: int, size_bytes: float, seconds: float) -> float:
    """Bus bandwidth in bytes/s of one timed collective."""
    return size_bytes / seconds * bus_factor(collective, ranks)
