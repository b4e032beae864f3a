"""Sorting-free set operations on small non-negative integers (link ids, class ids).

:func:`numpy.unique` sorts: O(n log n) per call, which dominated a 16,384-GPU ranking (its
callers pass millions of link ids, all below the topology's link count).  When the values
are non-negative integers below a bound not much larger than their number, a table of the
bound's size gives the same answers in linear time.  Results are identical to
``numpy.unique``'s: sorted distinct values, the inverse, and the first occurrences.

Examples
--------
>>> import numpy as np
>>> x = np.array([5, 2, 5, 0, 2])
>>> used, inverse = unique_inverse(x)
>>> used.tolist(), inverse.tolist()
([0, 2, 5], [2, 1, 2, 0, 1])
>>> unique_first(x)[1].tolist()    # where each distinct value first occurs
[3, 1, 0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["unique_inverse", "unique_first", "row_order"]

_SPARSE = 8  # a bound above this many times the length (plus a page) is left to numpy.unique's sort
_WIDE = 64  # rows of at least this many columns are sorted whole (row_order); narrower ones a column a pass


def _dense(x: np.ndarray) -> int | None:
    """The table size to use, or None when sorting is the better way (empty, negative, or sparse values)."""
    if x.dtype.kind not in "iu" or x.size == 0:
        return None
    lo, hi = int(x.min()), int(x.max())
    if lo < 0 or hi >= _SPARSE * x.size + 4096:
        return None
    return hi + 1


def unique_inverse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(x, return_inverse=True)`` of a 1-d integer array (the inverse flat)."""
    x = np.asarray(x).reshape(-1)
    bound = _dense(x)
    if bound is None:
        used, inverse = np.unique(x, return_inverse=True)
        return used, inverse.reshape(-1)
    seen = np.zeros(bound, dtype=bool)
    seen[x] = True
    used = np.flatnonzero(seen).astype(x.dtype, copy=False)
    remap = np.cumsum(seen, dtype=np.int64) - 1
    return used, remap[x]


def unique_first(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(x, return_index=True)`` of a 1-d integer array: distinct values and first positions."""
    x = np.asarray(x).reshape(-1)
    bound = _dense(x)
    if bound is None:
        return np.unique(x, return_index=True)
    first = np.full(bound, x.size, dtype=np.int64)
    np.minimum.at(first, x, np.arange(x.size, dtype=np.int64))
    used = np.flatnonzero(first < x.size)
    return used.astype(x.dtype, copy=False), first[used]


def row_order(key: np.ndarray) -> np.ndarray:
    """``numpy.lexsort(key.T[::-1])`` of a 2-d integer array: the stable order of its rows, compared column
    by column as int64.

    ``lexsort`` makes a pass per column, which on a few rows of a thousand columns (a step's groups of 512
    GPUs, one key column per member) costs a few ms; such rows are compared whole instead: each int64 with
    its sign bit flipped and its bytes big-endian compares as bytes as the integer compares, so the rows'
    bytes (a void dtype, ``memcmp``) sort in the same order, ties kept in place by a stable sort.

    >>> row_order(np.array([[1, -5], [0, 9], [1, -7], [0, 9]])).tolist()
    [1, 3, 2, 0]
    """
    key = np.asarray(key)
    if key.ndim != 2 or key.shape[1] < _WIDE:
        return np.lexsort(key.T[::-1])
    flipped = np.ascontiguousarray(key, dtype=np.int64).view(np.uint64) ^ np.uint64(1 << 63)
    rows = np.ascontiguousarray(flipped.astype(">u8")).view(np.dtype((np.void, 8 * key.shape[1]))).reshape(-1)
    return np.argsort(rows, kind="stable")
