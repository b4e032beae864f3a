"""One rank's session: rank 0 serves the store, every rank watches for a peer's failure.

Shared by the program runner and the sweep.  ``run_session`` runs ``body(store,
backend_ref)``; if the body fails, the others are told through the store (key ``abort``)
and stop at once; if another rank fails or rank 0 vanishes, this rank aborts its NCCL
communicators and exits with status 3.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .env import Placement
from .errors import STOPPED_BY_PEER, BenchError
from .store import StoreClient, StoreServer

__all__ = ["run_session", "barrier"]


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
            os._exit(STOPPED_BY_PEER)


def run_session(p: Placement, body: Callable[[StoreClient, list[Any]], int]) -> int:
    server = StoreServer(p.address, p.port, p.token).start() if p.rank == 0 else None
    store = StoreClient(p.address, p.port, p.token)
    backend_ref: list[Any] = []
    stop = threading.Event()
    threading.Thread(target=_watchdog, args=(p, backend_ref, stop), daemon=True).start()
    try:
        return body(store, backend_ref)
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


def barrier(store: StoreClient, name: str, p: Placement, timeout: float) -> None:
    store.set(f"b/{name}/{p.rank}", "1")
    store.wait([f"b/{name}/{r}" for r in range(p.world)], timeout, f"the ranks at barrier {name}")
