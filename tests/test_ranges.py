"""The ranges of a system's numbers: one rule per field for the file and for --vary."""

from __future__ import annotations

import pytest

from p2sim.topology import ranges
from p2sim.util.errors import InputError, TopologyError


@pytest.mark.parametrize("value", [True, "4", float("nan"), float("inf"), 2.5, 0, 17, -1.0])
def test_a_count_is_a_whole_number_in_its_range(value):
    with pytest.raises(TopologyError, match=r"^x.toml: f: .* must be a whole number in 1..16 \(ports\)$"):
        ranges.whole("x.toml: f", value, 1, 16, "ports")


def test_a_whole_float_counts_and_shows_as_a_whole_number():
    # --vary's values are floats
    assert ranges.whole("--vary: leaf.uplinks", 16.0, 1, 16, "ports", InputError) == 16
    with pytest.raises(InputError, match="^--vary: leaf.uplinks: 17 must be"):
        ranges.whole("--vary: leaf.uplinks", 17.0, 1, 16, "ports", InputError)


@pytest.mark.parametrize(("check", "good", "bad"), [
    (ranges.bandwidth, [1e-3, 1e6], [0.0, -1.0, 1e-4, 1.1e6, float("inf"), float("nan")]),
    (ranges.latency, [0.0, 1e6], [-1e-9, 1.1e6, float("inf"), float("nan")]),
    (ranges.efficiency, [1e-9, 1.0], [0.0, 1.01, float("nan")]),
    (ranges.oversubscription, [1 / 1024, 1024.0], [1 / 2048, 1025.0, 0.0, float("inf"), float("nan")]),
    (ranges.node_count, [1, 16384.0], [0, 16385, 1e12, 2.5]),
    (ranges.speed, [1e-9, 1e3], [0.0, 1001.0, float("inf"), float("nan")]),
])
def test_each_field_keeps_its_edges(check, good, bad):
    for v in good:
        assert check("x.toml: f", v) == v
    for v in bad:
        with pytest.raises(TopologyError, match="^x.toml: f: "):
            check("x.toml: f", v)
