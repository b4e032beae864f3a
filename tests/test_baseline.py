from __future__ import annotations

import pytest

from p2sim.collectives.algorithms import baseline_seconds
from p2sim.topology import load_system


def test_ring_and_tree_use_the_slowest_hop():
    t = load_system("a100", 2)
    lat = baseline_seconds(t, "AllReduce", range(32), 0.0, "ring")
    assert baseline_seconds(t, "AllReduce", range(32), 2**32, "ring") - lat == pytest.approx(2 * 31 / 32 * 2**32 / 8e9)
    lat = baseline_seconds(t, "AllReduce", range(32), 0.0, "tree")
    assert baseline_seconds(t, "AllReduce", range(32), 2**32, "tree") - lat == pytest.approx(2 * 2**32 / 8e9)


def test_tree_applies_to_allreduce_only():
    t = load_system("a100", 2)
    assert baseline_seconds(t, "AllGather", range(32), 2**30, "tree") == baseline_seconds(
        t, "AllGather", range(32), 2**30, "ring")
