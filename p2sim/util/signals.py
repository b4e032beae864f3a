"""Ending a run on a signal: the whole run stops, nothing is left behind, nothing is half-written.

* :func:`terminate_on_sigterm` turns ``SIGTERM`` (a user's ``kill``, a job scheduler's time
  limit) into a :class:`Terminated` exception in the main thread, as Python already turns
  ``SIGINT`` (Ctrl-C) into :class:`KeyboardInterrupt`: both unwind the stack, so executors shut
  their workers down and temporary files are removed on the way out.
* :func:`worker_init` prepares a worker process: Ctrl-C in a terminal reaches every process
  of the group, and only the main process should answer it (no traceback per worker); and a
  worker dies with its parent even when the parent is killed outright (``SIGKILL``: Linux's
  ``PR_SET_PDEATHSIG``).
* :func:`answering_signals` is the command line's whole run: from its first line (before the heavy
  imports) ``SIGINT`` and ``SIGTERM`` raise; :func:`ending` ignores any further one once the run has
  said how it ends, so a second Ctrl-C cannot cut the clean-up short or print a second line.
* :func:`deferred_signals` holds ``SIGINT`` and ``SIGTERM`` back during a few renames, so a
  report is replaced as a whole or not at all; they are delivered right after.

Examples
--------
>>> with terminate_on_sigterm():
...     try:
...         os.kill(os.getpid(), signal.SIGTERM)
...     except Terminated as e:
...         print(e.exit_status)
143
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Terminated", "terminate_on_sigterm", "answering_signals", "ended_by", "ending", "worker_init", "deferred_signals",
           "EXIT_INTERRUPTED", "EXIT_TERMINATED"]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell's convention
EXIT_TERMINATED = 143  # 128 + SIGTERM
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_HELD = {signal.SIGINT, signal.SIGTERM}


class Terminated(BaseException):
    """The run received ``SIGTERM`` (a :class:`BaseException`, like :class:`KeyboardInterrupt`,
    so that ``except Exception`` does not swallow it)."""

    exit_status = EXIT_TERMINATED


def _raise_terminated(signum: int, frame: object) -> None:
    if _ANSWERING:
        _RECEIVED.append(signum)
    raise Terminated()


@contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """Within the block, ``SIGTERM`` raises :class:`Terminated` (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def answering_signals() -> Iterator[None]:
    """A command line's run: within the block ``SIGTERM`` raises :class:`Terminated` and ``SIGINT``
    :class:`KeyboardInterrupt` (unless the process was started with it ignored, as a shell starts a
    background job), and :func:`ended_by` knows that one came; on the way out the handlers are as they
    were (main thread only; elsewhere a no-op).

    A library may turn the signal's exception into one of its own (numpy's import, interrupted, raises
    an ``ImportError`` that no longer holds it): :func:`ended_by` knows it for the signal's.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signal.SIGINT: signal.getsignal(signal.SIGINT), signal.SIGTERM: signal.getsignal(signal.SIGTERM)}
    _RECEIVED.clear()
    _ANSWERING.append(True)
    if previous[signal.SIGINT] is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _raise_interrupted)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        _ANSWERING.pop()
        _RECEIVED.clear()


def ended_by(e: BaseException) -> tuple[str, int] | None:
    """How a run that raised ``e`` ends: ``("interrupted", 130)``, ``("terminated", 143)``, or ``None`` when
    no signal ended it.  Within :func:`answering_signals` any exception after a signal came counts as
    the signal's (the library that raised it was interrupted).

    Examples
    --------
    >>> ended_by(KeyboardInterrupt()), ended_by(Terminated()), ended_by(ValueError())
    (('interrupted', 130), ('terminated', 143), None)
    """
    if isinstance(e, KeyboardInterrupt):
        return "interrupted", EXIT_INTERRUPTED
    if isinstance(e, Terminated):
        return "terminated", EXIT_TERMINATED
    if _ANSWERING and _RECEIVED:
        return ("interrupted", EXIT_INTERRUPTED) if _RECEIVED[0] == signal.SIGINT else ("terminated", EXIT_TERMINATED)
    return None


def ending() -> None:
    """The run has said how it ends (``interrupted``, ``terminated``): within :func:`answering_signals`,
    further ``SIGINT`` and ``SIGTERM`` are ignored until its block ends (outside it, a no-op: a library
    caller's handlers are its own)."""
    if _ANSWERING and threading.current_thread() is threading.main_thread():
        for s in _HELD:
            signal.signal(s, signal.SIG_IGN)


def _raise_interrupted(signum: int, frame: object) -> None:
    if _ANSWERING:
        _RECEIVED.append(signum)
    raise KeyboardInterrupt


_ANSWERING: list[bool] = []  # answering_signals blocks open (the command line's run)
_RECEIVED: list[int] = []  # the signals that came within them


def worker_init() -> None:
    """Run first in every worker process (a process pool's ``initializer``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process answers Ctrl-C and stops the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a worker told to stop, stops
    if sys.platform.startswith("linux"):
        import ctypes  # here, not at import: the command line imports this module first, before anything else

        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):  # no prctl: the pool's shutdown still stops the workers
            return
        # a parent killed before the death signal was asked for (a worker slow to start, a loaded machine)
        # sends none: the worker has been handed to another process by then, and goes as the signal would
        import multiprocessing

        parent = multiprocessing.parent_process()
        if parent is not None and os.getppid() != parent.pid:
            os._exit(1)


@contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold ``SIGINT`` and ``SIGTERM`` back during the block; they arrive as it ends.

    Python runs signal handlers in the main thread whichever thread the kernel hands a signal to,
    so the block swaps in a handler that only notes the signal, and raises what it noted again
    once the previous handlers are back (a thread mask would not do: another thread may take it).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: noted.append(signum)) for s in _HELD}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        for s in noted:
            signal.raise_signal(s)
