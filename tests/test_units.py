from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from p2sim.util.units import format_bytes, format_seconds

SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
BYTES = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def _back(text: str, units: dict[str, float]) -> tuple[float, str]:
    value, unit = text.split()
    return float(value) * units[unit], value


@given(st.floats(min_value=1e-10, max_value=1e5))
def test_seconds_read_back_to_four_significant_digits(t):
    text = format_seconds(t)
    back, value = _back(text, SECONDS)
    assert math.isclose(back, t, rel_tol=5e-4)
    # the unit keeps 1..999 before it (seconds may grow beyond)
    assert 1 <= float(value) < 1000 or text.endswith(" s") or text.endswith(" ns")


@given(st.integers(min_value=1, max_value=2**50))
def test_sizes_read_back_to_four_significant_digits(n):
    text = format_bytes(n)
    back, value = _back(text, BYTES)
    assert math.isclose(back, n, rel_tol=5e-4)
    assert 1 <= float(value) < 1024 or text.endswith(" TiB")


def test_the_issue_cases():
    # 1 MiB AllReduces used to read 0.0001 s alike; sizes read 0.000976562 GiB
    assert [format_seconds(t) for t in (9.766e-05, 1.203e-04)] == ["97.66 us", "120.3 us"]
    assert format_bytes(2**20) == "1 MiB" and format_bytes(2**29 * 4 * 256) == "512 GiB"
