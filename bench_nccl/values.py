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
