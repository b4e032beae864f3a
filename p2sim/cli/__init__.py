"""The ``p2sim`` command line: a thin shell over :mod:`p2sim.api`.

:mod:`.parser` declares the options, :mod:`.main` dispatches; each handler module turns
its command's options into an API call and prints the result with :mod:`p2sim.report`.
Nothing here decides anything about the model or the search.

:func:`script` is the ``p2sim`` script's entry (and ``python -m p2sim``'s): the C allocator's thresholds
(:mod:`p2sim.util.allocator`), then :func:`main`, which answers Ctrl-C and ``SIGTERM`` from its first line,
before it imports the rest (numpy, networkx and SimPy take a second or more to import): a signal
at any moment of a run is one line and exit status 130 or 143, never a traceback.

Modules
-------
:mod:`.common`
    What every handler shares: the API call, the answer printed, the ``--out`` report, the output check.
:mod:`.formalism`
    ``p2sim placements`` and ``p2sim synth``.
:mod:`.main`
    ``p2sim``: parse the options, run the command's handler, print errors as one line.
:mod:`.measurements`
    ``p2sim validate``, ``p2sim calibrate`` and ``p2sim check``.
:mod:`.parser`
    The ``p2sim`` command line's options: one subparser per command, defaults from :mod:`p2sim.options`.
:mod:`.simulate`
    ``p2sim systems``, ``p2sim topo`` and ``p2sim simulate``.
:mod:`.studies`
    ``p2sim rank``, ``plan`` and ``whatif``: the answers, as the API gives them, printed.
:mod:`.sweep`
    ``p2sim sweep``: one collective over a range of sizes, in nccl-tests' layout.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence

# light (the standard library's signal and threading): imported before anything heavy
from ..util.allocator import keep_freed_memory
from ..util.signals import answering_signals, ended_by, ending

__all__ = ["main", "script"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``p2sim`` with ``argv`` (default ``sys.argv[1:]``); return its exit status.

    Signals are answered before :mod:`.main` and everything it needs is imported: a Ctrl-C while
    numpy loads is ``p2sim COMMAND: interrupted`` and 130, as it is later in the run.
    """
    with answering_signals():
        try:
            from .main import main as run  # numpy, networkx, SimPy: the first second or more of every run

            return run(argv)
        except BaseException as e:  # a signal before the command's own handling began (the imports above)
            how = ended_by(e)
            if how is None:
                raise
            ending()
            print(f"{_prog(argv)}: {how[0]}", file=sys.stderr)
            return how[1]


def script() -> int:
    """The ``p2sim`` script's and ``python -m p2sim``'s entry: :func:`main` in a process whose C allocator keeps
    freed memory for numpy's next temporaries (:mod:`p2sim.util.allocator`; a library caller of :func:`main`
    keeps its process's allocator as it is)."""
    keep_freed_memory()
    return main()


def _prog(argv: Sequence[str] | None) -> str:
    """``p2sim COMMAND`` as the command's own messages name it, guessed without the parser (not imported yet).

    Examples
    --------
    >>> _prog(["rank", "--system", "v100"]), _prog(["--help"]), _prog([])
    ('p2sim rank', 'p2sim', 'p2sim')
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return f"p2sim {args[0]}" if args and args[0].isalpha() and args[0].islower() else "p2sim"


class _Package(types.ModuleType):
    """This package, whose ``main`` stays the function above: Python sets a package's attribute to a submodule
    when it first loads it, and :mod:`.main` is loaded late (on the first run, or by whoever imports it), after
    which ``from p2sim.cli import main`` would give the module."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "main" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
