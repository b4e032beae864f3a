"""Local worker processes that never outlive the run, however it ends (an error, Ctrl-C, ``SIGTERM``)."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

from ..util.signals import deferred_signals, worker_init

__all__ = ["process_pool", "stop_pool", "stop_pools", "STOP_WAIT_S", "TERMINATE_WAIT_S"]


@contextmanager
def process_pool(n: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``n`` worker processes that never outlives the run.

    The workers start at once, with ``SIGINT`` and ``SIGTERM`` held back while they fork: a
    signal taken inside ``os.fork``'s hooks (logging's lock release) would be printed as
    "Exception ignored" and lost, and the run would go on.  On the way out after an error,
    Ctrl-C or ``SIGTERM`` the pool is stopped by :func:`stop_pool`: workers terminated at
    once (a pool's own exit would wait for their tasks) and the pool's thread joined before
    the interpreter's exit hooks run.  Each worker also dies with this process even if it is
    killed outright (:func:`~p2sim.util.signals.worker_init`).
    """
    pool: ProcessPoolExecutor | None = None
    try:
        with deferred_signals():
            pool = ProcessPoolExecutor(max_workers=n, initializer=worker_init)
            _LIVE.add(pool)
            pool.submit(int)  # forks every worker now (the fork start method), in this thread
        yield pool
        pool.shutdown(wait=True)  # a signal during this wait takes the path below
        _LIVE.discard(pool)
    except BaseException:
        if pool is not None:
            stop_pool(pool)
        raise


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's workers and join its thread, with signals held back until it is done.

    The pool's management thread must be gone before the interpreter exits: its exit hook
    (``concurrent.futures.process._python_exit``) wakes every such thread through a pipe the
    thread may be closing at that moment (``OSError: [Errno 9] Bad file descriptor``, printed as
    "Exception ignored in: <module 'threading'>" after the run's last line).
    """
    with deferred_signals():  # a second Ctrl-C must not cut the stop short; it is raised after
        _LIVE.discard(pool)
        workers = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for w in workers:
            if w.is_alive():
                w.terminate()
        deadline = time.monotonic() + TERMINATE_WAIT_S
        for w in workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
        for w in workers:  # forked as the signal came, before worker_init: it kept this process's handler
            if w.is_alive():
                w.kill()
                w.join(timeout=STOP_WAIT_S)
        thread = getattr(pool, "_executor_manager_thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=STOP_WAIT_S)


def stop_pools() -> None:
    """Stop every pool still running (the command line's last step after a signal or an error)."""
    for pool in list(_LIVE):
        stop_pool(pool)


# pools started and not yet shut down (weak: a pool dropped without shutdown is the pool's own business)
_LIVE: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()
# a terminated worker exits within milliseconds, and the pool's thread then sees it and exits; 5 s bounds a
# stop on a machine stalled by swapping without hanging the run's end
STOP_WAIT_S = 5
# a worker that has not yet run worker_init when SIGTERM comes still has this process's handler, which only
# notes the signal (deferred_signals): after this long it is killed (SIGKILL); a worker holds nothing to save
TERMINATE_WAIT_S = 1.0
