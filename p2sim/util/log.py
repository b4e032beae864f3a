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
from typing import TextIO

__all__ = ["LOG", "announce", "warn", "progress_enabled", "cli_handler"]

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
