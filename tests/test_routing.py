"""The router of a topology (p2sim.topology.routing): NCCL's routes, composed into Topology, its own caches."""

from __future__ import annotations

import numpy as np
import pytest

from p2sim.topology import Topology, load_system
from p2sim.topology.routing import Router


def classes(topo, a, b):
    return [topo.edge_class[e] for e in topo.router.route(a, b).edges]


def test_nccl_transport_preference():
    v = load_system("v100")
    assert classes(v, 0, 1) == ["nvlink"]
    assert classes(v, 7, 0) == ["nvlink"]
    # GPUs 0 and 4 are not NVLink neighbours: PCIe up, across the CPUs, PCIe down; never via a GPU
    assert classes(v, 0, 4) == ["pcie", "pcie", "host", "pcie", "pcie"]
    assert all(v.graph.nodes[x]["kind"] != "gpu" for x, _ in v.path_names(0, 4)[1:])
    a = load_system("a100")
    assert classes(a, 3, 12) == ["nvswitch", "nvswitch"]
    assert "nic" in classes(a, 3, 19)
    assert a.router.route(3, 19).inter_node and not a.router.route(3, 12).inter_node


def test_rail_optimised_nics():
    h = load_system("h100")
    names = [u for u, _ in h.path_names(5, 13)]
    assert "n0/nic5" in names and "net/rail5" in names and "net/spine" not in names


def test_routes_are_cached_and_consistent():
    t = load_system("a100", 4)
    assert t.router.route(1, 40) is t.router.route(1, 40)
    r = t.router.route(1, 40)
    assert r.latency == pytest.approx(sum(t.latency[list(r.edges)]))


def test_topology_composes_a_router_and_inherits_no_routing():
    """Topology is a graph with a router, not a graph that is a router: no routing base class, no route methods."""
    assert Topology.__mro__ == (Topology, object)
    t = load_system("a100", 2)
    assert isinstance(t.router, Router)
    for name in ("route", "route_via", "route_table", "nic_of", "local_nics", "intra_type", "switch_ports",
                 "node_view", "_routes", "_via", "_intra"):
        assert not hasattr(t, name), name


def test_each_router_owns_its_caches():
    a, b = load_system("a100", 2), load_system("a100", 2)
    assert a.router is not b.router and a.router._routes is not b.router._routes
    before = dict(b.router._routes)
    r = a.router.route(3, 21)
    assert a.router._routes[(3, 21)] is r and b.router._routes == before  # b computes its own
    assert b.router.route(3, 21) == r and b.router.route(3, 21) is not r


@pytest.mark.parametrize("system, nodes", [("a100", 4), ("superpod-h100", 3)])
def test_route_table_matches_the_routes_one_by_one(system, nodes):
    """Past a hundred pairs route_table moves node-0 templates by arithmetic; each pair's edges are its route's."""
    t = load_system(system, nodes)
    src, dst = np.divmod(np.arange(t.devices * t.devices), t.devices)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    indptr, edges = t.router.route_table(src, dst)
    assert len(src) > 96
    for i in range(0, len(src), 7):
        assert tuple(edges[indptr[i]:indptr[i + 1]].tolist()) == t.router.route(int(src[i]), int(dst[i])).edges
