"""Test stand-in for cupy.cuda.nccl: collectives by exchanging buffers through bench_nccl's store.

Each call checks what NCCL would: the same count on every rank, one root.  Buffers are
read and written as seen from the call's stream (see ``cupy.pending``): a buffer still
being filled on another stream reads as garbage.  Environment knobs:

``FAKE_NCCL_SPLIT=0``      no ``commSplit`` (CuPy 13)
``FAKE_NCCL_BUILD=21703``  the NCCL CuPy was built with; ``commSplit`` raises below 2.18 (CuPy 14)
``FAKE_NCCL_VERSION=...``  the NCCL loaded at run time; below 2.19, ``NCCL_ALGO=Tree`` fails
                           every collective but AllReduce ("no algorithm/protocol available")
``FAKE_NCCL_AVAILABLE=0``  CuPy without NCCL
``FAKE_NCCL_LOG=FILE``     append one JSON line per call (method, ranks, NCCL_ALGO at init)
``FAKE_NCCL_CORRUPT=1``    every result off by one (a broken NCCL, for the checks to catch)
"""

from __future__ import annotations

import base64
import json
import os
import secrets

import numpy as np

available = os.environ.get("FAKE_NCCL_AVAILABLE", "1") == "1"
NCCL_FLOAT32, NCCL_SUM, NCCL_SPLIT_NOCOLOR = 7, 0, -1


class NcclError(RuntimeError):
    pass


NcclError.__module__ = "cupy_backends.cuda.libs.nccl"


def get_version() -> int:
    return int(os.environ.get("FAKE_NCCL_VERSION", "22703"))


def get_build_version() -> int:
    return int(os.environ.get("FAKE_NCCL_BUILD", "22703"))


def get_unique_id() -> bytes:
    return secrets.token_bytes(16)


def _store():
    from bench_nccl.env import TOKEN_VAR, store_address
    from bench_nccl.store import StoreClient

    address, port = store_address()
    return StoreClient(address, port, os.environ[TOKEN_VAR])


def _log(call: str, **kw) -> None:
    path = os.environ.get("FAKE_NCCL_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "call": call, **kw}) + "\n")


class NcclCommunicator:
    def __init__(self, ndev: int, commId, rank: int) -> None:
        uid = bytes(commId) if not isinstance(commId, bytes) else commId
        self._setup(ndev, uid.hex(), rank)
        self._exchange(np.zeros(0, np.float32))  # ncclCommInitRank waits for every member

    def _setup(self, n: int, cid: str, rank: int) -> None:
        self.n, self.cid, self.rank, self.seq, self.splits = n, cid, rank, 0, 0
        self.algo = os.environ.get("NCCL_ALGO")  # NCCL reads it when a communicator is made
        self.store = _store() if n > 1 else None
        _log("init", n=n, algo=self.algo)

    def _exchange(self, data: np.ndarray, extra: str = "") -> list[tuple[np.ndarray, str]]:
        if self.n == 1:
            return [(np.ascontiguousarray(data, np.float32).copy(), extra)]
        key = f"fake/{self.cid}/{self.seq}"
        self.seq += 1
        self.store.set(f"{key}/{self.rank}", json.dumps(
            [base64.b64encode(np.ascontiguousarray(data, np.float32).tobytes()).decode(), extra]))
        raw = self.store.wait([f"{key}/{r}" for r in range(self.n)], 60.0, "fake NCCL peers")
        return [(np.frombuffer(base64.b64decode(d), np.float32), e) for d, e in map(json.loads, raw)]

    def _same(self, got, what: str) -> None:
        if len({e for _, e in got}) != 1:
            raise RuntimeError(f"fake NCCL: ranks disagree on {what}: {[e for _, e in got]}")

    def _algo_check(self, name: str) -> None:
        old = get_version() < 21900
        if old and (self.algo or "").lower() == "tree" and name != "allReduce":
            raise NcclError(f"NCCL_ERROR_INTERNAL_ERROR: internal error (no algorithm/protocol available for "
                            f"{name} with NCCL_ALGO=Tree)")

    def _read(self, ptr: int, stream: int, count: int) -> np.ndarray:
        import cupy

        data = cupy.lookup(ptr)[:count]
        if cupy.pending(cupy.array_of(ptr), cupy.cuda.stream_of(stream)):
            return np.full(count, np.nan, np.float32)  # read while another stream was still filling it
        return data.copy()

    def _write(self, ptr: int, stream: int, values: np.ndarray) -> None:
        import cupy

        arr, s = cupy.array_of(ptr), cupy.cuda.stream_of(stream)
        racing = cupy.pending(arr, s)
        if os.environ.get("FAKE_NCCL_CORRUPT") == "1":
            values = values + 1
        cupy.lookup(ptr)[: len(values)] = np.nan if racing else values  # a write in flight elsewhere lands later
        cupy._written(arr, s)

    def allReduce(self, send, recv, count, dtype, op, stream) -> None:
        self._algo_check("allReduce")
        _log("allReduce", n=self.n, count=count)
        got = self._exchange(self._read(send, stream, count), str(count))
        self._same(got, "the count")
        self._write(recv, stream, np.sum([g for g, _ in got], axis=0))

    def reduceScatter(self, send, recv, recvcount, dtype, op, stream) -> None:
        self._algo_check("reduceScatter")
        _log("reduceScatter", n=self.n, count=recvcount)
        got = self._exchange(self._read(send, stream, recvcount * self.n), str(recvcount))
        self._same(got, "the count")
        total = np.sum([g for g, _ in got], axis=0)
        self._write(recv, stream, total[self.rank * recvcount: (self.rank + 1) * recvcount])

    def allGather(self, send, recv, count, dtype, stream) -> None:
        self._algo_check("allGather")
        _log("allGather", n=self.n, count=count)
        got = self._exchange(self._read(send, stream, count), str(count))
        self._same(got, "the count")
        self._write(recv, stream, np.concatenate([g for g, _ in got]))

    def reduce(self, send, recv, count, dtype, op, root, stream) -> None:
        self._algo_check("reduce")
        _log("reduce", n=self.n, count=count)
        got = self._exchange(self._read(send, stream, count), f"{count}/{root}")
        self._same(got, "count and root")
        if self.rank == root:
            self._write(recv, stream, np.sum([g for g, _ in got], axis=0))

    def broadcast(self, send, recv, count, dtype, root, stream) -> None:
        self._algo_check("broadcast")
        _log("broadcast", n=self.n, count=count)
        mine = self._read(send, stream, count) if self.rank == root else np.zeros(0, np.float32)
        got = self._exchange(mine, f"{count}/{root}")
        self._same(got, "count and root")
        self._write(recv, stream, got[root][0])

    def commSplit(self, color: int, key: int):
        if get_build_version() < 21800:
            raise RuntimeError("ncclCommSplit is not available in this version of NCCL")  # as CuPy 14 does
        got = self._exchange(np.zeros(0, np.float32), json.dumps([color, key, self.rank]))
        self.splits += 1
        _log("commSplit", n=self.n, color=color)
        if color == NCCL_SPLIT_NOCOLOR:
            return None
        members = sorted((k, r) for c, k, r in (json.loads(e) for _, e in got) if c == color)
        new = object.__new__(NcclCommunicator)
        new._setup(len(members), f"{self.cid}.{self.splits}.{color}", [r for _, r in members].index(self.rank))
        return new

    def destroy(self) -> None:
        pass

    def abort(self) -> None:
        pass


if os.environ.get("FAKE_NCCL_SPLIT") == "0":
    del NcclCommunicator.commSplit
