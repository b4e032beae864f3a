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
from ..sim import Simulator
from ..sim.sim_settings import SimSettings
from ..sim.engines import check_engine
from ..topology import Topology
from ..topology.spec import SystemSpec
from ..util.log import progress
from ..util.parsing import as_text, nccl_tests_size, positive_int
from ..util.table import Tabular
from ..util.units import format_bytes
from ..util.log import announce
from .requests import DEFAULT_SETTINGS, DEFAULT_SYSTEM, limits_of, optional_int, topology_of
from .jobsize import PROCESS_BYTES, STRUCTURE_BYTES_PER_GPU, Limits, duration, plural
from ..collectives.busbw import SIMULATED, bus_factor

__all__ = ["SweepPoint", "sizes", "sweep_sizes", "nccl_tests_sizes", "SweepRequest", "SweepResult", "run_sweep",
           "DEFAULT_COLLECTIVE", "DEFAULT_MINBYTES", "DEFAULT_MAXBYTES", "DEFAULT_STEPFACTOR", "COLLECTIVE_NAMES",
           "SweepCost", "sweep_cost"]

# a sweep as nccl-tests' README runs all_reduce_perf (-b 8 -e 256M -f 2), on to 1 GiB: its collective, first and last
# sizes and factor between sizes, as the command line takes them
DEFAULT_COLLECTIVE = "AllReduce"
DEFAULT_MINBYTES = "8"
DEFAULT_MAXBYTES = "1GiB"
DEFAULT_STEPFACTOR = "2"

# nccl-tests' binary names and p2sim's collective names
COLLECTIVE_NAMES = {"allreduce": "AllReduce", "all_reduce": "AllReduce", "reducescatter": "ReduceScatter",
                    "reduce_scatter": "ReduceScatter", "allgather": "AllGather", "all_gather": "AllGather",
                    "broadcast": "Broadcast", "reduce": "Reduce", "alltoall": "AllToAll", "all_to_all": "AllToAll",
                    "sendrecv": "SendRecv", "send_recv": "SendRecv"}


# What a sweep costs, measured on the 2-core development machine (load about 1, --workers has no say: one process),
# CPU seconds and peak traced memory of sweep_sizes:
# * building the system, per GPU: dgx-h100 at 16,384 nodes (131,072 GPUs), AllReduce at 3 sizes, 16.9 s and
#   790 MB, nearly all of it the topology (the AllReduces are built once per shape and moved);
# * a ring, tree, NVLS or CollNet collective, per GPU and size: dgx-h100 at 2,048 nodes, 28 sizes, 2.0 s;
# * AllToAll and SendRecv build every transfer (sender, receiver) of the group with its route at every size
#   (collectives/p2p.py; each size's own collective, its chunk and window depend on the size): an AllToAll of
#   n ranks has n x (n - 1).  dgx-h100, AllToAll: 64 nodes (261,632 transfers) 3 sizes 0.58 s and 194 MiB peak,
#   20 sizes 3.8 s and 780 MiB; 128 nodes (1,047,552) 3 sizes 5 s, 28 sizes 11.3 s and 3.2 GB; 256 nodes
#   (4,190,208) 3 sizes 25 s and 3.4 GB: about 1 us a transfer and size, 520 bytes a transfer built plus 135
#   bytes a transfer for each size built before it (the collectives the expander keeps hold their routes).
SWEEP_GPU_SECONDS = 100e-6
SWEEP_GPU_SIZE_SECONDS = 5e-6
TRANSFER_SIZE_SECONDS = 1e-6
TRANSFER_BYTES = 520
TRANSFER_SIZE_BYTES = 135


@dataclass(frozen=True)
class SweepCost:
    """A sweep's estimated CPU seconds and memory (constants above), and what they count."""

    seconds: float
    memory: float
    what: str

    def text(self) -> str:
        return self.what

    def brief(self) -> str:
        cpu = duration(self.seconds)
        return (f"estimated {'' if cpu.startswith('under') else 'about '}{cpu} of CPU and "
                f"{format_bytes(self.memory, 2)} of memory")


def sweep_cost(collective: str, gpus: int, ranks: int, points: int) -> SweepCost:
    """What sweeping ``collective`` over ``ranks`` of a system's ``gpus`` at ``points`` sizes will cost.

    Examples
    --------
    >>> c = sweep_cost("AllToAll", 8192, 8192, 3)
    >>> c.what
    '3 sizes of AllToAll over 8,192 ranks: 67,100,672 transfers each, every one built with its route'
    >>> round(c.seconds), round(c.memory / 2**30)
    (202, 58)
    """
    base = gpus * SWEEP_GPU_SECONDS
    memory = PROCESS_BYTES + gpus * STRUCTURE_BYTES_PER_GPU
    if collective in ("AllToAll", "SendRecv"):
        transfers = ranks * (ranks - 1) if collective == "AllToAll" else ranks
        return SweepCost(base + points * transfers * TRANSFER_SIZE_SECONDS,
                         memory + transfers * (TRANSFER_BYTES + TRANSFER_SIZE_BYTES * points),
                         f"{plural(points, 'size')} of {collective} over {ranks:,} ranks: {transfers:,} transfers each, "
                         "every one built with its route")
    return SweepCost(base + points * ranks * SWEEP_GPU_SIZE_SECONDS, memory,
                     f"{plural(points, 'size')} of {collective} over {ranks:,} ranks")


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
    sim = Simulator(topo, settings)
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
    limits: Limits = Limits()  # its estimated cost is checked against them (--yes lifts them)

    @classmethod
    def build(cls, system: str | SystemSpec = DEFAULT_SYSTEM, nodes: Any = None, gpus_per_node: Any = None,
              collective: str = DEFAULT_COLLECTIVE, minbytes: Any = DEFAULT_MINBYTES, maxbytes: Any = DEFAULT_MAXBYTES,
              stepfactor: Any = DEFAULT_STEPFACTOR,
              algo: str = DEFAULT_SETTINGS.algo, proto: str = DEFAULT_SETTINGS.proto, engine: str = DEFAULT_SETTINGS.engine, yes: bool = False) -> SweepRequest:
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
        req = cls(topo, coll, gpn, tuple(points), SimSettings(algo, proto, engine), limits_of(yes))
        check_forced(topo, algo, proto, coll, req.members)
        # before anything is built: an AllToAll is quadratic in its ranks (every transfer built with its route)
        req.limits.check_cost(req.cost, f"sweep of {coll} on {topo.spec.name} with {topo.node_count} nodes",
                              "fewer --nodes, fewer -g GPUs per node or fewer sizes (-b, -e, -f)")
        return req

    @property
    def cost(self) -> SweepCost:
        """The estimated cost (:func:`sweep_cost`) of its points, as nccl-tests' sizes make them."""
        ranks = self.topology.node_count * self.gpus_per_node
        return sweep_cost(self.collective, self.topology.devices, ranks,
                          len(nccl_tests_sizes(self.collective, ranks, self.sizes)))

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
    cost = req.cost
    if req.collective == "AllToAll" or cost.seconds >= 10:  # a job that can be large says so before it starts
        announce(f"{cost.what}: {cost.brief()}")
    return SweepResult(req, tuple(sweep_sizes(req.topology, req.collective, req.members, req.sizes, req.settings)))
