"""Backends: NCCL on GPUs through cupy.cuda.nccl, or the numeric executor on CPUs.

A backend makes one collective call in nccl-tests' conventions (:meth:`collective`: send
and receive buffers, a count, a root), executes one program step on a rank's packed buffer
(:meth:`run`: its held chunks in sorted order, ``chunk`` elements each), and times blocks
of calls (:meth:`timed`, with :meth:`mark` between steps).  Both backends see the same
plans, communicators and logs; only the data path differs.
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

from p2sim.formalism.execute import collective as reference_collective
from p2sim.formalism.semantics import Op

from .errors import BenchError
from .gpu import CUPY_HELP, can_split, gpu_message, is_gpu_error, load
from .steps import RankStep, single_call
from .store import StoreClient

__all__ = ["NumpyBackend", "NcclBackend", "make_backend", "CUPY_HELP", "device_index"]


def device_index(local_rank: int, visible: int) -> int:
    """The GPU of a rank among those it sees: its local rank modulo their count (F2).

    Under ``srun --gpus-per-task 1`` each task sees one GPU (device 0) whatever its local
    rank; on a plain launch every rank sees all of the node's GPUs.

    Examples
    --------
    >>> device_index(3, 1), device_index(3, 8)
    (0, 3)
    """
    return local_rank % visible


class NumpyBackend:
    """Emulates the collectives on CPUs: members exchange buffers through the store.

    Every member publishes its chunks, waits for the others', and runs p2sim's numeric
    executor on the whole group, keeping its own part -- the executor that defines the
    semantics.  Times are wall-clock seconds of this emulation, marked ``emulated``.
    """

    name = "numpy"
    emulated = True
    xp = np
    dtype = np.float32  # NCCL's float, so that both backends move the same bytes

    def __init__(self, rank: int, world: int, local_rank: int, store: StoreClient, timeout: float) -> None:
        self.rank, self.world, self.store, self.timeout = rank, world, store, timeout
        self.local_rank = local_rank
        self._seq: dict[tuple[int, ...], int] = {}
        self._marks: list[float] | None = None
        self._t0 = 0.0
        self.nccl_version: int | None = None

    def communicators(self, partitions: list[tuple[tuple[int, ...], ...]]) -> dict[tuple[int, ...], Any]:
        """This rank's communicators: here a group is its own communicator."""
        return {g: g for part in partitions for g in part if self.rank in g}

    def versions(self) -> dict[str, Any]:
        return {"host": socket.gethostname(), "gpu_name": "cpu (numpy emulation)", "nccl_version": None,
                "cupy_version": None, "numpy_version": np.__version__}

    def device_info(self) -> dict[str, Any]:
        return {"host": socket.gethostname(), "pid": os.getpid(), "device": self.local_rank, "bus": "[cpu]",
                "gpu": "cpu (numpy emulation)"}

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
        return out_v[0, step.index, rows].astype(self.dtype)

    def collective(self, op: Op, comm: tuple[int, ...], send: np.ndarray, recv: np.ndarray, count: int,
                   root: int = 0) -> None:
        """One call in nccl-tests' buffer conventions (see :meth:`NcclBackend.collective`)."""
        if root != 0:
            raise BenchError("numpy backend: the root is member 0")
        index = comm.index(self.rank)
        step, chunks = single_call(op, comm, index)
        buf = send.reshape(-1)[: len(step.rows_in) * count].reshape(len(step.rows_in), count)
        out = self.run(step, comm, buf, chunks, count)
        if out.size:
            recv.reshape(-1)[: out.size] = out.reshape(-1)

    def timed(self, block: Callable[[], Any]) -> tuple[Any, float]:
        self._t0 = time.perf_counter()
        self._marks = []
        out = block()
        seconds = time.perf_counter() - self._t0
        return out, seconds

    def mark(self) -> None:
        """Note the time since the block started (after each step of a program)."""
        if self._marks is not None:
            self._marks.append(time.perf_counter() - self._t0)

    def marks(self) -> list[float]:
        return list(self._marks or [])

    def sync(self) -> None:
        pass

    def to_host(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def close(self) -> None:
        pass


class NcclBackend:
    """NCCL through cupy.cuda.nccl on one GPU; CUDA events time each block.

    Everything this rank does on its GPU -- fills, NCCL calls, reorders, checks -- runs on
    one stream, made current at start (F1: NCCL on a stream of its own could read a buffer
    still being filled on the default stream).
    """

    name = "nccl"
    emulated = False

    def __init__(self, rank: int, world: int, local_rank: int, store: StoreClient, timeout: float) -> None:
        cupy, nccl = load()
        self.cupy, self.nccl = cupy, nccl
        self.xp = cupy
        self.dtype = cupy.float32
        self.rank, self.world, self.store, self.timeout = rank, world, store, timeout
        try:
            ndev = cupy.cuda.runtime.getDeviceCount()
            self.device_id = device_index(local_rank, ndev)
            self.device = cupy.cuda.Device(self.device_id)
            self.device.use()
            self.stream = cupy.cuda.Stream(non_blocking=True)
            self.stream.use()  # F1: the one stream of this rank's GPU work
            self.nccl_version = int(nccl.get_version())
            self.nccl_build = int(nccl.get_build_version()) if hasattr(nccl, "get_build_version") else None
        except Exception as e:  # noqa: BLE001
            if not is_gpu_error(e):
                raise
            raise BenchError(f"rank {rank}: {gpu_message(e)}") from None
        self.split = can_split(nccl, self.nccl_version, self.nccl_build)
        self._comms: dict[tuple[int, ...], Any] = {}
        self._world: Any = None
        self._events: list[Any] | None = None
        self._start: Any = None

    def versions(self) -> dict[str, Any]:
        props = self.cupy.cuda.runtime.getDeviceProperties(self.device_id)
        name = props["name"]
        return {"host": socket.gethostname(), "gpu_name": name.decode() if isinstance(name, bytes) else str(name),
                "nccl_version": self.nccl_version, "nccl_build_version": self.nccl_build,
                "cupy_version": self.cupy.__version__, "nccl_algo": os.environ.get("NCCL_ALGO"),
                "comm_split": self.split}

    def device_info(self) -> dict[str, Any]:
        props = self.cupy.cuda.runtime.getDeviceProperties(self.device_id)
        name = props["name"]
        bus = "[%04x:%02x:%02x]" % (props.get("pciDomainID", 0), props.get("pciBusID", 0), props.get("pciDeviceID", 0))
        return {"host": socket.gethostname(), "pid": os.getpid(), "device": self.device_id, "bus": bus,
                "gpu": name.decode() if isinstance(name, bytes) else str(name)}

    def communicators(self, partitions: list[tuple[tuple[int, ...], ...]]) -> dict[tuple[int, ...], Any]:
        """This rank's communicators for every step's groups, created once and cached.

        With ``commSplit`` (CuPy 14 and NCCL 2.18 or later, both at build and at run time:
        :func:`bench_nccl.gpu.can_split`), one split of a world communicator per step makes
        all of its groups at once; otherwise each group runs ncclCommInitRank with a unique
        id from its first member.  Every rank walks the same sorted list, so the
        collective creation calls never wait on each other in a cycle.
        """
        if self.split and self._world is None:
            self._world = self._init_rank(tuple(range(self.world)))
        for part in partitions:
            if all(g in self._comms for g in part):
                continue
            if self.split:
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

    def collective(self, op: Op, comm: Any, send: Any, recv: Any, count: int, root: int = 0) -> None:
        """One NCCL call on this rank's stream, in nccl-tests' conventions.

        ``count`` is NCCL's count: the elements of ``send`` for AllReduce, AllGather,
        Reduce and Broadcast, of ``recv`` for ReduceScatter.  In place is NCCL's own rule:
        ``recv`` is ``send`` (AllReduce, Reduce, Broadcast), ``recv`` is this rank's block
        of ``send`` (ReduceScatter), ``send`` is this rank's block of ``recv`` (AllGather).
        """
        nccl, s = self.nccl, self.stream.ptr
        f32, total = nccl.NCCL_FLOAT32, nccl.NCCL_SUM
        sp, rp, count = send.data.ptr, recv.data.ptr, int(count)
        if op is Op.ALL_REDUCE:
            comm.allReduce(sp, rp, count, f32, total, s)
        elif op is Op.REDUCE_SCATTER:
            comm.reduceScatter(sp, rp, count, f32, total, s)
        elif op is Op.ALL_GATHER:
            comm.allGather(sp, rp, count, f32, s)
        elif op is Op.REDUCE:
            comm.reduce(sp, rp, count, f32, total, int(root), s)
        elif op is Op.BROADCAST:
            comm.broadcast(sp, rp, count, f32, int(root), s)
        else:
            raise BenchError(f"unknown collective {op!r}")

    def run(self, step: RankStep, comm: Any, buf: Any, chunks: int, chunk: int) -> Any:
        cp = self.cupy
        count = len(step.rows_in) * chunk
        op = step.op
        if op is Op.ALL_REDUCE:
            self.collective(op, comm, buf, buf, count)
            return buf
        if op is Op.REDUCE_SCATTER:
            out = cp.empty((len(step.rows_out), chunk), dtype=self.dtype)
            self.collective(op, comm, buf, out, out.size)
            return out
        if op is Op.ALL_GATHER:
            out = cp.empty((len(step.gathered), chunk), dtype=self.dtype)
            self.collective(op, comm, buf, out, count)
            if list(step.gathered) != sorted(step.gathered):
                out = out[np.argsort(step.gathered)]  # back to chunk order, on the GPU (on this rank's stream)
            return out
        if op is Op.REDUCE:
            out = cp.empty_like(buf) if step.index == 0 else buf
            self.collective(op, comm, buf, out, count, 0)
            return out if step.index == 0 else cp.empty((0, chunk), dtype=self.dtype)
        if op is Op.BROADCAST:
            out = buf if step.index == 0 else cp.empty((len(step.rows_out), chunk), dtype=self.dtype)
            self.collective(op, comm, buf, out, len(step.rows_out) * chunk, 0)
            return out
        raise BenchError(f"unknown collective {op!r}")

    def timed(self, block: Callable[[], Any]) -> tuple[Any, float]:
        cp = self.cupy
        start, end = cp.cuda.Event(), cp.cuda.Event()
        self.stream.synchronize()  # the fills are done before the clock starts
        self._start, self._events = start, []
        start.record(self.stream)
        out = block()
        end.record(self.stream)
        end.synchronize()
        return out, cp.cuda.get_elapsed_time(start, end) / 1000.0

    def mark(self) -> None:
        """Record an event after a step, for per-step times (read by :meth:`marks`)."""
        if self._events is not None:
            ev = self.cupy.cuda.Event()
            ev.record(self.stream)
            self._events.append(ev)

    def marks(self) -> list[float]:
        get = self.cupy.cuda.get_elapsed_time
        return [get(self._start, ev) / 1000.0 for ev in self._events or []]

    def sync(self) -> None:
        self.stream.synchronize()

    def to_host(self, a: Any) -> np.ndarray:
        return self.cupy.asnumpy(a, stream=self.stream)

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
