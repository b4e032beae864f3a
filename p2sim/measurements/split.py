"""nccl-tests' ``NCCL_TESTS_SPLIT``: the expression that runs a step's groups as concurrent communicators.

nccl-tests (``src/common.cu``) gives MPI process ``p`` the color ``p & v`` (``AND v``),
``p | v`` (``OR v``), ``p % v`` (``MOD v``) or ``p / v`` (``DIV v``) and splits the world by
color; each color is one communicator and all run at once.  With one GPU per process
(``-g 1``) the process is the rank.  :func:`split_expression` finds an expression whose
colors are exactly a step's groups, trying ``DIV``, ``MOD`` then ``AND`` (a mask keeps the
bits that stay fixed inside a group; powers of two only).

Examples
--------
>>> split_expression([(0, 1, 2, 3), (4, 5, 6, 7)], 8)
'DIV 4'
>>> split_expression([(0, 2, 4, 6), (1, 3, 5, 7)], 8)
'MOD 2'
>>> split_expression([(0, 1, 4, 5), (2, 3, 6, 7)], 8)
'AND 0x2'
>>> split_expression([(0, 1, 2, 3, 4, 5, 6, 7)], 8) is None   # one group: no split
True
>>> split_expression([(0, 1, 5), (2, 3, 4)], 6)
Traceback (most recent call last):
...
ValueError: no NCCL_TESTS_SPLIT expression (DIV, MOD or AND) gives these groups
"""

from __future__ import annotations

from collections.abc import Sequence

from .nccltests_common import split_color

__all__ = ["split_expression", "split_colors"]


def split_colors(expression: str, ranks: int) -> list[int | None]:
    """Each rank's color under an expression (``"DIV 8"``), as nccl-tests computes it."""
    return [split_color(f"NCCL_TESTS_SPLIT={expression}", r) for r in range(ranks)]


def _gives(expression: str, groups: Sequence[Sequence[int]], ranks: int) -> bool:
    colors = split_colors(expression, ranks)
    by_color: dict[int | None, set[int]] = {}
    for r, c in enumerate(colors):
        by_color.setdefault(c, set()).add(r)
    return sorted(map(sorted, by_color.values())) == sorted(sorted(g) for g in groups)


def split_expression(groups: Sequence[Sequence[int]], ranks: int) -> str | None:
    """The ``NCCL_TESTS_SPLIT`` value that makes ``groups`` the communicators (``None``: one group of all).

    The groups must cover ranks ``0..ranks-1`` once each; raises :class:`ValueError` when no
    single DIV, MOD or AND expression gives them.
    """
    if sorted(r for g in groups for r in g) != list(range(ranks)):
        raise ValueError("the groups do not cover every rank once: nccl-tests would run the others too")
    if len(groups) == 1:
        return None
    size = len(groups[0])
    candidates = [f"DIV {size}", f"MOD {len(groups)}"]
    if ranks & (ranks - 1) == 0:
        varying = 0
        for g in groups:
            for r in g:
                varying |= r ^ g[0]
        candidates.append(f"AND {hex((ranks - 1) & ~varying)}")
    for expr in candidates:
        if _gives(expr, groups, ranks):
            return expr
    raise ValueError("no NCCL_TESTS_SPLIT expression (DIV, MOD or AND) gives these groups")
