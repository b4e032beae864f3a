"""The sweep: one collective over a range of sizes, in nccl-tests' conventions.

Like nccl-tests' ``all_reduce_perf -b 1K -e 1G -f 2``: sizes from ``minbytes`` to
``maxbytes``, each ``factor`` times the last; per size, out of place and then in place,
``warmup`` untimed calls, a barrier, then ``iters`` calls back to back between two CUDA
events on the rank's stream; a rank's time is the elapsed time over ``iters``, and the
reported time the mean over ranks (nccl-tests' default ``-a 1``).  Then, with ``check``,
the buffers are filled again, the collective runs once, and every rank compares its
result on the host with the sums numpy computes (``#wrong``: elements that differ).

Counts follow nccl-tests (``setupArgs`` and each test's ``GetCollByteCount``): ``count =
size / 4`` floats, divided by the rank count for ReduceScatter (its output) and AllGather
(its input), and ``size`` is the larger of a rank's input and output.  algbw is
``size / time`` and busbw algbw times the bus factor
(:func:`p2sim.measurements.collective_rows.bus_factor`).  Rank 0 prints the nccl-tests table
and appends one JSON record per (size, in/out of place) to the log, which
:func:`p2sim.measurements.sweep_log.read_sweep_log` reads back as measurements.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from p2sim.collectives.busbw import bus_factor
from p2sim.util.errors import InputError
from p2sim.formalism.semantics import Op

from .backends import make_backend
from .env import Placement
from .errors import BenchError
from .gpu import nccl_algo_env
from .logfile import LogWriter
from .session import barrier, run_session
from .steps import OPS
from .values import pattern, pattern_sum

__all__ = ["SweepConfig", "sizes", "run_sweep_rank", "measure", "Buffers", "PROGRAM_NAMES", "format_row"]

PROGRAM_NAMES = {"AllReduce": "all_reduce_perf", "ReduceScatter": "reduce_scatter_perf",
                 "AllGather": "all_gather_perf", "Broadcast": "broadcast_perf", "Reduce": "reduce_perf"}
ITEM = 4  # float32, nccl-tests' default type


@dataclass(frozen=True)
class SweepConfig:
    collective: str  # p2sim's name: AllReduce, ...
    minbytes: int
    maxbytes: int
    factor: int
    warmup: int
    iters: int
    check: bool
    algo: str  # auto, ring or tree
    log: str
    backend: str = "nccl"
    timeout: float = 300.0
    system: str | None = None
    nodes: int | None = None


def sizes(op: Op, ranks: int, minbytes: int, maxbytes: int, factor: int) -> list[tuple[int, int]]:
    """(size in bytes, NCCL count) of each step of a sweep, as nccl-tests computes them.

    Sizes that leave no element (a count of 0) are dropped; ``factor`` is at least 2.

    Examples
    --------
    >>> sizes(Op.ALL_GATHER, 3, 1024, 4096, 2)   # 256 floats / 3 ranks = 85 per rank
    [(1020, 85), (2040, 170), (4092, 341)]
    >>> sizes(Op.ALL_REDUCE, 8, 8, 64, 4)
    [(8, 2), (32, 8)]
    """
    if factor < 2:
        raise InputError(f"stepfactor: {factor} must be at least 2 (each size is -f times the last)")
    out = []
    size = minbytes
    while size <= maxbytes:
        count = size // ITEM
        per = count // ranks if op in (Op.REDUCE_SCATTER, Op.ALL_GATHER) else count
        if per:
            out.append((per * ITEM * (ranks if op in (Op.REDUCE_SCATTER, Op.ALL_GATHER) else 1), per))
        size *= factor  # at least 2 (the command line refuses less)
    return out


class Buffers:
    """A rank's send and receive buffers at the largest size, and nccl-tests' views of them."""

    def __init__(self, xp: Any, dtype: Any, elements: int) -> None:
        self.xp = xp
        self.send = xp.zeros(elements, dtype=dtype)
        self.recv = xp.zeros(elements, dtype=dtype)

    def views(self, op: Op, count: int, index: int, n: int, in_place: bool) -> tuple[Any, Any]:
        """(send, recv) of one call: NCCL's in-place rule for each collective."""
        s_len = count * n if op is Op.REDUCE_SCATTER else count
        r_len = count * n if op is Op.ALL_GATHER else count
        if not in_place:
            return self.send[:s_len], self.recv[:r_len]
        if op is Op.REDUCE_SCATTER:
            return self.send[:s_len], self.send[index * count:(index + 1) * count]
        if op is Op.ALL_GATHER:
            return self.recv[index * count:(index + 1) * count], self.recv[:r_len]
        return self.send[:s_len], self.send[:s_len]


def _inputs(op: Op, count: int, index: int, n: int) -> np.ndarray:
    """This member's send data (numpy)."""
    if op is Op.REDUCE_SCATTER:
        return np.concatenate([pattern(index, b, count) for b in range(n)])
    if op is Op.ALL_GATHER:
        return pattern(index, index, count)
    if op is Op.BROADCAST and index:
        return np.zeros(count, np.float32)  # only the root's data counts: zeros elsewhere, so NCCL must write
    return pattern(index, 0, count)


def _expected(op: Op, count: int, index: int, n: int) -> np.ndarray | None:
    """What this member must hold after the call (numpy); ``None``: nothing (Reduce, not root)."""
    if op is Op.ALL_REDUCE or (op is Op.REDUCE and index == 0):
        return pattern_sum(range(n), 0, count)
    if op is Op.REDUCE_SCATTER:
        return pattern_sum(range(n), index, count)
    if op is Op.ALL_GATHER:
        return np.concatenate([pattern(j, j, count) for j in range(n)])
    if op is Op.BROADCAST:
        return pattern(0, 0, count)
    return None


def measure(backend: Any, comm: Any, op: Op, count: int, index: int, n: int, bufs: Buffers, in_place: bool,
            warmup: int, iters: int, check: bool, sync_ranks: Callable[[], None]) -> tuple[float, int | None, float]:
    """One (size, in/out of place) of a sweep on this rank: (seconds per call, #wrong, checksum).

    ``#wrong`` is ``None`` without ``check``; the checksum is the sum of this rank's
    checked result (0 where it has none), to compare backends.
    """
    xp = backend.xp
    send, recv = bufs.views(op, count, index, n, in_place)
    data = _inputs(op, count, index, n)

    def fill() -> None:
        send[...] = xp.asarray(data)  # on the backend's stream (F1): ordered before its NCCL calls

    def call() -> None:
        backend.collective(op, comm, send, recv, count, 0)

    fill()
    for _ in range(warmup):
        call()
    sync_ranks()
    _, seconds = backend.timed(lambda: [call() for _ in range(iters)])
    if not check:
        return seconds / iters, None, 0.0
    recv[...] = 0  # no value a correct result holds (they are 1 and up): a call that writes nothing fails
    fill()
    sync_ranks()
    call()
    backend.sync()
    want = _expected(op, count, index, n)
    if want is None:
        return seconds / iters, 0, 0.0
    got = backend.to_host(recv)
    return seconds / iters, int(np.count_nonzero(got != want)), float(got.sum(dtype=np.float64))


def _float_str(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: two decimals, then fewer, then an exponent, to fit ``width``."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, value)
        if len(text) <= width:
            return text
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, value)


def format_row(size: int, count: int, op: Op, results: list[tuple[float, int | None]], ranks: int) -> str:
    """One table row in nccl-tests' layout (2.18 and later).

    Examples
    --------
    >>> format_row(1048576, 262144, Op.ALL_REDUCE, [(20e-6, 0), (19e-6, None)], 2)
    '     1048576        262144     float     sum      -1    20.00   52.43   52.43       0    19.00   55.19   55.19    N/A'
    """
    redop = "none" if op in (Op.ALL_GATHER, Op.BROADCAST) else "sum"
    root = 0 if op in (Op.BROADCAST, Op.REDUCE) else -1
    line = "%12li  %12li  %8s  %6s  %6s" % (size, count, "float", redop, "%6i" % root)
    for seconds, wrong in results:
        alg = size / seconds / 1e9
        bus = alg * bus_factor(op.value, ranks)
        tail = "  %6g" % wrong if wrong is not None else "    N/A"
        line += "  %7s  %6s  %6s" % (_float_str(seconds * 1e6, 7), _float_str(alg, 6), _float_str(bus, 6)) + tail
    return line


def _header(cfg: SweepConfig, devices: list[dict[str, Any]], backend_name: str) -> list[str]:
    prog = PROGRAM_NAMES[cfg.collective]
    out = [f"# bench_nccl sweep (nccl-tests' layout), backend {backend_name}",
           f"# Collective test starting: {prog} (bench_nccl sweep)",
           f"# nThread 1 nGpus 1 minBytes {cfg.minbytes} maxBytes {cfg.maxbytes} step: {cfg.factor}(factor) "
           f"warmup iters: {cfg.warmup} iters: {cfg.iters} agg iters: 1 validation: {int(cfg.check)} graph: 0",
           "#", "# Using devices"]
    for r, d in enumerate(devices):
        out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d %s %s"
                   % (r, 0, d["pid"], d["host"], max(d["device"], 0), d["bus"], d["gpu"]))
    out += ["#",
            "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
            % ("", "", "", "", ""),
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
            % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
               "busbw", "#wrong"),
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
            % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")]
    return out


def _layout(devices: list[dict[str, Any]]) -> tuple[int, int, list[str]]:
    hosts: dict[str, int] = {}
    for d in devices:
        hosts[d["host"]] = hosts.get(d["host"], 0) + 1
    if len(set(hosts.values())) != 1:
        raise BenchError(f"hosts: the ranks' hosts run different rank counts ({hosts}); a sweep's log needs the same "
                         "GPU count on every node")
    return len(hosts), len(devices) // len(hosts), list(hosts)


def run_sweep_rank(cfg: SweepConfig, p: Placement) -> int:
    return run_session(p, lambda store, ref: _sweep(cfg, p, store, ref))


def _sweep(cfg: SweepConfig, p: Placement, store: Any, backend_ref: list[Any]) -> int:
    op = OPS[cfg.collective]
    backend = make_backend(cfg.backend, p.rank, p.world, p.local_rank, store, cfg.timeout)
    backend_ref.append(backend)
    algo_env = nccl_algo_env(cfg.algo, backend.nccl_version, [op])
    if algo_env is None:
        os.environ.pop("NCCL_ALGO", None)
    else:
        os.environ["NCCL_ALGO"] = algo_env  # before the communicator exists
    store.set(f"dev/{p.rank}", json.dumps(backend.device_info()))
    devices = [json.loads(t) for t in store.wait([f"dev/{r}" for r in range(p.world)], cfg.timeout, "the ranks")]
    nodes, per_node, hosts = _layout(devices)
    system = None
    if cfg.system is not None:
        from p2sim.topology import load_system, system_ref  # here, not at import: runs without a system too

        topo = load_system(cfg.system, cfg.nodes)
        if backend.emulated:  # one machine plays the system's nodes
            nodes, per_node = topo.node_count, topo.devices // topo.node_count
        if (topo.node_count, topo.devices // topo.node_count) != (nodes, per_node):
            raise BenchError(f"system: {topo.spec.name} with {topo.node_count} nodes has "
                             f"{topo.devices // topo.node_count} GPUs per node, but the ranks run {per_node} per host "
                             f"on {nodes} host(s)")
        system = system_ref(topo.spec)  # a file outside the catalogues by its path: validate finds it again
    world = tuple(range(p.world))
    comm = backend.communicators([(world,)])[world]
    steps = sizes(op, p.world, cfg.minbytes, cfg.maxbytes, cfg.factor)
    if not steps:
        raise InputError(f"sizes: no size from {cfg.minbytes} to {cfg.maxbytes} B leaves a float per rank")
    largest = max(max(c * (p.world if op in (Op.REDUCE_SCATTER, Op.ALL_GATHER) else 1) for _, c in steps), 1)
    bufs = Buffers(backend.xp, backend.dtype, largest)
    writer = None
    run_id = None
    if p.rank == 0:
        run_id = uuid.uuid4().hex[:12]
        writer = LogWriter(cfg.log)
        versions = backend.versions()
        print("\n".join(_header(cfg, devices, backend.name)), flush=True)
    total_bus: list[float] = []
    wrong_total = 0
    for k, (size, count) in enumerate(steps):
        results = []
        for place in (False, True):
            key = f"{k}/{int(place)}"
            meets = iter(range(2))
            t, wrong, checksum = measure(backend, comm, op, count, p.rank, p.world, bufs, place, cfg.warmup,
                                         cfg.iters, cfg.check,
                                         lambda: barrier(store, f"{key}/{next(meets)}", p, cfg.timeout))
            store.set(f"s/{key}/{p.rank}", json.dumps([t, wrong, checksum]))
            got = None
            if writer is not None:
                got = [json.loads(v) for v in store.wait([f"s/{key}/{r}" for r in range(p.world)], cfg.timeout,
                                                         "the ranks' results")]
                mean = statistics.fmean(g[0] for g in got)
                wrongs = None if got[0][1] is None else sum(g[1] for g in got)
                results.append((mean, wrongs))
                alg = size / mean / 1e9
                bus = alg * bus_factor(op.value, p.world)
                total_bus.append(bus)
                wrong_total += wrongs or 0
                with store.active():  # a size measured by every rank is logged, whatever fails meanwhile
                    writer.write(dict(
                        kind="sweep", collective=cfg.collective, size=size, count=count, type="float",
                        redop="none" if op in (Op.ALL_GATHER, Op.BROADCAST) else "sum",
                        root=0 if op in (Op.BROADCAST, Op.REDUCE) else -1, in_place=place, seconds=mean,
                        max_rank_seconds=max(g[0] for g in got), algbw_GBps=alg, busbw_GBps=bus, wrong=wrongs,
                        checksum=None if wrongs is None else sum(g[2] for g in got), ranks=p.world, nodes=nodes,
                        gpus_per_node=per_node, hosts=hosts, system=system, algo=cfg.algo, backend=backend.name,
                        emulated=backend.emulated, warmup=cfg.warmup, iters=cfg.iters, run_id=run_id,
                        **{**versions, "nccl_algo": algo_env, "nccl_proto": os.environ.get("NCCL_PROTO")},
                        time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")))
            else:
                results.append((t, wrong))
        if writer is not None:
            print(format_row(size, count, op, results, p.world), flush=True)
    barrier(store, "end", p, cfg.timeout)
    if writer is not None:
        writer.close()
        print(f"# Out of bounds values : {wrong_total} {'FAILED' if wrong_total else 'OK'}\n"
              f"# Avg bus bandwidth    : {statistics.fmean(total_bus):g} \n#\n"
              f"# Collective test concluded: {PROGRAM_NAMES[cfg.collective]} (bench_nccl sweep)\n"
              f"# log: {cfg.log}", flush=True)
    backend.close()
    if wrong_total:
        print(f"bench_nccl sweep: {wrong_total} wrong elements", file=sys.stderr)
        return 1
    return 0
