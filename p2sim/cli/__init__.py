"""The ``p2sim`` command line: a thin shell over :mod:`p2sim.api`.

:mod:`.parser` declares the options, :mod:`.main` dispatches; each handler module turns
its command's options into an API call and prints the result with :mod:`p2sim.report`.
Nothing here decides anything about the model or the search.
"""

from .main import main

__all__ = ["main"]
