"""Axis and level names in answers: headers, matrix legends, and a placement described in words.

A parallelism matrix has one row per axis and one column per hierarchy level, which
``[[4 2] [1 4] [2 1]]`` does not say.  Reports name the rows (``--axes
data=8,tensor=4,pipeline=2``; ``axis0, axis1, ..`` when the axes were given by size)
and describe a placement in words, per axis: the levels it is split over with their
factors, and "inside a node" when it stays below the node level.

Examples
--------
>>> describe_placement(((1, 4), (2, 4)), ("data", "tensor"), ("node", "gpu"), node_level=0)
'data: 4 GPUs inside a node; tensor: 2 nodes x 4 GPUs'
>>> describe_placement(((2, 1), (1, 16)), ("axis0", "axis1"), ("level0", "level1"))
'axis0: 2 x level0; axis1: 16 x level1'
>>> axes_text((4, 8), ("data", "tensor")), axes_text((4, 8), ("axis0", "axis1"))
('data=4 tensor=8', '[4, 8]')
>>> reduce_text((0,), ("data", "tensor")), reduce_text((0,), ("axis0", "axis1"))
('data', '[0]')
"""

from __future__ import annotations

from collections.abc import Sequence

from ..util.parsing import default_axis_names
from .hierarchy import Order
from .placement import Matrix

__all__ = ["describe_placement", "axes_text", "reduce_text", "matrix_legend", "is_default", "generic_levels",
           "order_label"]

_ACRONYMS = {"gpu": "GPU", "cpu": "CPU", "nic": "NIC"}


def generic_levels(count: int) -> tuple[str, ...]:
    """``level0, level1, ..``: the names of a hierarchy given by cardinalities only."""
    return tuple(f"level{j}" for j in range(count))


def is_default(names: Sequence[str]) -> bool:
    """Whether the axes carry the default names (given by size only)."""
    return tuple(names) == default_axis_names(len(names))


def axes_text(sizes: Sequence[int], names: Sequence[str]) -> str:
    """``data=4 tensor=8`` for named axes; ``[4, 8]`` as before for axes given by size."""
    if is_default(names):
        return str(list(sizes))
    return " ".join(f"{n}={s}" for n, s in zip(names, sizes))


def reduce_text(reduce_axes: Sequence[int], names: Sequence[str]) -> str:
    """``data,pipeline`` for named axes; ``[0, 2]`` as before for axes given by size."""
    if is_default(names):
        return str(sorted(set(reduce_axes)))
    return ",".join(names[i] for i in sorted(set(reduce_axes)))


def _plural(level: str, count: int) -> str:
    word = _ACRONYMS.get(level.lower(), level)
    return f"{count} {word}s" if count > 1 else f"1 {word}"


def describe_placement(matrix: Matrix, axis_names: Sequence[str], level_names: Sequence[str],
                       node_level: int | None = None) -> str:
    """Each axis: the levels it is split over and their factors, outermost first.

    ``node_level`` (the system's node level) adds "inside a node" to an axis that
    stays below it; without a system (generic level names) each factor is ``f x level``.
    """
    generic = tuple(level_names) == generic_levels(len(level_names))
    parts = []
    for name, row in zip(axis_names, matrix):
        split = [(j, f) for j, f in enumerate(row) if f > 1]
        if not split:
            parts.append(f"{name}: 1 (not split)")
            continue
        if generic:
            text = ", ".join(f"{f} x {level_names[j]}" for j, f in split)
        else:
            text = " x ".join(_plural(level_names[j], f) for j, f in split)
        if node_level is not None and all(j > node_level for j, _ in split):
            text += f" inside a {level_names[node_level]}"
        parts.append(f"{name}: {text}")
    return "; ".join(parts)


def matrix_legend(axis_names: Sequence[str], level_names: Sequence[str]) -> str:
    """What a matrix's rows and columns are, for the header of a table of matrices."""
    return f"matrix rows: {', '.join(axis_names)} (axes); columns: {', '.join(level_names)} (levels, outermost first)"


def order_label(value: Order, *reduce_axes: Sequence[int]) -> str:
    """``"; p2 order"`` for a header, where the order matters (a reduction over several axes) or is not the default.

    With one reduction axis the two orders give the same groups, so headers stay as they were.

    Examples
    --------
    >>> order_label(Order.ALIGNED, (0,)), order_label(Order.ALIGNED, (0, 2)), order_label(Order.P2, (0,))
    ('', '; aligned order', '; p2 order')
    """
    if value is Order.ALIGNED and all(len(set(r)) < 2 for r in reduce_axes):
        return ""
    return f"; {value.value} order"
