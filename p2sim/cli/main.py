"""``p2sim``: parse the options, run the command's handler, print errors as one line.

Every command validates its input and reports a bad value as one line on stderr with exit
status 2; Ctrl-C and ``SIGTERM`` end the whole run (workers included) with one line and exit
status 130 or 143; results go to stdout (a table, or one JSON object with ``--json``).  What the
library says while it works (job sizes, warnings) reaches stderr through the ``p2sim``
logger as ``p2sim COMMAND: ...``; ``-q`` keeps the warnings only, ``-v`` adds detail.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable, Sequence

from ..studies.pool import stop_pools
from ..util.errors import P2SimError
from ..util.fileio import guarded_stdout
from ..util.log import LOG, cli_handler
from ..util.signals import ended_by, ending, terminate_on_sigterm
from .common import check_inputs, check_outputs_not_inputs
from .parser import EXIT_INPUT, build_parser

__all__ = ["main"]


def _handler(name: str) -> Callable:
    module, func = name.split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), func)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    prog, handler, level = "p2sim", None, LOG.level
    try:
        # stdout's failures (a full disk) are one line like any error, --help's and the answers' alike
        with guarded_stdout():
            args = parser.parse_args(argv)
            name: str | None = getattr(args, "func", None)
            if name is None:
                parser.print_help()
                return EXIT_INPUT
            prog = f"p2sim {args.command}"
            handler = cli_handler(args.command)
            LOG.addHandler(handler)
            LOG.setLevel(logging.WARNING if getattr(args, "quiet", False) else
                         logging.DEBUG if getattr(args, "verbose", False) else logging.INFO)
            with terminate_on_sigterm():
                check_inputs(args)  # every command's input files, looked at before anything opens one
                check_outputs_not_inputs(args)  # every command's outputs, before its handler does any work
                return _handler(name)(args)
    except BaseException as e:
        # Ctrl-C (the workers are stopped and temporary files gone by now), SIGTERM (kill, a scheduler's
        # time limit), or what a library raised once one came (numpy's import turns it into an ImportError)
        how = ended_by(e)
        if how is not None:
            ending()  # a second signal must not print a second line, nor cut the pools' stop below short
            print(f"{prog}: {how[0]}", file=sys.stderr)
            return how[1]
        if isinstance(e, P2SimError):
            print(f"{prog}: error: {e}", file=sys.stderr)
            return EXIT_INPUT
        if isinstance(e, BrokenPipeError):
            return 0
        raise
    finally:
        # whatever ended the command, no worker pool outlives it into the interpreter's exit hooks (whose
        # join of a pool's thread can race with that thread and print a traceback after the last line)
        stop_pools()
        if handler is not None:
            LOG.removeHandler(handler)
        LOG.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())
