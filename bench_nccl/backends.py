"""Backends: NCCL on GPUs through cupy.cuda.nccl, or the numeric executor on CPUs.

A backend executes one :class:`~bench_nccl.plan.RankStep` on a rank's packed
buffer (its held chunks in sorted order, ``chunk`` elements each) and times blocks
of steps.  Both see the same plans, communicators and logs; only the data path
differs.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from p2sim.execute import collective as reference_collective
from p2sim.semantics import Op

from .errors import BenchError
from .plan import RankStep
from .store import StoreClient

__all__ = ["NumpyBackend", "NcclBackend", "make_backend", "CUPY_HELP"]

CUPY_HELP = (
    "the nccl backend needs CuPy with NCCL: install the wheel matching the local CUDA, e.g. "
    "'pip install cupy-cuda12x' for CUDA 12 or 'pip install cupy-cuda11x' for CUDA 11 "
    "(nvidia-smi shows the CUDA version); or run with --backend numpy to emulate on CPUs"
)


class NumpyBackend:
    """Emulates the collectives on CPUs: members exchange buffers through the store.

    Every member publishes its chunks, waits for the others', and runs p2sim's numeric
    executor on the whole group, keeping its own part -- the executor that defines the
    semantics.  Times are wall-clock seconds of this emulation, marked ``emulated``.
    """

    name = "numpy"
    emulated = True
    xp = np
    dtype = np.float64

    def __init__(self, rank: int, world: int, local_rank: int, store: StoreClient, timeout: float) -> None:
        self.rank, self.world, self.store, self.timeout = rank, world, store, timeout
        self._seq: dict[tuple[int, ...], int] = {}

    def communicators(self, partitions: list[tuple[tuple[int, ...], ...]]) -> dict[tuple[int, ...], Any]:
        """This rank's communicators: here a group is its own communicator."""
        return {g: g for part in partitions for g in part if self.rank in g}

    def versions(self) -> dict[str, Any]:
        return {"host": socket.gethostname(), "gpu_name": "cpu (numpy emulation)", "nccl_version": None,
                "cupy_version": None, "numpy_version": np.__version__}

    def run(self, step: RankStep, comm: tuple[int, ...], buf: np.ndarray, chunks: int, chunk: int) -> np.ndarray:
        group = comm
        seq = self._seq.get(group, 0)
        self._seq[group] = seq + 1
        cid = "-".join(map(str, group))
        key = f"x/{cid}/{seq}/{step.index}"
        payload = {"rows": list(step.rows_in), "data": base64.b64encode(np.ascontiguousarray(buf).tobytes()).decode()}
        self.store.set(key, json.dumps(payload))
        raw = self.store.wait([f"x/{cid}/{seq}/{i}" for i in range(len(group))], self.timeout,
                              f"the members of {list(group)}")
        if seq:  # every member has read the previous call's keys once all have posted this call's
            self.store.delete([f"x/{cid}/{seq - 1}/{step.index}"])
        values = np.full((1, len(group), chunks, chunk), np.nan)
        held = np.zeros((1, len(group), chunks), dtype=bool)
        for i, text in enumerate(raw):
            member = json.loads(text)
            rows = member["rows"]
            data = np.frombuffer(base64.b64decode(member["data"]), dtype=self.dtype).reshape(len(rows), chunk)
            values[0, i, rows] = data
            held[0, i, rows] = True
        out_v, out_h = reference_collective(step.op, values, held)
        rows = np.flatnonzero(out_h[0, step.index])
        if tuple(rows.tolist()) != step.rows_out:
            raise BenchError(f"numpy backend: {step.op.value} left chunks {rows.tolist()}, the plan says {list(step.rows_out)}")
        return out_v[0, step.index, rows]

    def timed(self, block: Callable[[], Any]) -> tuple[Any, float]:
        start = time.perf_counter()
        out = block()
        return out, time.perf_counter() - start

    def close(self) -> None:
        pass


class NcclBackend:
    """NCCL through cupy.cuda.nccl on the GPU ``local_rank``; CUDA events time each block."""

    name = "nccl"
    emulated = False

    def __init__(self, rank: int, world: int, local_rank: int, store: StoreClient, timeout: float) -> None:
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError as e:
            raise BenchError(f"{CUPY_HELP} ({e})") from None
        if not getattr(nccl, "available", True):
            raise BenchError(f"this CuPy has no NCCL; {CUPY_HELP}")
        self.cupy, self.nccl = cupy, nccl
        self.xp = cupy
        self.dtype = cupy.float32
        self.rank, self.world, self.store, self.timeout = rank, world, store, timeout
        ndev = cupy.cuda.runtime.getDeviceCount()
        if local_rank >= ndev:
            raise BenchError(f"rank {rank}: local rank {local_rank} but this host has {ndev} GPUs "
                             "(one rank per GPU: NCCL refuses two ranks on one GPU)")
        self.device = cupy.cuda.Device(local_rank)
        self.device.use()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self._comms: dict[tuple[int, ...], Any] = {}
        self._world: Any = None

    def versions(self) -> dict[str, Any]:
        props = self.cupy.cuda.runtime.getDeviceProperties(self.device.id)
        name = props["name"]
        return {"host": socket.gethostname(), "gpu_name": name.decode() if isinstance(name, bytes) else str(name),
                "nccl_version": self.nccl.get_version(), "cupy_version": self.cupy.__version__,
                "nccl_algo": os.environ.get("NCCL_ALGO")}

    def communicators(self, partitions: list[tuple[tuple[int, ...], ...]]) -> dict[tuple[int, ...], Any]:
        """This rank's communicators for every step's groups, created once and cached.

        With ``commSplit`` (CuPy 13 and later with NCCL 2.18 and later), one split of a world
        communicator per step makes all of its groups at once; otherwise each group runs
        ncclCommInitRank with a unique id from its first member.  Every rank walks the
        same sorted list, so the collective creation calls never wait on each other in a
        cycle.
        """
        split = hasattr(self.nccl.NcclCommunicator, "commSplit")
        if split and self._world is None:
            self._world = self._init_rank(tuple(range(self.world)))
        for part in partitions:
            if all(g in self._comms for g in part):
                continue
            if split:
                # every rank takes part in the split; only members of a group still missing get a colour
                mine = [i for i, g in enumerate(part) if self.rank in g and g not in self._comms]
                color = mine[0] if mine else getattr(self.nccl, "NCCL_SPLIT_NOCOLOR", -1)
                key = part[mine[0]].index(self.rank) if mine else 0
                comm = self._world.commSplit(color, key)
                if mine:
                    self._comms[part[mine[0]]] = comm
                for g in part:
                    self._comms.setdefault(g, None)  # made by this split (its members hold it)
            else:
                for g in part:
                    if self.rank in g and g not in self._comms:
                        self._comms[g] = self._init_rank(g)
        return {g: c for g, c in self._comms.items() if self.rank in g}

    def _init_rank(self, group: tuple[int, ...]) -> Any:
        key = "uid/" + "-".join(map(str, group))
        if group[0] == self.rank:
            uid = self.nccl.get_unique_id()
            text = base64.b64encode(uid).decode() if isinstance(uid, bytes) else json.dumps(list(uid))
            self.store.set(key, text)
        (text,) = self.store.wait([key], self.timeout, f"the NCCL id of {list(group)}")
        uid = json.loads(text) if text.startswith("[") else base64.b64decode(text)
        return self.nccl.NcclCommunicator(len(group), tuple(uid) if isinstance(uid, list) else uid,
                                          group.index(self.rank))

    def run(self, step: RankStep, comm: Any, buf: Any, chunks: int, chunk: int) -> Any:
        cp, nccl, s = self.cupy, self.nccl, self.stream.ptr
        f32, total = nccl.NCCL_FLOAT32, nccl.NCCL_SUM
        count = len(step.rows_in) * chunk
        op = step.op
        if op is Op.ALL_REDUCE:
            comm.allReduce(buf.data.ptr, buf.data.ptr, count, f32, total, s)
            return buf
        if op is Op.REDUCE_SCATTER:
            out = cp.empty((len(step.rows_out), chunk), dtype=self.dtype)
            comm.reduceScatter(buf.data.ptr, out.data.ptr, out.size, f32, total, s)
            return out
        if op is Op.ALL_GATHER:
            out = cp.empty((len(step.gathered), chunk), dtype=self.dtype)
            comm.allGather(buf.data.ptr, out.data.ptr, count, f32, s)
            if list(step.gathered) != sorted(step.gathered):
                with self.stream:
                    out = out[np.argsort(step.gathered)]  # back to chunk order, on the GPU
            return out
        if op is Op.REDUCE:
            out = cp.empty_like(buf) if step.index == 0 else buf
            comm.reduce(buf.data.ptr, out.data.ptr, count, f32, total, 0, s)
            return out if step.index == 0 else cp.empty((0, chunk), dtype=self.dtype)
        if op is Op.BROADCAST:
            out = buf if step.index == 0 else cp.empty((len(step.rows_out), chunk), dtype=self.dtype)
            comm.broadcast(buf.data.ptr, out.data.ptr, len(step.rows_out) * chunk, f32, 0, s)
            return out
        raise BenchError(f"unknown collective {op!r}")

    def timed(self, block: Callable[[], Any]) -> tuple[Any, float]:
        cp = self.cupy
        start, end = cp.cuda.Event(), cp.cuda.Event()
        self.stream.synchronize()
        start.record(self.stream)
        out = block()
        end.record(self.stream)
        end.synchronize()
        return out, cp.cuda.get_elapsed_time(start, end) / 1000.0

    def _all_comms(self) -> list[Any]:
        return [c for c in [*self._comms.values(), self._world] if c is not None]

    def close(self) -> None:
        for comm in self._all_comms():
            try:
                comm.destroy()
            except Exception:  # noqa: BLE001 -- best effort while shutting down
                pass

    def abort(self) -> None:
        for comm in self._all_comms():
            try:
                comm.abort()
            except Exception:  # noqa: BLE001
                pass


def make_backend(name: str, rank: int, world: int, local_rank: int, store: StoreClient, timeout: float):
    if name == "numpy":
        return NumpyBackend(rank, world, local_rank, store, timeout)
    if name == "nccl":
        return NcclBackend(rank, world, local_rank, store, timeout)
    raise BenchError(f"backend: {name!r} is not nccl or numpy")


def single_gpu_check(bytes_per_gpu: int) -> list[str]:
    """On a machine with one GPU: each of the five collectives on a one-rank communicator.

    NCCL runs them as copies; the check proves CuPy, NCCL and the call signatures work
    and that the results are right (a one-rank reduction is the input itself).
    """
    try:
        import cupy as cp
        from cupy.cuda import nccl
    except ImportError as e:
        raise BenchError(f"{CUPY_HELP} ({e})") from None
    from .values import initial

    chunk = max(1, bytes_per_gpu // 4)
    comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
    stream = cp.cuda.Stream(non_blocking=True)
    data = initial(cp, 0, [0], chunk, cp.float32)
    lines = []
    calls = {
        "AllReduce": lambda o: comm.allReduce(data.data.ptr, o.data.ptr, data.size, nccl.NCCL_FLOAT32,
                                              nccl.NCCL_SUM, stream.ptr),
        "ReduceScatter": lambda o: comm.reduceScatter(data.data.ptr, o.data.ptr, data.size, nccl.NCCL_FLOAT32,
                                                      nccl.NCCL_SUM, stream.ptr),
        "AllGather": lambda o: comm.allGather(data.data.ptr, o.data.ptr, data.size, nccl.NCCL_FLOAT32, stream.ptr),
        "Reduce": lambda o: comm.reduce(data.data.ptr, o.data.ptr, data.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0,
                                        stream.ptr),
        "Broadcast": lambda o: comm.broadcast(data.data.ptr, o.data.ptr, data.size, nccl.NCCL_FLOAT32, 0,
                                              stream.ptr),
    }
    for name, call in calls.items():
        out = cp.zeros_like(data)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        call(out)
        end.record(stream)
        end.synchronize()
        ok = bool((out == data).all())
        lines.append(f"{name:<14} 1 rank  {cp.cuda.get_elapsed_time(start, end) / 1000:.6f} s  "
                     f"{'PASS' if ok else 'FAIL'}")
    comm.destroy()
    return lines
