"""Parsing of command-line values: integer lists and byte sizes.

Each parser raises :class:`~p2sim.errors.InputError` with a message that names
the field and the offending value.
"""

from __future__ import annotations

import re

from .errors import InputError

__all__ = ["int_list", "positive_int", "byte_size"]


def int_list(text: str, field: str, minimum: int = 0) -> tuple[int, ...]:
    """Parse ``"4,16"`` or ``"4 16"`` into ``(4, 16)``.

    Examples
    --------
    >>> int_list("8, 2,4", "axes")
    (8, 2, 4)
    >>> int_list("8,x", "axes")
    Traceback (most recent call last):
    ...
    p2sim.errors.InputError: axes: 'x' is not an integer
    """
    parts = [p for p in re.split(r"[\s,]+", text.strip()) if p]
    if not parts:
        raise InputError(f"{field}: the list is empty")
    out = []
    for p in parts:
        try:
            v = int(p)
        except ValueError:
            raise InputError(f"{field}: {p!r} is not an integer") from None
        if v < minimum:
            raise InputError(f"{field}: {v} is below {minimum}")
        out.append(v)
    return tuple(out)


def positive_int(text: str, field: str) -> int:
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise InputError(f"{field}: {text!r} is not an integer") from None
    if v < 1:
        raise InputError(f"{field}: {v} is not positive")
    return v


_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def byte_size(text: str, field: str = "bytes") -> int:
    """Parse ``"2GiB"``, ``"512MiB"``, ``"1e9"`` or ``"4096"`` into bytes.

    Examples
    --------
    >>> byte_size("2GiB"), byte_size("1.5 kB"), byte_size("4096")
    (2147483648, 1500, 4096)
    """
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = m and _UNITS.get(m.group(2).lower())
    if not m or unit is None:
        raise InputError(f"{field}: {text!r} is not a size like 2GiB, 512MiB or 1e9")
    value = float(m.group(1)) * unit
    if not 1 <= value < float("inf"):
        raise InputError(f"{field}: {text!r} is not a size of at least one byte")
    return int(round(value))
