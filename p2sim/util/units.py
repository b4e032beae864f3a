"""Times and sizes for people: adaptive units in text output.

Text output shows a time in the unit that keeps it readable (``s``, ``ms``, ``us``,
``ns``) with four significant digits, and a size in binary units (``B``, ``KiB``,
``MiB``, ``GiB``, ``TiB``), so that results of different magnitudes stay comparable
at a glance: ``0.0001 s`` for every 1 MiB AllReduce hid differences that
``97.66 us`` and ``120.3 us`` show.  JSON output keeps plain seconds and bytes.

Examples
--------
>>> [format_seconds(t) for t in (1.1016923, 0.023893, 9.7656e-05, 4.4e-08, 0.0)]
['1.102 s', '23.89 ms', '97.66 us', '44 ns', '0 s']
>>> [format_bytes(b) for b in (4 * 2**30, 2**20, 1536, 1000, 2**29 * 4 * 256)]
['4 GiB', '1 MiB', '1.5 KiB', '1000 B', '512 GiB']
"""

from __future__ import annotations

import math

__all__ = ["format_seconds", "format_bytes", "format_int"]

_TIMES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))
_SIZES = ((2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "B"))


def _significant(value: float, digits: int) -> str:
    # g drops trailing zeros; values of 10^digits and more print whole, never as 1e+04
    return f"{value:.0f}" if abs(value) >= 10**digits else f"{value:.{digits}g}"


def _adaptive(value: float, units: tuple[tuple[float, str], ...], digits: int) -> str:
    """The largest unit in which ``value``, rounded to ``digits`` significant digits, is at least 1."""
    for scale, unit in units:
        # rounded in the unit it is shown in: 0.99999 s is 1 s, not 1000 ms
        shown = float(f"{value / scale:.{digits}g}")
        if abs(shown) >= 1 or scale == units[-1][0]:
            return f"{_significant(shown, digits)} {unit}"
    raise AssertionError("unreachable: the last unit always applies")


def format_seconds(seconds: float, digits: int = 4) -> str:
    """A time in s, ms, us or ns, whichever puts 1 to 999 before the unit (s above).

    Examples
    --------
    >>> format_seconds(0.99999), format_seconds(12345.6), format_seconds(float("inf"))
    ('1 s', '12350 s', 'inf s')
    """
    if not math.isfinite(seconds) or seconds == 0:
        return f"{seconds:g} s"
    return _adaptive(seconds, _TIMES, digits)


def format_bytes(size: float, digits: int = 4) -> str:
    """A size in B, KiB, MiB, GiB or TiB, whichever puts 1 to 1023 before the unit (TiB above).

    Examples
    --------
    >>> format_bytes(8), format_bytes(2**29 * 4 * 3), format_bytes(1023.99)
    ('8 B', '6 GiB', '1 KiB')
    """
    if not math.isfinite(size) or size == 0:
        return f"{size:g} B"
    return _adaptive(size, _SIZES, digits)


def format_int(value: int) -> str:
    """An integer from a user's input as a message can show it: whole up to 16 digits, then ``1e+20``, and a
    number too large for a float (a 401-digit one) by its digit count.

    >>> format_int(10**12), format_int(10**20), format_int(10**400)
    ('1000000000000', '1e+20', 'a 401-digit number')
    """
    return (str(value) if abs(value) < 10**16 else f"{value:.3g}" if abs(value) < 10**300
            else f"a {len(str(abs(value)))}-digit number")
