"""Parsing of command-line values: integer lists, named axes and byte sizes.

Each parser raises :class:`~p2sim.util.errors.InputError` with a message that names
the field and the offending value.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import InputError

__all__ = ["int_list", "positive_int", "positive_float", "byte_size", "nccl_tests_size", "named_parts", "axes_spec", "axis_indices", "default_axis_names",
           "as_text"]


def int_list(text: str, field: str, minimum: int = 0) -> tuple[int, ...]:
    """Parse ``"4,16"`` or ``"4 16"`` into ``(4, 16)``.

    Examples
    --------
    >>> int_list("8, 2,4", "axes")
    (8, 2, 4)
    >>> int_list("8,x", "axes")
    Traceback (most recent call last):
    ...
    p2sim.util.errors.InputError: axes: 'x' is not an integer
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


def positive_float(text: str, field: str) -> float:
    """A finite number above zero.

    >>> positive_float("1.25", "tolerance")
    1.25
    """
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InputError(f"{field}: {text!r} is not a number") from None
    if not 0 < v < float("inf"):
        raise InputError(f"{field}: {v:g} is not a positive number")
    return v


_UNITS = {
    "": 1, "b": 1,
    # nccl-tests' sizes (parsesize in src/common.cu): a bare K, M or G is 1024-based
    "k": 2**10, "m": 2**20, "g": 2**30,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


MAX_BYTES = 2**50  # 1 PiB: beyond any buffer (P2's default on 16,384 nodes is 32 TiB)


def byte_size(text: str, field: str = "bytes") -> int:
    """Parse ``"2GiB"``, ``"512MiB"``, ``"1e9"``, ``"4096"`` or nccl-tests' ``"1K"``/``"1M"``/``"1G"`` into bytes.

    ``kB``/``MB``/``GB`` are decimal; ``KiB``/``MiB``/``GiB`` and nccl-tests' bare ``K``/``M``/``G``
    are powers of 1024.

    Examples
    --------
    >>> byte_size("2GiB"), byte_size("1.5 kB"), byte_size("4096")
    (2147483648, 1500, 4096)
    >>> byte_size("1K"), byte_size("8M"), byte_size("1G")   # as nccl-tests -b 1K -e 1G reads them
    (1024, 8388608, 1073741824)
    """
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = m and _UNITS.get(m.group(2).lower())
    if not m or unit is None:
        raise InputError(f"{field}: {text!r} is not a size like 2GiB, 512MiB, 1e9 or nccl-tests' 1K, 1M, 1G")
    value = float(m.group(1)) * unit
    if not 1 <= value < float("inf"):
        raise InputError(f"{field}: {text!r} is not a size of at least one byte")
    if value > MAX_BYTES:
        raise InputError(f"{field}: {text!r} is more than 1 PiB: no GPU buffer is that large")
    return int(round(value))


# nccl-tests' parsesize (src/common.cu): sscanf("%lf %1s") reads a number and the first letter
# after it; G, M, K (either case) are powers of 1024, anything else is an invalid size, and the
# product is cut to whole bytes ((size_t) cast)
_NCCL_TESTS_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}
NCCL_TESTS_SIZE_RULE = ("a number with an optional K, M or G, 1024-based, as nccl-tests reads -b/-e: only the "
                        "unit's first letter counts (1MB is 1 MiB)")


def nccl_tests_size(text: str, field: str) -> int:
    """Parse a size as nccl-tests' ``-b``/``-e`` do: ``1M``, ``1MB`` and ``1MiB`` are all 1 MiB.

    Examples
    --------
    >>> nccl_tests_size("1MB", "minbytes"), nccl_tests_size("1.5K", "minbytes"), nccl_tests_size("1e6", "minbytes")
    (1048576, 1536, 1000000)
    >>> nccl_tests_size("1TiB", "maxbytes")
    Traceback (most recent call last):
    ...
    p2sim.util.errors.InputError: maxbytes: '1TiB' is not a size nccl-tests reads: a number with an optional K, M or G, 1024-based, as nccl-tests reads -b/-e: only the unit's first letter counts (1MB is 1 MiB)
    """
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = m and _NCCL_TESTS_UNITS.get(m.group(2)[:1].lower())
    if not m or unit is None:
        raise InputError(f"{field}: {text!r} is not a size nccl-tests reads: {NCCL_TESTS_SIZE_RULE}")
    value = float(m.group(1)) * unit
    if value > MAX_BYTES:
        raise InputError(f"{field}: {text!r} is more than 1 PiB: no GPU buffer is that large")
    if value < 1:
        raise InputError(f"{field}: {text!r} is not a size of at least one byte")
    return int(value)


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def default_axis_names(count: int) -> tuple[str, ...]:
    """``axis0, axis1, ..``: the names of axes given by size only."""
    return tuple(f"axis{i}" for i in range(count))


def named_parts(text: str, field: str) -> tuple[list[str], tuple[str, ...] | None]:
    """Split ``"data=8,tensor=4"`` into values and names; plain ``"8,4"`` has no names.

    Examples
    --------
    >>> named_parts("data=8, tensor=*", "axes")
    (['8', '*'], ('data', 'tensor'))
    >>> named_parts("8 4", "axes")
    (['8', '4'], None)
    >>> named_parts("data=8,4", "axes")
    Traceback (most recent call last):
    ...
    p2sim.util.errors.InputError: axes: name every axis (data=8,tensor=4) or none (8,4), not some: '4'
    """
    parts = [p for p in re.split(r"\s*,\s*|\s+", text.strip()) if p]
    if not parts:
        raise InputError(f"{field}: the list is empty")
    named = ["=" in p for p in parts]
    if not any(named):
        return parts, None
    if not all(named):
        odd = parts[named.index(False)]
        raise InputError(f"{field}: name every axis (data=8,tensor=4) or none (8,4), not some: {odd!r}")
    names, values = [], []
    for p in parts:
        name, _, value = p.partition("=")
        name = name.strip()
        if not _NAME.match(name):
            raise InputError(f"{field}: {name!r} is not an axis name (letters, digits, _ and -, "
                             "starting with a letter)")
        if name in names:
            raise InputError(f"{field}: the axis name {name!r} is given twice")
        names.append(name)
        values.append(value.strip())
    return values, tuple(names)


def axes_spec(text: str, field: str = "axes") -> tuple[tuple[int, ...], tuple[str, ...] | None]:
    """Axis sizes and their names (``None`` when given by size only).

    Examples
    --------
    >>> axes_spec("data=8,tensor=4,pipeline=2")
    ((8, 4, 2), ('data', 'tensor', 'pipeline'))
    >>> axes_spec("8,4")
    ((8, 4), None)
    """
    values, names = named_parts(text, field)
    sizes = []
    for v in values:
        try:
            n = int(v)
        except ValueError:
            raise InputError(f"{field}: {v!r} is not an integer") from None
        if n < 1:
            raise InputError(f"{field}: {n} is below 1")
        sizes.append(n)
    return tuple(sizes), names


def axis_indices(text: str, names: tuple[str, ...], field: str = "reduce") -> tuple[int, ...]:
    """Axes by index or by name: ``"0,2"`` or ``"data,pipeline"`` against the axis names.

    Examples
    --------
    >>> axis_indices("data, pipeline", ("data", "tensor", "pipeline"))
    (0, 2)
    >>> axis_indices("1", ("data", "tensor"))
    (1,)
    """
    parts = [p for p in re.split(r"[\s,]+", text.strip()) if p]
    if not parts:
        raise InputError(f"{field}: the list is empty")
    out = []
    for p in parts:
        if p in names:
            out.append(names.index(p))
            continue
        try:
            v = int(p)
        except ValueError:
            raise InputError(f"{field}: {p!r} is neither an axis index nor an axis name "
                             f"({', '.join(names)})") from None
        if v < 0:
            raise InputError(f"{field}: {v} is below 0")
        out.append(v)
    return tuple(out)


def as_text(value: Any, field: str) -> str | None:
    """A Python argument in the command line's text form, so that both are parsed (and refused) alike.

    Examples
    --------
    >>> as_text({"data": 4, "tensor": 8}, "axes"), as_text([0, 2], "reduce"), as_text(16, "nodes")
    ('data=4,tensor=8', '0,2', '16')
    >>> as_text(None, "bytes") is None, as_text("2GiB", "bytes")
    (True, '2GiB')
    >>> import numpy as np
    >>> as_text({"data": np.int64(4)}, "axes"), as_text(np.float64(2.5), "tolerance")
    ('data=4', '2.5')
    >>> as_text(True, "nodes")
    Traceback (most recent call last):
    ...
    p2sim.util.errors.InputError: nodes: True is not a number, a text or a list
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise InputError(f"{field}: {value!r} is not a number, a text or a list")
    if isinstance(value, numbers.Integral):  # numpy's integers too (registered as Integral)
        return str(int(value))
    if isinstance(value, numbers.Real):  # repr(np.float64(2.5)) is 'np.float64(2.5)': made a float first
        return repr(float(value))
    if isinstance(value, Mapping):
        return ",".join(f"{k}={as_text(v, field)}" for k, v in value.items())
    if isinstance(value, Iterable):
        return ",".join(as_text(v, field) or "" for v in value)
    raise InputError(f"{field}: {value!r} is not a number, a text or a list")
