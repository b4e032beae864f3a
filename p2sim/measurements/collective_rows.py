"""Single-collective measurements: one collective, one size, on one system (nccl-tests' form).

Each point is a time and a bus bandwidth (:mod:`p2sim.collectives.busbw`).  Every reader of
such measurements (the dev CSV of published results, nccl-tests logs, bench_nccl sweeps)
produces :class:`CollectiveRow` values.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..collectives.busbw import COLLECTIVES, bus_factor, busbw_of

__all__ = ["CollectiveRow", "COLLECTIVES", "ALGO_NAMES", "PROTO_NAMES", "bus_factor", "busbw_of"]

# what the measurement's NCCL was told (NCCL_ALGO / NCCL_PROTO); "auto" = NCCL chose
ALGO_NAMES = ("auto", "ring", "tree", "nvls", "nvls_tree")
PROTO_NAMES = ("auto", "LL", "LL128", "Simple")


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
