"""``python -m p2sim``: the command line, as the ``p2sim`` script runs it."""

import sys

from .cli import main  # light: signals are answered before the heavy imports
from .util.allocator import keep_freed_memory

keep_freed_memory()  # this process's temporaries reused rather than faulted in again (util/allocator.py)
sys.exit(main())
