"""The benchmark's data: small integers, so that float32 sums are exact.

Chunk ``i`` of rank ``r`` starts as ``((r * 131 + i * 31 + e) % 7) + 1`` for element
``e``; after a program, a chunk holds the sum of those over the contributions the
semantics says it has (the whole reduction group, once a program is done).  Sums
stay below 2^24 for up to two million ranks, so float32 holds them exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["initial", "expected"]


def initial(xp: Any, rank: int, rows: Sequence[int], chunk: int, dtype: Any) -> Any:
    """Packed initial values of ``rows`` (shape ``(len(rows), chunk)``)."""
    i = xp.asarray(list(rows), dtype=xp.int64)[:, None]
    e = xp.arange(chunk, dtype=xp.int64)[None, :]
    return (((rank * 131 + i * 31 + e) % 7) + 1).astype(dtype)


def expected(xp: Any, contributors: Sequence[int], rows: Sequence[int], chunk: int, dtype: Any) -> Any:
    """Packed sums over ``contributors`` of their initial values of ``rows``."""
    out = xp.zeros((len(rows), chunk), dtype=dtype)
    for m in contributors:
        out += initial(xp, m, rows, chunk, dtype)
    return out


def pattern(rank: int, row: int, count: int) -> Any:
    """``initial(numpy, rank, [row], count, float32)[0]``, built fast for large counts.

    The values repeat every 7 elements, so one period is tiled instead of computing
    ``count`` residues (a 1 GiB buffer in a fraction of a second).

    Examples
    --------
    >>> import numpy as np
    >>> bool((pattern(3, 2, 40) == initial(np, 3, [2], 40, np.float32)[0]).all())
    True
    """
    return pattern_sum([rank], row, count)


def pattern_sum(ranks: Sequence[int], row: int, count: int) -> Any:
    """The sum over ``ranks`` of ``pattern(rank, row, count)``, summed over one period and tiled.

    Examples
    --------
    >>> import numpy as np
    >>> bool((pattern_sum([0, 1, 9], 4, 30) == pattern(0, 4, 30) + pattern(1, 4, 30) + pattern(9, 4, 30)).all())
    True
    """
    import numpy as np

    e = np.arange(7, dtype=np.int64)
    period = sum(((r * 131 + row * 31 + e) % 7 + 1) for r in ranks).astype(np.float32)
    out = np.empty(max(count, 7), np.float32)
    out[:7] = period
    done = 7
    while done < count:  # doubling copies: memcpy speed (np.tile of a 7-element period is far slower)
        step = min(done, count - done)
        out[done:done + step] = out[:step]
        done += step
    return out[:count]
