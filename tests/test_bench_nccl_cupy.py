"""bench_nccl's NCCL calls against the real CuPy API, without a GPU.

Where ``cupy`` imports (``.ci/run`` installs the ``gpu`` extra), every NCCL call the nccl
backend makes -- every step of a few plans, every sweep call in and out of place,
``commSplit``, ``NcclCommunicator`` -- goes into CuPy's real Cython methods on a null
communicator.  Cython parses the arguments first (arity, types: a ``TypeError``); NCCL then
refuses the null communicator (an ``NcclError``), which means the call matched.  The
buffers are host arrays with a ``.data.ptr``: NCCL never reads them.  Nothing is installed
at run time; without CuPy the module is skipped, unless ``P2SIM_REQUIRE_CUPY=1`` (as in
``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

if os.environ.get("P2SIM_REQUIRE_CUPY") == "1":
    import cupy  # noqa: F401 -- must import here: .ci/run installs it
cupy = pytest.importorskip("cupy")
nccl = pytest.importorskip("cupy.cuda.nccl")

from bench_nccl.backends import NcclBackend  # noqa: E402
from bench_nccl.errors import BenchError  # noqa: E402
from bench_nccl.gpu import preflight  # noqa: E402
from bench_nccl.plan import plan_programs  # noqa: E402
from bench_nccl.steps import OPS  # noqa: E402
from bench_nccl.store import StoreClient, StoreServer  # noqa: E402
from bench_nccl.sweep import Buffers  # noqa: E402
from p2sim.formalism.semantics import Op  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class HostArray(np.ndarray):
    """A host array that answers ``.data.ptr`` like a CuPy array (NCCL never dereferences it here)."""

    @property
    def data(self):  # type: ignore[override]
        return SimpleNamespace(ptr=int(self.__array_interface__["data"][0]))


def _host(a) -> HostArray:
    return np.ascontiguousarray(a).view(HostArray)


HOST_CUPY = SimpleNamespace(
    float32=np.float32, zeros=lambda shape, dtype=float: _host(np.zeros(shape, dtype)),
    empty=lambda shape, dtype=float: _host(np.zeros(shape, dtype)),
    empty_like=lambda a: _host(np.zeros_like(np.asarray(a))), asarray=lambda a, dtype=None: _host(np.array(a, dtype)))


class Strict:
    """A real (null) communicator whose calls must also pass Python ints only (not numpy ints or floats)."""

    def __init__(self, calls: Counter) -> None:
        self.comm = nccl.NcclCommunicator.__new__(nccl.NcclCommunicator)
        self.calls = calls

    def __getattr__(self, name: str):
        method = getattr(self.comm, name)

        def call(*args):
            bad = [a for a in args if type(a) is not int]
            assert not bad, f"{name}{args}: {bad} are not Python ints"
            self.calls[name] += 1
            return method(*args)

        return call


def null_backend(rank: int, world: int, calls: Counter, split: bool = True) -> NcclBackend:
    b = NcclBackend.__new__(NcclBackend)  # no GPU: skip __init__'s device set-up, keep the real NCCL module
    b.cupy, b.nccl, b.xp, b.dtype = HOST_CUPY, nccl, HOST_CUPY, np.float32
    b.rank, b.world, b.timeout, b.store = rank, world, 5.0, None
    b.stream = SimpleNamespace(ptr=0)
    b.split, b._comms, b._world, b._events, b._start = split, {}, None, None, None
    b.calls = calls
    return b


def test_every_plan_step_matches_cupy_nccl():
    calls: Counter = Counter()
    plans = (plan_programs((1, 1, 2, 4), (8,), (0,), None, "all")
             + plan_programs((2, 4), (2, 4), (0, 1), None, "all"))
    steps = 0
    for plan in plans:
        for rank, rank_steps in plan.steps.items():
            backend = null_backend(rank, len(plan.steps), calls)
            for s in rank_steps:
                if s.group is None:
                    continue
                buf = _host(np.zeros((len(s.rows_in), 4), np.float32))
                with pytest.raises(nccl.NcclError):
                    backend.run(s, Strict(calls), buf, plan.chunks, 4)
                steps += 1
    assert steps > 1000
    assert set(calls) == {"allReduce", "reduceScatter", "allGather", "reduce", "broadcast"}


@pytest.mark.parametrize("n", [1, 4])
def test_every_sweep_call_matches_cupy_nccl(n):
    calls: Counter = Counter()
    for name, op in OPS.items():
        for index in range(n):
            backend = null_backend(index, n, calls)
            bufs = Buffers(HOST_CUPY, np.float32, 64 * n)
            for place in (False, True):
                send, recv = bufs.views(op, 64, index, n, place)
                with pytest.raises(nccl.NcclError):
                    backend.collective(op, Strict(calls), send, recv, np.int64(64), 0)  # counts get int()
    assert set(calls) == {"allReduce", "reduceScatter", "allGather", "reduce", "broadcast"}
    assert sum(calls.values()) == 5 * n * 2


def test_communicators_match_cupy_nccl():
    calls: Counter = Counter()
    backend = null_backend(1, 4, calls)
    backend._world = Strict(calls)
    with pytest.raises(nccl.NcclError):  # one split of the world per step
        backend.communicators([((0, 1), (2, 3))])
    assert calls == Counter(commSplit=1)
    # without commSplit: ncclCommInitRank with the unique id that the group's first member shared
    server = StoreServer("127.0.0.1", 0, "t").start()
    try:
        backend = null_backend(0, 1, calls, split=False)
        backend.store = StoreClient("127.0.0.1", server.port, "t")
        with pytest.raises((nccl.NcclError, cupy.cuda.runtime.CUDARuntimeError)):
            backend.communicators([((0,),)])
    finally:
        server.close()


def test_without_a_gpu_the_preflight_and_the_backend_say_so_in_one_line():
    try:
        info = preflight(1)
    except BenchError as e:
        assert "CUDA" in str(e) and "\n" not in str(e)
        with pytest.raises(BenchError, match="rank 0: "):
            NcclBackend(0, 1, 0, None, 5.0)
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
        r = subprocess.run([sys.executable, "-m", "bench_nccl", "single", "--bytes", "1KiB"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert r.stderr.startswith("bench_nccl: error: CUDA") and len(r.stderr.strip().splitlines()) == 1
        return
    assert info.devices >= 1 and info.nccl_version > 0  # a GPU is here: the preflight passes


def test_op_names_match():
    assert [op.value for op in OPS.values()] == list(OPS) and Op.ALL_REDUCE in OPS.values()
