"""Parallelism matrices: how parallelism axes are laid over a hardware hierarchy.

A parallelism matrix ``X`` has one row per axis and one column per hierarchy level;
``X[i][j]`` says how many ways axis ``i`` is split across level ``j``. Column
products equal the level cardinalities, row products equal the axis sizes.

Device convention (formalism section 2): inside level ``j`` the coordinate ``c_j``
is split into one digit per axis, lower-numbered axis more significant; a device's
coordinate on axis ``i`` is the mixed-radix number of its digits of axis ``i``,
outer level most significant; the global device index is the mixed-radix number of
``(c_0, ..., c_n)``.  Hence the global index is simply the mixed-radix number of all
digits ordered ``(a_00, a_10, .., a_m0, a_01, ..)`` -- :meth:`Placement.digit_table`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..util.errors import PlacementError

Matrix = tuple[tuple[int, ...], ...]

__all__ = [
    "Matrix",
    "Placement",
    "check_sizes",
    "enumerate_matrices",
    "count_matrices",
    "MAX_DEVICES",
    "format_matrix",
    "parse_matrix",
]


# far beyond any cluster built (the largest hold some 10^5 GPUs); it also bounds the trial
# division that factors the device count and the device arrays of a placement
MAX_DEVICES = 2**24


def _positive_ints(values: Sequence[int], field: str) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise PlacementError(f"{field}: {v!r} is not a positive integer")
        out.append(int(v))
    if not out:
        raise PlacementError(f"{field}: the list is empty")
    return tuple(out)


def check_sizes(hierarchy: Sequence[int], axes: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validate a hierarchy and axis sizes; return them as tuples of ints.

    Raises :class:`PlacementError` when an entry is not a positive integer or the
    products differ (no matrix can exist then).
    """
    h = _positive_ints(hierarchy, "hierarchy")
    p = _positive_ints(axes, "axes")
    if math.prod(h) > MAX_DEVICES:
        raise PlacementError(f"hierarchy: {','.join(map(str, h))} has {math.prod(h)} devices, more than "
                             f"{MAX_DEVICES} (2^24), beyond any cluster")
    if math.prod(h) != math.prod(p):
        raise PlacementError(
            f"axes: the product of {','.join(map(str, p))} is {math.prod(p)}, "
            f"but the hierarchy {','.join(map(str, h))} has {math.prod(h)} devices"
        )
    return h, p


def _prime_exponents(n: int) -> dict[int, int]:
    out: dict[int, int] = {}
    q = 2
    while q * q <= n:
        while n % q == 0:
            out[q] = out.get(q, 0) + 1
            n //= q
        q += 1
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def _tables(rows: tuple[int, ...], cols: tuple[int, ...]) -> list[tuple[tuple[int, ...], ...]]:
    """All non-negative integer matrices with the given row and column sums."""
    if len(rows) == 1:
        return [(cols,)]
    out = []
    first, rest = rows[0], rows[1:]

    def fill(j: int, left: int, acc: list[int]) -> None:
        if j == len(cols) - 1:
            if left <= cols[j]:
                row = tuple(acc + [left])
                remaining = tuple(c - r for c, r in zip(cols, row))
                out.extend((row,) + t for t in _tables(rest, remaining))
            return
        for v in range(min(left, cols[j]) + 1):
            fill(j + 1, left - v, acc + [v])

    fill(0, first, [])
    return out


def enumerate_matrices(hierarchy: Sequence[int], axes: Sequence[int]) -> list[Matrix]:
    """Every parallelism matrix of ``axes`` over ``hierarchy``, in lexicographic order.

    A matrix factorises prime by prime: for each prime ``q`` the exponents of ``q``
    in the entries form a non-negative integer table whose row sums are the
    exponents in the axis sizes and whose column sums are those in the level
    cardinalities.  Enumerating those small tables and multiplying them out avoids
    any search over integer matrices.

    Examples
    --------
    >>> [format_matrix(m) for m in enumerate_matrices([4, 16], [4, 16])]
    ['[[1 4] [4 4]]', '[[2 2] [2 8]]', '[[4 1] [1 16]]']
    """
    h, p = check_sizes(hierarchy, axes)
    per_prime = []
    for q in sorted(_prime_exponents(math.prod(h))):
        row_sums = tuple(_prime_exponents(x).get(q, 0) for x in p)
        col_sums = tuple(_prime_exponents(x).get(q, 0) for x in h)
        per_prime.append([(q, t) for t in _tables(row_sums, col_sums)])
    out = []
    for combo in itertools.product(*per_prime):
        m = [[1] * len(h) for _ in p]
        for q, table in combo:
            for i, row in enumerate(table):
                for j, e in enumerate(row):
                    m[i][j] *= q**e
        out.append(tuple(tuple(r) for r in m))
    out.sort(key=lambda mat: [v for row in mat for v in row])
    return out


def _count_tables(rows: tuple[int, ...], cols: tuple[int, ...]) -> int:
    """How many non-negative integer matrices have these row and column sums (without listing them)."""
    memo: dict[tuple[int, tuple[int, ...]], int] = {}

    def count(i: int, left: tuple[int, ...]) -> int:
        if i == len(rows) - 1:
            return 1 if sum(left) == rows[i] else 0
        # the count does not depend on the order of the columns
        key = (i, tuple(sorted(left)))
        if key in memo:
            return memo[key]
        total = 0

        def fill(j: int, rest: int, acc: list[int]) -> None:
            nonlocal total
            if j == len(left) - 1:
                if rest <= left[j]:
                    row = acc + [rest]
                    total += count(i + 1, tuple(c - r for c, r in zip(left, row)))
                return
            for v in range(min(rest, left[j]) + 1):
                fill(j + 1, rest - v, acc + [v])

        fill(0, rows[i], [])
        memo[key] = total
        return total

    return count(0, cols)


def count_matrices(hierarchy: Sequence[int], axes: Sequence[int]) -> int:
    """How many parallelism matrices :func:`enumerate_matrices` would list, counted without listing them.

    The product over primes of the number of exponent tables, each counted by a
    recursion over the rows memoised on the sorted remaining column sums, so a
    12-level hierarchy with 12! matrices is counted in milliseconds.

    Examples
    --------
    >>> count_matrices([4, 16], [4, 16])
    3
    >>> count_matrices([2] * 12, [2] * 12)
    479001600
    """
    h, p = check_sizes(hierarchy, axes)
    total = 1
    for q in sorted(_prime_exponents(math.prod(h))):
        row_sums = tuple(_prime_exponents(x).get(q, 0) for x in p)
        col_sums = tuple(_prime_exponents(x).get(q, 0) for x in h)
        total *= _count_tables(row_sums, col_sums)
    return total


def format_matrix(matrix: Matrix) -> str:
    """Text form of a matrix, rows in brackets: ``[[2 2] [2 8]]``."""
    return "[" + " ".join("[" + " ".join(str(v) for v in row) + "]" for row in matrix) + "]"


_ROW = re.compile(r"\[([^\[\]]*)\]")


def parse_matrix(text: str) -> Matrix:
    """Parse ``[[2 2] [2 8]]`` (commas between numbers are accepted too)."""
    s = text.strip()
    if not (s.startswith("[") and s.endswith("]")):
        raise PlacementError(f"matrix: {text!r} is not of the form [[a b] [c d]]")
    inner = s[1:-1]
    rows = _ROW.findall(inner)
    if not rows or _ROW.sub("", inner).replace(",", "").strip():
        raise PlacementError(f"matrix: {text!r} is not of the form [[a b] [c d]]")
    out = []
    for r in rows:
        parts = r.replace(",", " ").split()
        try:
            vals = tuple(int(x) for x in parts)
        except ValueError:
            raise PlacementError(f"matrix: {text!r} has a non-integer entry") from None
        if not vals or min(vals) < 1:
            raise PlacementError(f"matrix: {text!r} needs positive integer entries in every row")
        out.append(vals)
    if len({len(r) for r in out}) != 1:
        raise PlacementError(f"matrix: {text!r} has rows of different lengths")
    return tuple(out)


@dataclass(frozen=True)
class Placement:
    """A parallelism matrix over a hierarchy, with the device layout it implies.

    Examples
    --------
    >>> pl = Placement.of([2, 4], [4, 2], [[2, 2], [1, 2]])
    >>> pl.axis_table().tolist()   # global index by (axis-0 coord, axis-1 coord)
    [[0, 1], [2, 3], [4, 5], [6, 7]]
    """

    hierarchy: tuple[int, ...]
    axes: tuple[int, ...]
    matrix: Matrix

    @classmethod
    def of(cls, hierarchy: Sequence[int], axes: Sequence[int], matrix: Sequence[Sequence[int]]) -> Placement:
        """Build and validate a placement (raises :class:`PlacementError`)."""
        h, p = check_sizes(hierarchy, axes)
        m = tuple(tuple(int(v) for v in row) for row in matrix)
        text = format_matrix(m)
        if len(m) != len(p):
            raise PlacementError(f"matrix: {text} has {len(m)} rows but there are {len(p)} axes")
        for i, row in enumerate(m):
            if len(row) != len(h):
                raise PlacementError(f"matrix: {text} row {i} has {len(row)} entries but the hierarchy has {len(h)} levels")
            if math.prod(row) != p[i]:
                raise PlacementError(f"matrix: {text} row {i} multiplies to {math.prod(row)}, not axis size {p[i]}")
        for j in range(len(h)):
            col = math.prod(m[i][j] for i in range(len(p)))
            if col != h[j]:
                raise PlacementError(f"matrix: {text} column {j} multiplies to {col}, not level cardinality {h[j]}")
        return cls(h, p, m)

    @property
    def devices(self) -> int:
        return math.prod(self.hierarchy)

    @cached_property
    def _digits(self) -> np.ndarray:
        shape = [self.matrix[i][j] for j in range(len(self.hierarchy)) for i in range(len(self.axes))]
        return np.arange(self.devices).reshape(shape)

    def digit_table(self) -> np.ndarray:
        """Global device index indexed by digits ``a[i][j]``, axis order ``(i, j)``.

        The result has one array axis per (axis ``i``, level ``j``) pair, ordered
        axis-major, so ``digit_table()[a00, a01, .., a10, ..]`` is a device index.
        """
        n_ax, n_lv = len(self.axes), len(self.hierarchy)
        order = [j * n_ax + i for i in range(n_ax) for j in range(n_lv)]
        return self._digits.transpose(order)

    def axis_table(self) -> np.ndarray:
        """Global device index indexed by the axis coordinates ``(x_0, .., x_m)``."""
        return self.digit_table().reshape(self.axes)

    def coordinates(self, device: int) -> tuple[int, ...]:
        """The axis coordinates of one global device index."""
        where = np.argwhere(self.axis_table() == device)
        if len(where) != 1:
            raise PlacementError(f"device: {device} is not in 0..{self.devices - 1}")
        return tuple(int(x) for x in where[0])
