"""Single-collective measurements: one collective, one size, on one system (nccl-tests' form).

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
collective's buffer.  Every reader of such measurements (the dev CSV of published
results, nccl-tests logs, bench_nccl sweeps) produces :class:`CollectiveRow` values.

Examples
--------
>>> bus_factor("AllReduce", 8)
1.75
>>> round(busbw_of("AllReduce", 8, 2**30, 0.01) / 1e9, 2)   # GB/s
187.9
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CollectiveRow", "COLLECTIVES", "ALGO_NAMES", "PROTO_NAMES", "bus_factor", "busbw_of"]

COLLECTIVES = ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce")
# what the measurement's NCCL was told (NCCL_ALGO / NCCL_PROTO); "auto" = NCCL chose
ALGO_NAMES = ("auto", "ring", "tree", "nvls", "nvls_tree")
PROTO_NAMES = ("auto", "LL", "LL128", "Simple")


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


@dataclass(frozen=True)
class CollectiveRow:
    """One measured (collective, size) point.

    ``algo`` and ``proto`` say what NCCL was forced to use (``"auto"``: NCCL's own
    choice).  ``seconds`` and ``busbw`` (bytes/s) are both set: a reader derives the
    missing one with :func:`busbw_of`.  ``origin`` cites where the figure comes from
    (a URL, a log file); ``source:line`` is where this row was read.
    """

    source: str
    line: int
    ident: str
    system: str  # p2sim system name
    nodes: int
    gpus_per_node: int
    collective: str
    algo: str
    proto: str
    size_bytes: float
    seconds: float
    busbw: float
    in_place: bool = False
    origin: str = ""
    gpu: str = ""  # the measured GPU model, as the source names it
    hca: tuple[str, ...] = ()  # the NICs NCCL used (NCCL_IB_HCA), when not all of the system's
    note: str = ""

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def algbw(self) -> float:
        return self.size_bytes / self.seconds
