"""Test stand-in for cupy.cuda.nccl: collectives by exchanging buffers through bench_nccl's store.

Each call checks what NCCL would: the same count on every rank, one root.
``FAKE_NCCL_SPLIT=0`` hides ``commSplit``, as older CuPy does.
"""

from __future__ import annotations

import base64
import json
import os
import secrets

import numpy as np

available = True
NCCL_FLOAT32, NCCL_SUM, NCCL_SPLIT_NOCOLOR = 7, 0, -1


def get_version() -> int:
    return 21800


def get_unique_id() -> bytes:
    return secrets.token_bytes(16)


def _store():
    from bench_nccl.store import StoreClient

    return StoreClient(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), os.environ["P2SIM_BENCH_TOKEN"])


class NcclCommunicator:
    def __init__(self, ndev: int, commId, rank: int) -> None:
        uid = bytes(commId) if not isinstance(commId, bytes) else commId
        self._setup(ndev, uid.hex(), rank)
        self._exchange(np.zeros(0, np.float32))  # ncclCommInitRank waits for every member

    def _setup(self, n: int, cid: str, rank: int) -> None:
        self.n, self.cid, self.rank, self.seq, self.splits = n, cid, rank, 0, 0
        self.store = _store()

    def _exchange(self, data: np.ndarray, extra: str = "") -> list[tuple[np.ndarray, str]]:
        key = f"fake/{self.cid}/{self.seq}"
        self.seq += 1
        self.store.set(f"{key}/{self.rank}", json.dumps(
            [base64.b64encode(np.ascontiguousarray(data, np.float32).tobytes()).decode(), extra]))
        raw = self.store.wait([f"{key}/{r}" for r in range(self.n)], 60.0, "fake NCCL peers")
        return [(np.frombuffer(base64.b64decode(d), np.float32), e) for d, e in map(json.loads, raw)]

    def _same(self, got, what: str) -> None:
        if len({e for _, e in got}) != 1:
            raise RuntimeError(f"fake NCCL: ranks disagree on {what}: {[e for _, e in got]}")

    def _arr(self, ptr: int):
        from cupy import lookup

        return lookup(ptr)

    def allReduce(self, send, recv, count, dtype, op, stream) -> None:
        got = self._exchange(self._arr(send)[:count], str(count))
        self._same(got, "the count")
        self._arr(recv)[:count] = np.sum([g for g, _ in got], axis=0)

    def reduceScatter(self, send, recv, recvcount, dtype, op, stream) -> None:
        got = self._exchange(self._arr(send)[: recvcount * self.n], str(recvcount))
        self._same(got, "the count")
        total = np.sum([g for g, _ in got], axis=0)
        self._arr(recv)[:recvcount] = total[self.rank * recvcount : (self.rank + 1) * recvcount]

    def allGather(self, send, recv, count, dtype, stream) -> None:
        got = self._exchange(self._arr(send)[:count], str(count))
        self._same(got, "the count")
        self._arr(recv)[: count * self.n] = np.concatenate([g for g, _ in got])

    def reduce(self, send, recv, count, dtype, op, root, stream) -> None:
        got = self._exchange(self._arr(send)[:count], f"{count}/{root}")
        self._same(got, "count and root")
        if self.rank == root:
            self._arr(recv)[:count] = np.sum([g for g, _ in got], axis=0)

    def broadcast(self, send, recv, count, dtype, root, stream) -> None:
        mine = self._arr(send)[:count] if self.rank == root else np.zeros(0, np.float32)
        got = self._exchange(mine, f"{count}/{root}")
        self._same(got, "count and root")
        self._arr(recv)[:count] = got[root][0]

    def commSplit(self, color: int, key: int):
        got = self._exchange(np.zeros(0, np.float32), json.dumps([color, key, self.rank]))
        self.splits += 1
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
