"""``single``: the backend's code paths on one GPU, one rank (F6).

A one-rank run goes through everything a multi-GPU run uses, short of other ranks: the
backend, its communicators (a one-rank ``commSplit`` of a one-rank world where CuPy and
NCCL have it, else ncclCommInitRank with a unique id), each collective as a program step
(:meth:`run`, including AllGather's reorder path) and as sweep calls out of place and in
place (:meth:`collective`), timed with CUDA events and checked against numpy.  NCCL runs a
one-rank collective as a copy, so every result is the input itself.
"""

from __future__ import annotations

import secrets

import numpy as np

from .backends import make_backend
from .steps import OPS, single_call
from .store import StoreClient, StoreServer
from .sweep import Buffers, measure
from .values import expected, initial

__all__ = ["single_check"]


def single_check(nbytes: int, backend_name: str = "nccl", timeout: float = 60.0) -> list[str]:
    """One line per (collective, path): its time and PASS or FAIL; the first line says how."""
    token = secrets.token_hex(16)
    server = StoreServer("127.0.0.1", 0, token).start()
    try:
        store = StoreClient("127.0.0.1", server.port, token)
        backend = make_backend(backend_name, 0, 1, 0, store, timeout)
        try:
            return _check(backend, nbytes)
        finally:
            backend.close()
            store.close()
    finally:
        server.close()


def _check(backend, nbytes: int) -> list[str]:
    xp, dtype = backend.xp, backend.dtype
    comm = backend.communicators([((0,),)])[(0,)]
    how = ("commSplit of a one-rank world communicator" if getattr(backend, "split", False)
           else "ncclCommInitRank" if backend.name == "nccl" else "the store (numpy emulation)")
    v = backend.versions()
    lines = [f"single: backend {backend.name}, {v.get('gpu_name')}, NCCL {v.get('nccl_version')}, "
             f"CuPy {v.get('cupy_version')}; communicator by {how}"]
    chunk = max(1, nbytes // 4)
    bufs = Buffers(xp, dtype, chunk)
    for name, op in OPS.items():
        step, chunks = single_call(op, (0,), 0)
        buf = initial(xp, 0, step.rows_in, chunk, dtype)
        backend.sync()
        out, seconds = backend.timed(lambda: backend.run(step, comm, buf, chunks, chunk))
        got = backend.to_host(out)
        want = expected(np, [0], step.rows_out, chunk, np.float32)
        ok = got.shape == want.shape and bool((got == want).all())
        lines.append(f"{name:<14} program step      1 rank  {seconds:.6f} s  {'PASS' if ok else 'FAIL'}")
        for place in (False, True):
            t, wrong, _ = measure(backend, comm, op, chunk, 0, 1, bufs, place, 1, 3, True, lambda: None)
            lines.append(f"{name:<14} sweep {'in-place    ' if place else 'out-of-place'} 1 rank  {t:.6f} s  "
                         f"{'PASS' if wrong == 0 else f'FAIL ({wrong} wrong)'}")
    return lines
