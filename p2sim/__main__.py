"""``python -m p2sim``: the command line, as the ``p2sim`` script runs it."""

import sys

from .cli import script  # light: signals are answered before the heavy imports

sys.exit(script())
