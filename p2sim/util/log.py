"""What p2sim says while it works: job sizes, warnings and progress, through :mod:`logging`.

The library is silent unless its caller asks: the ``p2sim`` logger has a
:class:`logging.NullHandler`, so a program that configures no logging sees nothing (the
warnings are also in every result).  The command line installs :func:`cli_handler`, which
prints ``p2sim COMMAND: ...`` on stderr, flushed at once so that a line shows before a long
job even when piped; ``-q`` keeps warnings only, ``-v`` adds debugging detail.

Examples
--------
>>> import io, logging
>>> stream = io.StringIO()
>>> handler = cli_handler("rank", stream)
>>> LOG.addHandler(handler); LOG.setLevel(logging.INFO)
>>> announce("2 matrices"); warn("the buffer exceeds the GPU's memory")
>>> LOG.removeHandler(handler); LOG.setLevel(logging.NOTSET)
>>> print(stream.getvalue(), end="")
p2sim rank: 2 matrices
p2sim rank: warning: the buffer exceeds the GPU's memory
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["LOG", "announce", "warn", "progress_enabled", "progress", "progress_interval", "stderr_is_terminal",
           "cli_handler", "PROGRESS_INTERVAL_S"]

# How often a running job says how far it is (stderr, one line each time).  A few seconds: often enough that
# a job never looks hung, seldom enough that a log of an hour's run stays short.  P2SIM_PROGRESS_S overrides
# it (the tests use a fraction of a second).
PROGRESS_INTERVAL_S = 5.0

LOG = logging.getLogger("p2sim")
LOG.addHandler(logging.NullHandler())


def announce(text: str) -> None:
    """How much work is about to start (INFO)."""
    LOG.info(text)


def warn(text: str) -> None:
    """Something the user should know about the answer (WARNING)."""
    LOG.warning(text)


def progress_enabled() -> bool:
    """Whether progress bars may show: only when a caller listens at INFO (the CLI does; the API alone does not)."""
    return LOG.isEnabledFor(logging.INFO) and any(
        not isinstance(h, logging.NullHandler) for h in LOG.handlers)


def progress_interval() -> float:
    """Seconds between progress lines: ``P2SIM_PROGRESS_S`` when it is a positive number, else the default."""
    try:
        value = float(os.environ.get("P2SIM_PROGRESS_S", ""))
    except ValueError:
        return PROGRESS_INTERVAL_S
    return value if 0 < value < float("inf") else PROGRESS_INTERVAL_S


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


class _Phase:
    """What a job is doing now: a text, and how many of ``total`` it has done (``total`` may be unknown)."""

    def __init__(self, text: str, total: int | None, bar: bool) -> None:
        self.text, self.total, self.bar = text, total, bar
        self.done = 0
        self.started = time.monotonic()

    def line(self) -> str:
        elapsed = f"{time.monotonic() - self.started:.0f} s"
        if self.total:
            return f"{self.text}: {self.done}/{self.total} ({100 * self.done // self.total}%), {elapsed}"
        return f"{self.text}: {elapsed}"


_PHASES: list[_Phase] = []  # innermost last; changed by the main thread, read by the ticker
_TICKER: list[tuple[threading.Thread, threading.Event]] = []


def _tick(stop: threading.Event, interval: float) -> None:
    while not stop.wait(interval):
        phase = _PHASES[-1] if _PHASES else None
        if phase is not None and not (phase.bar and stderr_is_terminal()):  # a bar on a terminal says it already
            LOG.info(phase.line())


@contextmanager
def progress(text: str, total: int | None = None, bar: bool = False) -> Iterator[Callable[[int], None]]:
    """Within the block, a line ``TEXT: DONE/TOTAL (P%), S s`` (or ``TEXT: S s``) every few seconds on stderr.

    Yields a function that adds to DONE.  Lines go through the ``p2sim`` logger at INFO, and
    only where a caller listens (:func:`progress_enabled`: the command line), so they show when
    stderr is a pipe or a file as on a terminal; ``bar``: the caller shows a tqdm bar, so on a
    terminal no lines are printed for this phase.  Blocks nest; the innermost is reported.  A
    block shorter than the interval prints nothing.
    """
    phase = _Phase(text, total, bar)

    def advance(n: int = 1) -> None:
        phase.done += n

    if not progress_enabled():
        yield advance
        return
    _PHASES.append(phase)
    owner = not _TICKER
    if owner:
        stop = threading.Event()
        thread = threading.Thread(target=_tick, args=(stop, progress_interval()), name="p2sim-progress",
                                  daemon=True)
        _TICKER.append((thread, stop))
        thread.start()
    try:
        yield advance
    finally:
        _PHASES.remove(phase)
        if owner:
            thread, stop = _TICKER.pop()
            stop.set()
            thread.join()


class _Formatter(logging.Formatter):
    def __init__(self, command: str) -> None:
        super().__init__()
        self.command = command

    def format(self, record: logging.LogRecord) -> str:
        kind = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        return f"p2sim {self.command}: {kind}{record.getMessage()}"


def cli_handler(command: str, stream: TextIO | None = None) -> logging.Handler:
    """A handler printing ``p2sim COMMAND: text`` (``p2sim COMMAND: warning: text``) on ``stream`` (stderr)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_Formatter(command))
    return handler
