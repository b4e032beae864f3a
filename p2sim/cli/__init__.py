"""The ``p2sim`` command line: a thin shell over :mod:`p2sim.api`.

:mod:`.parser` declares the options, :mod:`.main` dispatches; each handler module turns
its command's options into an API call and prints the result with :mod:`p2sim.report`.
Nothing here decides anything about the model or the search.

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

from .main import main

__all__ = ["main"]
