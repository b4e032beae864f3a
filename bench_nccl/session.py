"""One rank's session: rank 0 serves the store, every rank watches for a peer's failure.

Shared by the program runner and the sweep.  ``run_session`` runs ``body(store,
backend_ref)``; if the body fails, the others are told through the store (key ``abort``)
and stop as soon as they wait for something that will not come (what every rank measured
before the failure is still logged); a rank stuck in an NCCL call is ended by its watchdog,
which aborts its communicators.  A rank stopped so exits with status 3.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from p2sim.util.signals import ended_by

from .env import Placement
from .errors import STOPPED_BY_PEER, BenchError, PeerLost
from .store import ABORT, StoreClient, StoreServer

__all__ = ["run_session", "barrier", "WATCH_S"]

WATCH_S = 0.2  # how often the watchdog looks for a peer's failure


def _watchdog(p: Placement, store: StoreClient, backend_ref: list[Any], stop: threading.Event) -> None:
    """Stops this rank when another rank reported a failure, or rank 0 vanished -- only where this rank
    cannot stop by itself.

    A rank waiting on the store is told by the store (its wait ends with :class:`StoppedByPeer`), and a
    rank finishing a measurement every rank has made goes on to log it; so the watchdog leaves alone a
    rank that can only block on the store (the numpy backend: its collectives are store exchanges) and a
    rank that is working (in a store call, or writing the log).  It ends a rank stuck in a device call
    (an NCCL collective whose peer died never returns): one that has not touched the store for a whole
    poll since the failure was seen.
    """
    try:
        client = StoreClient(p.address, p.port, p.token)
    except BenchError:
        return
    seen: int | None = None  # the main thread's store calls when the failure was last seen
    while not stop.wait(WATCH_S):
        try:
            msg = client.get(ABORT)
        except BenchError:
            if stop.is_set():
                return
            msg = "rank 0 (which serves the store) is gone"
        if not msg or stop.is_set() or msg.startswith(f"rank {p.rank}:"):
            continue
        backend = backend_ref[0] if backend_ref else None
        if backend is None or not hasattr(backend, "abort"):
            continue  # no device calls: the store stops this rank at its next wait
        if store.busy or store.calls != seen:
            seen = store.calls
            continue
        print(f"bench_nccl rank {p.rank}: stopping: {msg}", file=sys.stderr, flush=True)
        backend.abort()
        os._exit(STOPPED_BY_PEER)


def run_session(p: Placement, body: Callable[[StoreClient, list[Any]], int]) -> int:
    server = StoreServer(p.address, p.port, p.token).start() if p.rank == 0 else None
    store = StoreClient(p.address, p.port, p.token)
    backend_ref: list[Any] = []
    stop = threading.Event()
    threading.Thread(target=_watchdog, args=(p, store, backend_ref, stop), daemon=True).start()
    try:
        return body(store, backend_ref)
    except BaseException as e:  # an error, or a signal (Ctrl-C, SIGTERM from a launcher or a scheduler)
        if not isinstance(e, PeerLost):  # this rank's own failure (a stopped one only repeats another's)
            how = ended_by(e)
            try:
                if not store.get(ABORT):  # the first failure is the one the others are told
                    store.set(ABORT, f"rank {p.rank}: {e if how is None else how[0]}")
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
