"""``python -m p2sim``: the command line, as the ``p2sim`` script runs it."""

import sys

from .cli.main import main

sys.exit(main())
