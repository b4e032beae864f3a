from __future__ import annotations

import pytest

from p2sim.util.errors import TopologyError
from p2sim.formalism.placement import Placement
from p2sim.topology import bisection, load_system

from .helpers import BASE_DISCONNECTED, spec_from


def test_full_duplex_links_and_documented_attributes():
    t = load_system("v100")
    for u, v, d in t.graph.edges(data=True):
        assert t.graph.has_edge(v, u)
        assert set(d) == {"cls", "bandwidth", "latency", "index"}
        assert t.edges[d["index"]] == (u, v)
        assert d["bandwidth"] == t.capacity[d["index"]] > 0


def test_device_indices_follow_hierarchy_coordinates():
    t = load_system("p2-16gpu")
    # [rack 1, server 2, cpu 2, gpu 4]: device 13 = server 1, cpu 1, gpu 1
    assert t.gpu_name(13) == "n1/gpu5"
    assert t.graph.nodes["n1/gpu5"]["device"] == 13
    # the synthesizer's coordinates: device index = mixed radix of the level coordinates
    pl = Placement.of(t.hierarchy, [16], [[1, 2, 2, 4]])
    assert pl.axis_table().tolist() == list(range(16))


def test_disconnected_gpu_is_rejected():
    with pytest.raises(TopologyError, match="cannot reach GPU"):
        from p2sim.topology import Topology

        Topology(spec_from(BASE_DISCONNECTED))


def test_bad_node_count():
    with pytest.raises(TopologyError, match="nodes"):
        load_system("a100", 0)


def test_bisection_figures():
    b = bisection(load_system("a100", 2))
    assert b["nodes"] == pytest.approx(8.0)  # one 8 GB/s NIC per node
    b = bisection(load_system("h100", 4))
    # two nodes per half, 8 GPUs each behind PCIe gen5 (48 GB/s effective) to 8 x 400 Gb/s (49 effective)
    assert b["nodes"] == pytest.approx(2 * 8 * min(64 * 0.75, 50 * 0.98))
