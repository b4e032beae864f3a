"""Ending a run on a signal: the whole run stops, nothing is left behind, nothing is half-written.

* :func:`terminate_on_sigterm` turns ``SIGTERM`` (a user's ``kill``, a job scheduler's time
  limit) into a :class:`Terminated` exception in the main thread, as Python already turns
  ``SIGINT`` (Ctrl-C) into :class:`KeyboardInterrupt`: both unwind the stack, so executors shut
  their workers down and temporary files are removed on the way out.
* :func:`worker_init` prepares a worker process: Ctrl-C in a terminal reaches every process
  of the group, and only the main process should answer it (no traceback per worker); and a
  worker dies with its parent even when the parent is killed outright (``SIGKILL``: Linux's
  ``PR_SET_PDEATHSIG``).
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

import ctypes
import os  # noqa: F401 (the example above uses it)
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Terminated", "terminate_on_sigterm", "worker_init", "deferred_signals", "EXIT_INTERRUPTED",
           "EXIT_TERMINATED"]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell's convention
EXIT_TERMINATED = 143  # 128 + SIGTERM
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_HELD = {signal.SIGINT, signal.SIGTERM}


class Terminated(BaseException):
    """The run received ``SIGTERM`` (a :class:`BaseException`, like :class:`KeyboardInterrupt`,
    so that ``except Exception`` does not swallow it)."""

    exit_status = EXIT_TERMINATED


def _raise_terminated(signum: int, frame: object) -> None:
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


def worker_init() -> None:
    """Run first in every worker process (a process pool's ``initializer``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process answers Ctrl-C and stops the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a worker told to stop, stops
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):  # no prctl: the pool's shutdown still stops the workers
            pass


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
