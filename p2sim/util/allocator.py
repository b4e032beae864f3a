"""The C allocator's thresholds for a ``p2sim`` command's process: numpy's temporaries reused, not faulted in again.

A large search allocates and frees arrays of a few MiB by the thousand (a 16,384-GPU step's link ids,
loads and symmetry tables).  glibc's ``malloc`` serves each from a fresh ``mmap`` above its threshold
(128 KiB, raised as such blocks are freed) and returns the heap's top above its trim threshold, so
every such array is faulted in page by page again: on the shared development machine a
``superpod-h100`` rank at 2,048 nodes took 640,000 minor page faults and 1.5 s of system time (of 17
CPU s), a flat ``h100`` rank 470,000 and 0.7 s (of 4.5).  With blocks below 64 MiB taken from the heap
and the heap kept up to 256 MiB above its top, the same runs took 45,000 faults and 0.3 s, with the
same peak within 2 % (271 -> 277 MiB) and the same answers: where memory comes from changes no number.

Only for the command line's process (the ``p2sim`` script and ``python -m p2sim``, through :func:`p2sim.cli.script`; a library caller's process is left as it
is), only where the C library has ``mallopt`` (glibc), and not where the user set the thresholds
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``).
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["keep_freed_memory"]

# glibc's malloc.h: mallopt's parameters
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# blocks of 64 MiB and more still come from (and go back to) mmap; the heap's top is returned past 256 MiB
# (measured above: the arrays that were faulted in again are up to a few tens of MiB)
MMAP_BYTES = 64 * 2**20
TRIM_BYTES = 256 * 2**20
USER_SET = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_freed_memory(mmap_bytes: int = MMAP_BYTES, trim_bytes: int = TRIM_BYTES) -> bool:
    """Set glibc's mmap and trim thresholds for this process; whether they were set (False off Linux,
    without ``mallopt``, or where the user's environment names either threshold)."""
    if not sys.platform.startswith("linux") or any(v in os.environ for v in USER_SET):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # both: set alone, the mmap threshold would leave the trim threshold at its 128 KiB (no longer raised)
    return bool(mallopt(M_TRIM_THRESHOLD, trim_bytes)) and bool(mallopt(M_MMAP_THRESHOLD, mmap_bytes))
