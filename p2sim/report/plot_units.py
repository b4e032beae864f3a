"""Plot axes whose tick labels carry their unit, as the tables show values (``10 ms``, ``64 MiB``).

A log axis labelled ``6 x 10^-1`` in seconds or ``2^20`` in bytes makes the reader convert;
these formatters print the same adaptive units as the text output (:mod:`p2sim.util.units`),
labelling minor ticks only where matplotlib's own log formatter would (a short range).
"""

from __future__ import annotations

from collections.abc import Callable

from ..util.units import format_bytes, format_seconds

__all__ = ["seconds_axis", "bytes_axis"]


def _formatter(show: Callable[[float], str]):
    from matplotlib.ticker import LogFormatterSciNotation

    class UnitFormatter(LogFormatterSciNotation):
        """Matplotlib's choice of which log ticks to label, with ``show``'s text."""

        def __call__(self, x: float, pos: int | None = None) -> str:
            return show(x) if super().__call__(x, pos) else ""

    return UnitFormatter


def seconds_axis(ax, which: str = "y") -> None:
    """A log axis of seconds, ticks in s / ms / us / ns."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    cls = _formatter(lambda v: format_seconds(v, 3))
    axis.set_major_formatter(cls())
    axis.set_minor_formatter(cls(labelOnlyBase=False))


def bytes_axis(ax, lo: float, hi: float, which: str = "x", most: int = 8) -> None:
    """A log-2 axis of bytes from ``lo`` to ``hi``, at most ``most`` labelled ticks in B / KiB / MiB / GiB.

    Matplotlib labels every power of two that fits, which overlaps over a 2^30 range; the labelled
    ticks here are every 2^k with k a multiple of the smallest step (1, 2, 5, 10) that keeps them few.
    """
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=2)
    span = math.log2(max(hi, lo * 2) / lo)
    step = next((k for k in (1, 2, 5, 10) if span / k <= most - 1), 20)
    axis.set_major_locator(LogLocator(base=2.0**step, subs=(1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v, 3)))
    axis.set_minor_locator(LogLocator(base=2.0, subs=(1.0,), numticks=64))
    axis.set_minor_formatter(NullFormatter())
