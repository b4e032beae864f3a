"""``python -m p2sim``: the command line, as the ``p2sim`` script runs it."""

import sys

from .cli import main  # light: signals are answered before the heavy imports

sys.exit(main())
