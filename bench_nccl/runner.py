"""One rank's run: communicators, buffers, warm-up, timed iterations, checks, log.

Every rank derives the same plans from p2sim, so the ranks agree on what runs when
without exchanging more than unique ids, barriers and results through the store.
Rank 0 serves the store and writes the log.
"""

from __future__ import annotations

import datetime
import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

from p2sim.collectives.busbw import bus_factor
from p2sim.formalism.placement import Matrix

from .backends import make_backend
from .env import Placement
from .errors import BenchError
from .gpu import nccl_algo_env
from .logfile import LogWriter, completed, read_log, record_key
from .plan import ProgramPlan, plan_programs
from .session import barrier, run_session
from .store import StoreClient
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
    # (rank, seconds): that rank waits this long before it reports each result, as on a loaded machine (for testing)
    inject_slow: tuple[int, float] | None = None
    profile: str = "paper"
    order: str = "aligned"  # device order of reduction groups (p2sim.formalism.hierarchy.Order), recorded in the log


def run_rank(cfg: RunConfig, p: Placement) -> int:
    return run_session(p, lambda store, backend_ref: _run(cfg, p, store, backend_ref))


def _barrier(store: StoreClient, name: str, p: Placement, timeout: float) -> None:
    barrier(store, name, p, timeout)


def _run(cfg: RunConfig, p: Placement, store: StoreClient, backend_ref: list[Any]) -> int:
    from p2sim.topology import load_system, system_ref

    topo = load_system(cfg.system, cfg.nodes)
    if p.world != topo.devices:
        raise BenchError(f"world: {p.world} ranks, but {topo.spec.name} with {topo.node_count} nodes has "
                         f"{topo.devices} GPUs (one rank per GPU)")
    plans = plan_programs(topo.hierarchy, cfg.axes, cfg.reduce_axes, cfg.matrix, cfg.programs, cfg.profile,
                          cfg.order)
    backend = make_backend(cfg.backend, p.rank, p.world, p.local_rank, store, cfg.timeout)
    backend_ref.append(backend)
    # read by NCCL at communicator creation (none exists yet); F7: what "tree" may mean depends on NCCL
    ops = {s.op for plan in plans for steps in plan.steps.values() for s in steps if s.group is not None}
    algo_env = nccl_algo_env(cfg.algo, backend.nccl_version, ops)
    if algo_env is None:
        os.environ.pop("NCCL_ALGO", None)
    else:
        os.environ["NCCL_ALGO"] = algo_env
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
    # named as p2sim finds the system again: a file outside the catalogues by its absolute path, since
    # its name is known to no catalogue (validate reads the log back by this field)
    system = system_ref(topo.spec)
    for pid, plan in enumerate(plans):
        base = {"system": system, "nodes": topo.node_count, "axes": list(cfg.axes),
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
            if cfg.inject_slow is not None and cfg.inject_slow[0] == p.rank:
                time.sleep(cfg.inject_slow[1])
            store.set(f"r/{pid}/{it}/{p.rank}", json.dumps([seconds, ok, backend.marks()]))
            if writer is not None:
                got = [json.loads(v) for v in store.wait([f"r/{pid}/{it}/{r}" for r in range(p.world)],
                                                         cfg.timeout, "the ranks' results")]
                with store.active():  # a record measured by every rank is logged, whatever fails meanwhile
                    writer.write(dict(
                        base, run_id=run_id, iteration=it, seconds=max(g[0] for g in got),
                        fastest_rank_seconds=min(g[0] for g in got), **{"pass": all(g[1] for g in got)},
                        steps=step_records(plan, chunk * xp.dtype(dtype).itemsize, [g[2] for g in got]),
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
        backend.mark()
    return buf


def step_records(plan: ProgramPlan, chunk_bytes: int, marks: list[list[float]]) -> list[dict[str, Any]]:
    """Per step of a program: its collective, groups, bytes, time, algbw and busbw.

    ``marks[r][i]`` is when rank ``r`` finished step ``i``, counted from its start event;
    the step ends when its slowest rank does (``E_i = max_r marks[r][i]``) and lasts
    ``E_i - E_{i-1}``, so the steps add up to the program's time.  ``bytes`` is nccl-tests'
    size of a member's call (the larger of its input and output); ``algbw_GBps`` is
    ``bytes / seconds`` and ``busbw_GBps`` that times the collective's bus factor on the
    group's size (:func:`p2sim.measurements.collective_rows.bus_factor`), in GB/s (10^9 bytes).
    """
    ends = [max(m[i] for m in marks) for i in range(min(len(m) for m in marks))] if marks else []
    out = []
    for i, end in enumerate(ends):
        calls = [steps[i] for steps in plan.steps.values() if i < len(steps) and steps[i].group is not None]
        if not calls:
            continue
        s = calls[0]
        rows = max(max(len(c.rows_in), len(c.rows_out)) for c in calls)
        n = len(s.group)
        seconds = end - (ends[i - 1] if i else 0.0)
        nbytes = rows * chunk_bytes
        alg = nbytes / seconds / 1e9 if seconds > 0 else None
        out.append({"step": i, "op": s.op.value, "group_size": n, "groups": len({c.group for c in calls}),
                    "bytes": nbytes, "seconds": seconds, "algbw_GBps": alg,
                    "busbw_GBps": None if alg is None else alg * bus_factor(s.op.value, n)})
    return out
