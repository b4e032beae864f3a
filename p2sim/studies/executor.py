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
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from ..util.errors import InputError
from ..util.fileio import parse_json, read_text
from ..util.log import progress, progress_enabled
from .pool import process_pool, stop_pool, stop_pools

__all__ = ["Executor", "SerialExecutor", "DaskExecutor", "make_executor", "process_pool", "run_all",
           "stop_pool", "stop_pools", "default_workers", "capped_workers", "check_scheduler", "scheduler_from_file"]

# Starting on a scheduler at an address fails within START_LIMIT_S whatever is wrong; each step has its own
# limit inside that one (a step that is slow but succeeds leaves the later steps what is left of it):
START_LIMIT_S = 20  # the steps' limits add up to at most this less a second (to close the client, say why)
DEFAULT_PORT = 8786  # dask scheduler's default port, taken when an address names none
RESOLVE_TIMEOUT_S = 5  # name resolution of the host; a healthy resolver answers in milliseconds
PROBE_TIMEOUT_S = 5  # a plain TCP connect first: a refused port fails at once, a blackholed address in this time
# the Dask handshake with an address that took the TCP connection; Client's own connect has no limit on its
# read of the handshake, so a server that never answers (not a scheduler) would keep it waiting forever
CONNECT_TIMEOUT_S = 10
# A scheduler started with its workers (dask-on-Slurm: one job step each) sees them join within a few seconds:
# a worker process starts and imports p2sim in 2-5 s, on a slow shared filesystem somewhat more.  10 s covers
# that and keeps the whole start within 20 s; a scheduler still without workers then has none coming.
NO_WORKER_WAIT_S = 10
# During a run, a scheduler that has lost every worker (killed, preempted, out of memory) keeps the tasks
# waiting for new ones; the run waits this long for a worker to join (a job system restarting workers, an
# adaptive deployment scaling up) and then fails instead of hanging.  The scheduler is asked for its
# workers every POLL_S while a result is awaited.
LOST_WORKERS_WAIT_S = 60
POLL_S = 2
# the schemes whose addresses are host:port over TCP (checked here before Client); others (inproc, ucx) are
# given to Client as they are
TCP_SCHEMES = ("tcp", "tls", "ws", "wss")

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

    No wait is unbounded: while a result is awaited the scheduler is asked every
    :data:`POLL_S` how many workers it has, and after :data:`LOST_WORKERS_WAIT_S` without
    any the run fails (a scheduler without workers keeps its tasks forever); a lost
    scheduler, or a task whose workers kept dying, fails at once.  Each is one
    :class:`~p2sim.util.errors.InputError` (``field`` names the option: ``scheduler``
    or ``scheduler-file``).
    """

    def __init__(self, client: Any, field: str = "scheduler", where: str | None = None, hint: str | None = None
                 ) -> None:
        self.client = client
        self.field = field
        self.where = where  # the scheduler, for messages (default: its address)
        self.hint = hint or "start workers with dask worker ADDRESS"

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        futures = self.client.map(fn, list(items), pure=False)
        try:
            for f in futures:
                yield self._result(f)
        finally:
            if self.client.status == "running":
                self.client.cancel([f for f in futures if not f.done()])

    def _result(self, future: Any) -> Any:
        from distributed import CancelledError, KilledWorker

        where = self.where or self.client.scheduler.address
        alone_since: float | None = None
        while True:
            try:
                return future.result(timeout=POLL_S)
            except TimeoutError:
                if future.done():  # the task itself raised TimeoutError
                    raise
            except CancelledError:  # the client cancels every future when it loses the scheduler
                raise InputError(f"{self.field}: lost the connection to the scheduler at {where} during the run; "
                                 "is the scheduler still running?") from None
            except KilledWorker as e:
                raise InputError(f"{self.field}: the workers running a task died {_failures(e)} times (out of "
                                 "memory, or killed?); see the workers' logs") from None
            try:
                workers = len(self.client.nthreads())
            except OSError as e:  # the connection went while asking
                raise InputError(f"{self.field}: lost the connection to the scheduler at {where} during the run "
                                 f"({e})") from None
            if workers:
                alone_since = None
                continue
            now = time.monotonic()
            alone_since = now if alone_since is None else alone_since
            if now - alone_since >= LOST_WORKERS_WAIT_S:
                raise InputError(f"{self.field}: every worker left the scheduler at {where} during the run and "
                                 f"none joined within {LOST_WORKERS_WAIT_S:g} s; {self.hint}")


def _failures(e: BaseException) -> str:
    n = e.args[2] if len(e.args) > 2 and isinstance(e.args[2], int) else None
    return "several" if n is None else str(n + 1)


def _local_workers(scheduler: str) -> int | None:
    """N of ``local:N`` (``None`` for an address)."""
    if not scheduler.startswith("local:"):
        return None
    n = scheduler[len("local:"):]
    if not n.isdigit() or int(n) < 1:
        raise InputError(f"scheduler: {scheduler!r} should be local:N with N a positive integer, or an address")
    return int(n)


def _host_port(address: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of an address (``tcp`` when it names no scheme; port ``None`` when none)."""
    scheme, sep, loc = address.rpartition("://")
    scheme = scheme if sep else "tcp"
    if loc.startswith("["):  # [IPv6]:port
        host, sep, tail = loc[1:].partition("]")
        if not sep or tail and not tail.startswith(":"):
            raise ValueError("an IPv6 address is written [addr]:port")
        port = tail[1:] if tail else None
    else:
        host, sep, port = loc.rpartition(":")
        if not sep:
            host, port = port, None
        elif ":" in host:
            raise ValueError("an IPv6 address is written [addr]:port")
    if not host:
        raise ValueError("no host")
    if port is None:
        return scheme, host, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{port!r} is not a port number")
    return scheme, host, int(port)


def check_scheduler(scheduler: str, field: str = "scheduler", local: bool = True) -> str:
    """``local:N``, or a scheduler address with its scheme and port (``tcp://`` and 8786 when not given).

    Examples
    --------
    >>> check_scheduler("node12"), check_scheduler("tls://[::1]:9000"), check_scheduler("local:4")
    ('tcp://node12:8786', 'tls://[::1]:9000', 'local:4')
    >>> check_scheduler("tcp://node12:http")
    Traceback (most recent call last):
    ...
    p2sim.util.errors.InputError: scheduler: 'tcp://node12:http' is not a scheduler address ('http' is not a port number); give tcp://host:port or local:N
    """
    text = scheduler.strip()
    if local and text.startswith("local:"):
        _local_workers(text)
        return text
    form = "tcp://host:port or local:N" if local else "tcp://host:port"
    if not text or any(c.isspace() for c in text):
        raise InputError(f"{field}: {scheduler!r} is not a scheduler address; give {form}")
    scheme = text.rpartition("://")[0] or "tcp"
    if scheme not in TCP_SCHEMES:
        return text  # inproc://, ucx://: Client says what is wrong
    try:
        scheme, host, port = _host_port(text)
    except ValueError as e:
        raise InputError(f"{field}: {scheduler!r} is not a scheduler address ({e}); give {form}") from None
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{DEFAULT_PORT if port is None else port}"


def scheduler_from_file(path: str | os.PathLike[str], field: str = "scheduler-file") -> str:
    """The address in the JSON file ``dask scheduler --scheduler-file PATH`` writes (its ``"address"``)."""
    name = os.fspath(path)
    try:
        text = read_text(name, "Dask scheduler file", limit=2**20)
    except InputError as e:
        raise InputError(f"{field}: {e}") from None
    hint = "the file dask scheduler --scheduler-file writes"
    if not text.strip():
        raise InputError(f"{field}: {name} is empty; give {hint} (once the scheduler has started)")
    try:
        doc = parse_json(text, name, "Dask scheduler file")
    except InputError as e:
        raise InputError(f"{field}: {e}; give {hint}") from None
    address = doc.get("address") if isinstance(doc, dict) else None
    if not isinstance(address, str) or not address.strip():
        raise InputError(f"{field}: {name} has no \"address\" text; give {hint}")
    try:
        return check_scheduler(address, field, local=False)
    except InputError as e:
        raise InputError(f"{e} (in {name})") from None


class _Left:
    """The seconds left of a start limit."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def __call__(self, most: float) -> float:
        return max(0.1, min(most, self.deadline - time.monotonic()))


def _in_thread(fn: Callable[[], Any], timeout: float) -> Any:
    """``fn()`` in a daemon thread, waited for ``timeout`` seconds at most (then ``TimeoutError``)."""
    out: list[tuple[bool, Any]] = []

    def call() -> None:
        try:
            out.append((True, fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            out.append((False, e))

    t = threading.Thread(target=call, name="p2sim-dask-start", daemon=True)
    t.start()
    t.join(timeout)
    if not out:
        raise TimeoutError(f"no answer within {timeout:.0f} s")
    ok, value = out[0]
    if not ok:
        raise value
    return value


def _resolve(host: str, port: int, timeout: float) -> list[tuple[Any, ...]]:
    """``socket.getaddrinfo`` in a thread, so that a resolver that never answers costs ``timeout`` at most."""
    return _in_thread(lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout)


def _reach(address: str, field: str, left: _Left) -> None:
    """Resolve the host of a TCP address and open (and close) one TCP connection to it, so that a name that
    does not resolve, a refused port or an address where nothing answers is one error at once."""
    _, host, port = _host_port(address)
    port = DEFAULT_PORT if port is None else port
    try:
        infos = _resolve(host, port, left(RESOLVE_TIMEOUT_S))
    except TimeoutError as e:
        raise InputError(f"{field}: cannot resolve host {host!r}: {e}") from None
    except OSError as e:
        raise InputError(f"{field}: cannot resolve host {host!r}: {e.strerror or e}") from None
    reason = "no address"
    for family, kind, proto, _, sockaddr in infos:
        timeout = left(PROBE_TIMEOUT_S)
        try:
            with socket.socket(family, kind, proto) as s:
                s.settimeout(timeout)
                s.connect(sockaddr)
            return
        except TimeoutError:
            reason = f"no answer within {timeout:.0f} s (timed out: a wrong address, or a firewall?)"
        except ConnectionRefusedError:
            reason = "connection refused (is the scheduler running, on this port?)"
        except OSError as e:
            reason = (e.strerror or str(e)).lower()
    raise InputError(f"{field}: cannot connect to {address}: {reason}")


def _handshake(address: str, field: str, where: str, left: _Left) -> None:
    """One Dask handshake with the scheduler, bounded (Client's is not), then closed."""
    import asyncio

    from distributed.comm import connect

    timeout = left(CONNECT_TIMEOUT_S)

    async def hello() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
        await comm.close()

    try:
        _in_thread(lambda: asyncio.run(hello()), timeout + 0.5)
    except TimeoutError:
        raise InputError(f"{field}: {where} took the connection but did not answer as a Dask scheduler within "
                         f"{timeout:.0f} s (is it a scheduler's port?)") from None
    except OSError as e:
        raise InputError(f"{field}: cannot connect to {where}: {e}") from None
    except Exception as e:  # noqa: BLE001 - bytes that are not Dask's protocol fail in many ways
        text = f"{type(e).__name__}: {e}"
        raise InputError(f"{field}: {where} answered, but not as a Dask scheduler does ({text[:100]}); is it a "
                         "scheduler's port?") from None


@contextmanager
def dask_executor(scheduler: str, tasks: int | None = None, scheduler_file: str | None = None
                  ) -> Iterator[DaskExecutor]:
    """A :class:`DaskExecutor` on the scheduler at an address, or on ``local:N`` worker processes.

    ``local:N`` starts at most as many workers as there are cores and ``tasks``.  An address
    is checked step by step, each failure one :class:`InputError` within :data:`START_LIMIT_S`:
    the host resolves, the port takes a TCP connection, the scheduler answers, and at least one
    worker joins it within :data:`NO_WORKER_WAIT_S`.  ``scheduler_file`` is the file the
    address was read from, named in the messages.
    """
    field = "scheduler" if scheduler_file is None else "scheduler-file"
    n = _local_workers(scheduler)
    if n is not None:
        n = capped_workers(n, tasks)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError(f"{field}: --{field} needs Dask; install it with pip install 'p2sim[dask]'") from None
    if n is not None:
        # one single-threaded worker process per task slot: the simulations hold the GIL;
        # the scheduler's HTTP server takes any free port, so several clusters can coexist
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                          silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            yield DaskExecutor(client)
        return
    left = _Left(START_LIMIT_S - 1)
    address = check_scheduler(scheduler, field, local=False)
    where = address if scheduler_file is None else f"{address} (from {scheduler_file})"
    scheme = address.rpartition("://")[0]
    if scheme in TCP_SCHEMES:
        _reach(address, field, left)
    if scheme == "tcp":  # the other schemes need their connection arguments (TLS): Client alone connects
        _handshake(address, field, where, left)
    start = (f"dask worker {address}" if scheduler_file is None
             else f"dask worker --scheduler-file {scheduler_file}")
    try:
        client = Client(address, timeout=left(CONNECT_TIMEOUT_S))
    except (OSError, TimeoutError, ValueError) as e:
        raise InputError(f"{field}: cannot connect to {where}: {e}") from None
    except Exception as e:  # noqa: BLE001 - as in _handshake
        text = f"{type(e).__name__}: {e}"
        raise InputError(f"{field}: {where} answered, but not as a Dask scheduler does ({text[:100]})") from None
    with _closing(client):
        wait_s = left(NO_WORKER_WAIT_S)
        try:
            client.wait_for_workers(1, timeout=wait_s)
        except TimeoutError:
            raise InputError(f"{field}: no workers joined the scheduler at {where} within {wait_s:.0f} s; start "
                             f"workers with {start}") from None
        check_workers(client, field)
        yield DaskExecutor(client, field, where, f"start workers with {start}")


@contextmanager
def _closing(client: Any) -> Iterator[Any]:
    """Close ``client`` on the way out, without its "Failed to reconnect" log line when the scheduler went away
    (closing interrupts its reconnection; the error that ends the run says why already)."""
    try:
        yield client
    finally:
        log = logging.getLogger("distributed.client")
        level = log.level
        log.setLevel(logging.CRITICAL)
        try:
            client.close()
        finally:
            log.setLevel(level)


def check_workers(client: Any, field: str = "scheduler") -> None:
    """Refuse a cluster whose workers lack this version of p2sim (tasks would fail or differ)."""
    from importlib.metadata import version

    from ..util import version as own

    # importlib.metadata.version travels by reference to the standard library, so it runs
    # even on a worker without p2sim; there it returns PackageNotFoundError
    found = client.run(version, "p2sim", on_error="return")
    for worker, v in sorted(found.items()):
        if v != own.__version__:
            have = f"p2sim {v}" if isinstance(v, str) else "no p2sim"
            raise InputError(f"{field}: worker {worker} has {have}, this is p2sim {own.__version__}; install the same "
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
def make_executor(workers: int | None, scheduler: str | None = None, tasks: int | None = None,
                  scheduler_file: str | None = None) -> Iterator[Executor]:
    """``workers`` processes (``None``: all cores; 1: in-process), or Dask at ``scheduler``.

    The pool has at most as many processes as cores and as ``tasks`` (when given).
    ``scheduler_file`` is a file ``dask scheduler --scheduler-file`` wrote: the address is read
    from it when ``scheduler`` is ``None`` (else ``scheduler`` is the address read from it before).
    """
    if scheduler is not None or scheduler_file is not None:
        if workers is not None:
            option = "--scheduler" if scheduler_file is None else "--scheduler-file"
            raise InputError(f"workers: --workers sizes the local process pool; with {option} the scheduler's "
                             "workers run the simulations" + (" (give local:N instead)" if scheduler_file is None
                                                              else ""))
        if scheduler is None:
            scheduler = scheduler_from_file(scheduler_file)  # type: ignore[arg-type]
        with dask_executor(scheduler, tasks, None if scheduler_file is None else os.fspath(scheduler_file)) as ex:
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


def run_all(executor: Executor, fn: Callable[[T], R], items: list[T], label: str = "") -> list[R]:
    """Map ``fn`` over ``items`` in order, saying how far it is when the caller listens (the CLI): a tqdm bar
    on a terminal, a line every few seconds on stderr otherwise (:func:`~p2sim.util.log.progress`)."""
    out: list[Any] = []
    from tqdm import tqdm  # here, not at import: every command's start would pay for it

    # tqdm's disable=None turns the bar off when stderr is not a terminal (pipes, CI): progress prints lines there
    show = None if progress_enabled() else True
    with progress(label or "running", len(items), bar=True) as advance:
        for r in tqdm(executor.map(fn, items), total=len(items), desc=label, disable=show, leave=False):
            out.append(r)
            advance(1)
    return out
