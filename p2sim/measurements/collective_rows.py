"""Single-collective measurements: one collective, one size, on one system (nccl-tests' form).

Each point is a time and a bus bandwidth (:mod:`p2sim.collectives.busbw`).  Every reader of
such measurements (the dev CSV of published results, nccl-tests logs, bench_nccl sweeps)
produces :class:`CollectiveRow` values.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..collectives.busbw import COLLECTIVES, bus_factor, busbw_of
from ..util.algorithms import ALGO_CHOICES
from ..util.errors import MeasurementError

__all__ = ["CollectiveRow", "COLLECTIVES", "ALGO_NAMES", "PROTO_NAMES", "bus_factor", "busbw_of", "check_measured",
           "MAX_MEASURED_BYTES", "MEASURED_SECONDS"]

# what a measurement can be: a buffer of 1 B .. 1 PiB, a time of 1 ns .. 11.6 days (a 1e30-byte
# record would make every error metric astronomical)
MAX_MEASURED_BYTES = 2.0**50
MEASURED_SECONDS = (1e-9, 1e6)


def check_measured(source: str, line: int, field: str, value: float, kind: str) -> None:
    """Refuse a measured size (``kind="bytes"``) or time (``"seconds"``) outside what any run gives."""
    lo, hi = (1.0, MAX_MEASURED_BYTES) if kind == "bytes" else MEASURED_SECONDS
    if not lo <= value <= hi:  # also NaN
        shown = "1 B .. 1 PiB" if kind == "bytes" else "1 ns .. 10^6 s"
        raise MeasurementError(f"{source}:{line}: {field}: {value!r} is beyond any measurement ({shown})")

# what the measurement's NCCL was told (NCCL_ALGO / NCCL_PROTO); "auto" = NCCL chose
ALGO_NAMES = ALGO_CHOICES  # auto, every algorithm, collnet (NCCL_ALGO=CollNet)
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
    # the NCCL environment the measured job set, (variable, value) sorted (p2sim.topology.nccl_env): the
    # row is predicted under the settings it makes
    env: tuple[tuple[str, str], ...] = ()
    note: str = ""
    # A split run (nccl-tests' NCCL_TESTS_SPLIT, src/common.cu): the ranks were split into
    # communicators of one shape that ran the collective at the same time on the same nodes;
    # nodes x gpus_per_node is one communicator, and its bus factor is that size's.  Empty
    # (one communicator) otherwise.
    concurrent_groups: tuple[tuple[int, ...], ...] = ()  # each communicator's ranks, as nccl-tests numbered them
    rank_places: tuple[tuple[int, int], ...] = ()  # (node, CUDA device) of rank 0, 1, ...: where each rank ran
    split: str = ""  # the split as the log set it ("NCCL_TESTS_SPLIT=AND 0x7"), when it says

    def __post_init__(self) -> None:
        check_measured(self.source, self.line, "size_bytes", self.size_bytes, "bytes")
        check_measured(self.source, self.line, "seconds", self.seconds, "seconds")
        if self.concurrent_groups:
            self._check_groups()

    def _check_groups(self) -> None:
        """Every communicator has this row's size, no rank is in two, and every rank has a place."""
        seen: set[int] = set()
        for g in self.concurrent_groups:
            bad = len(g) != self.ranks or len(set(g)) != len(g) or \
                any(r in seen or not 0 <= r < len(self.rank_places) for r in g)
            if bad:
                raise MeasurementError(f"{self.source}:{self.line}: concurrent_groups: {list(g)} is not a "
                                       f"communicator of {self.ranks} distinct ranks among the "
                                       f"{len(self.rank_places)} placed ones")
            seen.update(g)

    @property
    def ranks(self) -> int:
        """The ranks of one communicator (the row's bus factor is this size's)."""
        return self.nodes * self.gpus_per_node

    @property
    def groups(self) -> int:
        """How many communicators ran at once (1 unless the run was split)."""
        return max(1, len(self.concurrent_groups))

    @property
    def algbw(self) -> float:
        return self.size_bytes / self.seconds
