"""Pluggable executors for independent simulations.

An executor is anything with ``map(fn, items) -> iterable`` that returns results in
item order (like :meth:`concurrent.futures.Executor.map`).  :func:`make_executor`
gives the in-process one for ``workers=1``, a process pool otherwise, and a
:class:`DaskExecutor` on a ``dask.distributed`` cluster for a scheduler address (or
``local:N``, a cluster of N worker processes on this machine).  Because every task
carries all of its inputs and simulations are deterministic, results are identical
whichever executor runs them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from tqdm import tqdm

from ..util.errors import InputError
from ..util.log import progress_enabled
from ..util.signals import worker_init

__all__ = ["Executor", "SerialExecutor", "DaskExecutor", "make_executor", "process_pool", "run_all",
           "default_workers", "capped_workers"]

CONNECT_TIMEOUT_S = 10  # how long to wait for a remote scheduler before giving up

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterable[R]: ...


class SerialExecutor:
    """Runs tasks one after another in this process."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return map(fn, items)


class DaskExecutor:
    """Runs tasks on a ``dask.distributed`` cluster through a ``Client``.

    Every item becomes one Dask task (``pure=False``: no hashing of the inputs, whose
    results are not worth caching across runs); results are yielded in item order
    as they arrive, so a progress bar advances as with the process pool.  The
    workers must be able to import p2sim (the same version).
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        futures = self.client.map(fn, list(items), pure=False)
        try:
            for f in futures:
                yield f.result()
        finally:
            self.client.cancel([f for f in futures if not f.done()])


def _local_workers(scheduler: str) -> int | None:
    """N of ``local:N`` (``None`` for an address)."""
    if not scheduler.startswith("local:"):
        return None
    n = scheduler[len("local:"):]
    if not n.isdigit() or int(n) < 1:
        raise InputError(f"scheduler: {scheduler!r} should be local:N with N a positive integer, or an address")
    return int(n)


@contextmanager
def dask_executor(scheduler: str, tasks: int | None = None) -> Iterator[DaskExecutor]:
    """A :class:`DaskExecutor` on the scheduler at an address, or on ``local:N`` worker processes.

    ``local:N`` starts at most as many workers as there are cores and ``tasks``.
    """
    n = _local_workers(scheduler)
    if n is not None:
        n = capped_workers(n, tasks)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("scheduler: --scheduler needs Dask; install it with pip install 'p2sim[dask]'") from None
    if n is not None:
        # one single-threaded worker process per task slot: the simulations hold the GIL;
        # the scheduler's HTTP server takes any free port, so several clusters can coexist
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                          silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            yield DaskExecutor(client)
        return
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as e:
        raise InputError(f"scheduler: cannot connect to {scheduler!r}: {e}") from None
    with client:
        check_workers(client)
        yield DaskExecutor(client)


def check_workers(client: Any) -> None:
    """Refuse a cluster whose workers lack this version of p2sim (tasks would fail or differ)."""
    from importlib.metadata import version

    from .. import __version__

    # importlib.metadata.version travels by reference to the standard library, so it runs
    # even on a worker without p2sim; there it returns PackageNotFoundError
    found = client.run(version, "p2sim", on_error="return")
    for worker, v in sorted(found.items()):
        if v != __version__:
            have = f"p2sim {v}" if isinstance(v, str) else "no p2sim"
            raise InputError(f"scheduler: worker {worker} has {have}, this is p2sim {__version__}; install the same "
                             "p2sim (pip install 'p2sim[dask]') on every worker")


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def capped_workers(workers: int | None, tasks: int | None = None) -> int:
    """Worker processes for ``tasks`` tasks: ``workers`` (``None``: all cores), at most the cores and the tasks.

    More processes than cores only share the cores, and more than tasks sit idle
    (``--workers 10000`` for 50 tasks would start 10000 processes).

    Examples
    --------
    >>> capped_workers(10_000, tasks=1)
    1
    >>> capped_workers(1, tasks=50)
    1
    """
    n = default_workers() if workers is None else workers
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"workers: {workers!r} must be a positive integer")
    n = min(n, default_workers())
    if tasks is not None:
        n = min(n, max(tasks, 1))
    return n


@contextmanager
def make_executor(workers: int | None, scheduler: str | None = None, tasks: int | None = None) -> Iterator[Executor]:
    """``workers`` processes (``None``: all cores; 1: in-process), or Dask at ``scheduler``.

    The pool has at most as many processes as cores and as ``tasks`` (when given).
    """
    if scheduler is not None:
        if workers is not None:
            raise InputError("workers: --workers sizes the local process pool; with --scheduler give local:N instead")
        with dask_executor(scheduler, tasks) as ex:
            yield ex
        return
    if isinstance(workers, bool) or workers is not None and (not isinstance(workers, int) or workers < 1):
        raise InputError(f"workers: {workers!r} must be a positive integer")
    n = capped_workers(workers, tasks)
    if n == 1:
        yield SerialExecutor()
        return
    with process_pool(n) as pool:
        yield pool


@contextmanager
def process_pool(n: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``n`` worker processes that never outlives the run.

    On the way out after an error, Ctrl-C or ``SIGTERM`` the workers are terminated at once
    (a pool's own exit would wait for their tasks), and each worker dies with this process
    even if it is killed outright (:func:`~p2sim.util.signals.worker_init`).
    """
    pool = ProcessPoolExecutor(max_workers=n, initializer=worker_init)
    try:
        yield pool
    except BaseException:
        workers = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(timeout=5)
        raise
    pool.shutdown(wait=True)


def run_all(executor: Executor, fn: Callable[[T], R], items: list[T], label: str = "") -> list[R]:
    """Map ``fn`` over ``items`` in order, with a progress bar on a terminal when the caller listens (the CLI)."""
    out: list[Any] = []
    # tqdm's disable=None turns the bar off when stderr is not a terminal (pipes, CI)
    show = None if progress_enabled() else True
    for r in tqdm(executor.map(fn, items), total=len(items), desc=label, disable=show, leave=False):
        out.append(r)
    return out
