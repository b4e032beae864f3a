"""One rank's run: communicators, buffers, warm-up, timed iterations, checks, log.

Every rank derives the same plans from p2sim, so the ranks agree on what runs when
without exchanging more than unique ids, barriers and results through the store.
Rank 0 serves the store and writes the log.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from p2sim.placement import Matrix

from .backends import make_backend
from .env import Placement
from .errors import BenchError
from .logfile import LogWriter, completed, read_log, record_key
from .plan import ProgramPlan, plan_programs
from .store import StoreClient, StoreServer
from .values import expected, initial

__all__ = ["RunConfig", "run_rank"]


@dataclass(frozen=True)
class RunConfig:
    system: str
    nodes: int | None
    axes: tuple[int, ...]
    reduce_axes: tuple[int, ...]
    matrix: Matrix | None
    programs: str
    algo: str
    bytes: int
    warmup: int
    iters: int
    log: str
    resume: bool = False
    backend: str = "nccl"
    timeout: float = 300.0
    max_records: int | None = None
    inject_failure: tuple[int, int] | None = None  # (rank, record number): for testing failure handling
    profile: str = "paper"
    order: str = "aligned"  # device order of reduction groups (p2sim.hierarchy.Order), recorded in the log


def _watchdog(p: Placement, backend_ref: list[Any], stop: threading.Event) -> None:
    """Stops this rank when another rank reported a failure, or rank 0 vanished."""
    try:
        client = StoreClient(p.address, p.port, p.token)
    except BenchError:
        return
    while not stop.wait(0.2):
        try:
            msg = client.get("abort")
        except BenchError:
            if stop.is_set():
                return
            msg = "rank 0 (which serves the store) is gone"
        if msg and not stop.is_set() and not msg.startswith(f"rank {p.rank}:"):
            print(f"bench_nccl rank {p.rank}: stopping: {msg}", file=sys.stderr, flush=True)
            if backend_ref and hasattr(backend_ref[0], "abort"):
                backend_ref[0].abort()
            os._exit(3)


def run_rank(cfg: RunConfig, p: Placement) -> int:
    server = StoreServer(p.address, p.port, p.token).start() if p.rank == 0 else None
    store = StoreClient(p.address, p.port, p.token)
    backend_ref: list[Any] = []
    stop = threading.Event()
    threading.Thread(target=_watchdog, args=(p, backend_ref, stop), daemon=True).start()
    try:
        return _run(cfg, p, store, backend_ref)
    except Exception as e:
        try:
            store.set("abort", f"rank {p.rank}: {e}")
        except BenchError:
            pass
        raise
    finally:
        stop.set()
        if server is not None:
            time.sleep(0.3)  # let the other ranks' last requests finish
            server.close()


def _barrier(store: StoreClient, name: str, p: Placement, timeout: float) -> None:
    store.set(f"b/{name}/{p.rank}", "1")
    store.wait([f"b/{name}/{r}" for r in range(p.world)], timeout, f"the ranks at barrier {name}")


def _run(cfg: RunConfig, p: Placement, store: StoreClient, backend_ref: list[Any]) -> int:
    from p2sim.topology import load_system

    topo = load_system(cfg.system, cfg.nodes)
    if p.world != topo.devices:
        raise BenchError(f"world: {p.world} ranks, but {topo.spec.name} with {topo.node_count} nodes has "
                         f"{topo.devices} GPUs (one rank per GPU)")
    os.environ["NCCL_ALGO"] = {"ring": "Ring", "tree": "Tree"}[cfg.algo]  # read by NCCL at communicator creation
    plans = plan_programs(topo.hierarchy, cfg.axes, cfg.reduce_axes, cfg.matrix, cfg.programs, cfg.profile,
                          cfg.order)
    backend = make_backend(cfg.backend, p.rank, p.world, p.local_rank, store, cfg.timeout)
    backend_ref.append(backend)
    xp, dtype = backend.xp, backend.dtype
    run_id = None
    writer = None
    if p.rank == 0:
        run_id = uuid.uuid4().hex[:12]
        store.set("run_id", run_id)
        done = completed(read_log(cfg.log)) if cfg.resume else {}
        store.set("resume", json.dumps({k: sorted(v) for k, v in done.items()}))
        writer = LogWriter(cfg.log)
        versions = backend.versions()
    (text,) = store.wait(["resume"], cfg.timeout, "rank 0's log")
    done = {k: set(v) for k, v in json.loads(text).items()}
    if run_id is None:
        (run_id,) = store.wait(["run_id"], cfg.timeout, "rank 0")
    records = 0
    for pid, plan in enumerate(plans):
        base = {"system": topo.spec.name, "nodes": topo.node_count, "axes": list(cfg.axes),
                "reduce_axes": list(cfg.reduce_axes), "matrix": [list(r) for r in plan.matrix],
                "program": plan.text, "algo": cfg.algo, "bytes": cfg.bytes, "backend": backend.name,
                "order": cfg.order}
        todo = [i for i in range(cfg.iters) if i not in done.get(record_key(base), set())]
        if not todo:
            continue
        if cfg.max_records is not None and records >= cfg.max_records:
            break
        chunk = max(1, cfg.bytes // (plan.chunks * xp.dtype(dtype).itemsize))
        comms = backend.communicators(plan.partitions())
        want = expected(xp, plan.reduction_group[p.rank], range(plan.chunks), chunk, dtype)
        for n, it in enumerate([None] * cfg.warmup + todo):  # None: a warm-up iteration
            if it is not None and cfg.inject_failure == (p.rank, records):
                raise BenchError("injected failure (--inject-failure)")
            buf = initial(xp, p.rank, range(plan.chunks), chunk, dtype)
            _barrier(store, f"{pid}/{n}", p, cfg.timeout)
            out, seconds = backend.timed(lambda: _execute(backend, plan, p.rank, comms, buf, chunk))
            ok = bool(out.shape == want.shape and bool((out == want).all()))
            if it is None:
                continue
            store.set(f"r/{pid}/{it}/{p.rank}", json.dumps([seconds, ok]))
            if writer is not None:
                got = [json.loads(v) for v in store.wait([f"r/{pid}/{it}/{r}" for r in range(p.world)],
                                                         cfg.timeout, "the ranks' results")]
                writer.write(dict(
                    base, run_id=run_id, iteration=it, seconds=max(g[0] for g in got),
                    fastest_rank_seconds=min(g[0] for g in got), **{"pass": all(g[1] for g in got)},
                    emulated=backend.emulated, world_size=p.world, warmup=cfg.warmup, **versions,
                    time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                ))
            records += 1
            if cfg.max_records is not None and records >= cfg.max_records:
                break
    _barrier(store, "end", p, cfg.timeout)
    if writer is not None:
        writer.close()
    backend.close()
    return 0


def _execute(backend: Any, plan: ProgramPlan, rank: int, comms: dict, buf: Any, chunk: int) -> Any:
    for step in plan.steps[rank]:
        if step.group is not None:
            buf = backend.run(step, comms[step.group], buf, plan.chunks, chunk)
    return buf
