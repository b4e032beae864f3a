"""A collective over a range of sizes, as ``nccl-tests`` would run it: what NCCL picks and how long it takes.

Sizes go from ``first`` to ``last`` by a factor (nccl-tests' ``-b -e -f``); each point is
one collective on the given GPUs, simulated with the algorithm and protocol NCCL would
pick (or the forced ones).  ``count`` is nccl-tests' element count for 4-byte floats.

Examples
--------
>>> from p2sim.topology import load_system
>>> pts = sweep_sizes(load_system("dgx-h100", 1), "AllReduce", range(8), sizes(8, 2**30, 1024))
>>> [(p.size, p.algo, p.proto) for p in pts]
[(8, 'ring', 'LL'), (8192, 'ring', 'LL'), (8388608, 'nvls', 'Simple')]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..util.errors import InputError
from ..formalism.hierarchy import LoweredStep
from ..formalism.semantics import Op
from ..collectives import check_algo, check_forced, check_proto
from ..sim.sim_settings import SimSettings
from ..sim.engines import check_engine
from ..topology import Topology
from ..topology.spec import SystemSpec
from ..util.log import progress
from ..util.parsing import as_text, nccl_tests_size, positive_int
from ..util.table import Tabular
from ..util.units import format_bytes
from .requests import optional_int, topology_of
from ..collectives.busbw import SIMULATED, bus_factor

__all__ = ["SweepPoint", "sizes", "sweep_sizes", "nccl_tests_sizes", "SweepRequest", "SweepResult", "run_sweep", "COLLECTIVE_NAMES"]

# nccl-tests' binary names and p2sim's collective names
COLLECTIVE_NAMES = {"allreduce": "AllReduce", "all_reduce": "AllReduce", "reducescatter": "ReduceScatter",
                    "reduce_scatter": "ReduceScatter", "allgather": "AllGather", "all_gather": "AllGather",
                    "broadcast": "Broadcast", "reduce": "Reduce", "alltoall": "AllToAll", "all_to_all": "AllToAll",
                    "sendrecv": "SendRecv", "send_recv": "SendRecv"}


@dataclass(frozen=True)
class SweepPoint:
    size: int
    count: int
    seconds: float
    algbw: float  # bytes/s
    busbw: float
    algo: str
    proto: str
    channels: int

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "count": self.count, "seconds": self.seconds, "algbw_GBps": self.algbw / 1e9,
                "busbw_GBps": self.busbw / 1e9, "algo": self.algo, "proto": self.proto, "channels": self.channels}


def sizes(first: int, last: int, factor: int) -> list[int]:
    """nccl-tests' sizes: ``first``, ``first x factor``, ... up to ``last``."""
    if last < first:
        raise InputError(f"maxbytes: {last} is below minbytes {first}")
    if factor < 2:
        raise InputError(f"stepfactor: {factor} must be at least 2")
    out = [first]
    while out[-1] * factor <= last:
        out.append(out[-1] * factor)
    return out


def sweep_sizes(topo: Topology, collective: str, members: Iterable[int], points: Sequence[int],
                settings: SimSettings = SimSettings()) -> list[SweepPoint]:
    """Simulate ``collective`` over ``members`` at every size, with ``settings`` (default: NCCL's choice, des)."""
    if collective not in SIMULATED:
        raise InputError(f"collective: {collective!r} is not one of {', '.join(SIMULATED)}")
    group = tuple(members)
    if len(group) < 2:
        raise InputError("gpus: a collective needs at least two GPUs")
    sim = settings.simulator(topo)
    step = LoweredStep(Op(collective), (group,))
    out = []
    sizes = nccl_tests_sizes(collective, len(group), points)
    with progress("simulating sizes", len(sizes)) as advance:  # a line every few seconds on stderr
        for size, count in sizes:
            r = sim.step(step, (float(size),))
            a, p, c = r.choices[0]
            out.append(SweepPoint(size, count, r.seconds, size / r.seconds,
                                  size / r.seconds * bus_factor(collective, len(group)), a, p, c))
            advance(1)
    return out


def nccl_tests_sizes(collective: str, ranks: int, points: Sequence[int]) -> list[tuple[int, int]]:
    """(size, count) as nccl-tests runs each asked size with floats: count is its ``count`` column.

    AllGather and ReduceScatter give each rank a part of whole 16-byte units (nccl-tests'
    GetCollByteCount: ``count / nranks`` rounded down to 16 bytes) and print the per-rank
    count; a size below one unit per rank is left out, a repeat once.  AllToAll sends
    ``count / nranks`` whole floats to each rank (``AlltoAllGetCollByteCount``).  The others run
    ``size / 4`` floats.

    >>> nccl_tests_sizes("AllGather", 16, [8, 1024, 1000, 4096])
    [(256, 4), (1024, 16), (768, 12), (4096, 64)]
    >>> nccl_tests_sizes("AllReduce", 16, [8, 1000])
    [(8, 2), (1000, 250)]
    """
    out: list[tuple[int, int]] = []
    for size in points:
        if collective in ("AllGather", "ReduceScatter"):
            per = (size // 4 // ranks) // 4 * 4
            pair = (max(per, 4) * 4 * ranks, max(per, 4))
        elif collective == "AllToAll":  # alltoall.cu: count / nranks floats to each rank, that count printed
            per = max(size // 4 // ranks, 1)
            pair = (per * 4 * ranks, per)
        else:
            pair = (size, size // 4)
        if pair not in out:
            out.append(pair)
    return out


@dataclass(frozen=True)
class SweepRequest:
    topology: Topology
    collective: str
    gpus_per_node: int  # the first GPUs of each node take part
    sizes: tuple[int, ...]
    settings: SimSettings  # the algorithm, protocol and engine (des or analytic)

    @classmethod
    def build(cls, system: str | SystemSpec = "a100", nodes: Any = None, gpus_per_node: Any = None,
              collective: str = "AllReduce", minbytes: Any = "8", maxbytes: Any = "1GiB", stepfactor: Any = "2",
              algo: str = "auto", proto: str = "auto", engine: str = "des") -> SweepRequest:
        topo = topology_of(system, nodes)
        coll = COLLECTIVE_NAMES.get(collective.lower().replace("-", "_").removesuffix("_perf"))
        if coll is None:
            raise InputError(f"collective: {collective!r} is not one of {', '.join(SIMULATED)}")
        gpn = optional_int(gpus_per_node, "gpus-per-node")
        gpn = topo.gpus_per_node if gpn is None else gpn
        if gpn > topo.gpus_per_node:
            raise InputError(f"gpus-per-node: {gpn} is more than {topo.spec.name}'s {topo.gpus_per_node}")
        algo, proto, engine = check_algo(algo), check_proto(proto), check_engine(engine)
        if engine == "baseline":
            raise InputError("engine: the baseline has no protocols or algorithm choice to sweep; use des or analytic")
        # -b/-e as nccl-tests reads them (a sweep runs "as nccl-tests runs it"): 1MB is 1 MiB
        points = sizes(nccl_tests_size(as_text(minbytes, "minbytes"), "minbytes"),
                       nccl_tests_size(as_text(maxbytes, "maxbytes"), "maxbytes"),
                       positive_int(as_text(stepfactor, "stepfactor"), "stepfactor"))
        req = cls(topo, coll, gpn, tuple(points), SimSettings(algo, proto, engine))
        check_forced(topo, algo, proto, coll, req.members)
        return req

    @property
    def members(self) -> list[int]:
        topo = self.topology
        return [n * topo.gpus_per_node + g for n in range(topo.node_count) for g in range(self.gpus_per_node)]


@dataclass(frozen=True, repr=False)
class SweepResult(Tabular):
    """Each size's prediction; ``table()``: the points, as the JSON's ``points``."""

    request: SweepRequest
    points: tuple[SweepPoint, ...]

    def summary(self) -> str:
        req = self.request
        top = max(self.points, key=lambda p: p.busbw)
        return (f"sweep of {req.collective} on {req.topology.spec.name} ({req.topology.node_count} nodes x "
                f"{req.gpus_per_node} GPUs): {len(self.points)} sizes {format_bytes(req.sizes[0])} .. "
                f"{format_bytes(req.sizes[-1])}, at most {top.busbw / 1e9:.4g} GB/s bus bandwidth")

    def to_json(self) -> dict[str, Any]:
        req = self.request
        return {"system": req.topology.spec.name, "nodes": req.topology.node_count, "gpus_per_node": req.gpus_per_node,
                "collective": req.collective, "algo": req.settings.algo, "proto": req.settings.proto,
                "model": req.settings.engine,
                "points": self.table()}

    def table(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.points]


def run_sweep(req: SweepRequest) -> SweepResult:
    return SweepResult(req, tuple(sweep_sizes(req.topology, req.collective, req.members, req.sizes, req.settings)))
