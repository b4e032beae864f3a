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


def _fabric_pairs(t, count: int, seed: int):
    """``count`` pairs of GPUs on different nodes with NICs by index (some the default, -1) and salts."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, t.devices, count)
    dst = (src + t.gpus_per_node * rng.integers(1, t.node_count, count) + rng.integers(0, t.gpus_per_node, count)
           ) % t.devices
    dst = np.where(dst // t.gpus_per_node == src // t.gpus_per_node, (dst + t.gpus_per_node) % t.devices, dst)
    # a GB200 rack's GPU reaches only its own NIC (-1: the default, or named); an H100 node's reach every NIC
    own = lambda g: np.array([t.nics.index(t.router.nic_of(int(d))) for d in g], dtype=np.int64)  # noqa: E731
    if t.gpus_per_node == 72:
        x, y = np.where(rng.random(count) < 0.5, -1, own(src)), np.where(rng.random(count) < 0.5, -1, own(dst))
    else:
        x, y = rng.integers(-1, len(t.nics), count), rng.integers(-1, len(t.nics), count)
    return src, dst, x, y, rng.integers(0, 9, count)


@pytest.mark.parametrize("system, nodes", [("gb200-nvl72-pod", 24), ("superpod-h100", 40), ("roce-h100", 40)])
def test_a_few_new_routes_across_a_fabric_equal_route_via_one_by_one(system, nodes):
    """A short table's routes a fabric has not routed yet are kept by one pass of the fabric's arithmetic
    (``_fill_vias``): each is route_via's own on a fresh router, ECMP's hashed ports (roce-h100) included."""
    t, fresh = load_system(system, nodes), load_system(system, nodes)
    src, dst, x, y, salt = _fabric_pairs(t, 60, nodes)
    indptr, edges = t.router.route_table(src, dst, x, y, salt)
    r = fresh.router
    for i in range(len(src)):
        want = r.route_via(int(src[i]), int(dst[i]), r.nic_of(int(src[i])) if x[i] < 0 else r.nics[x[i]],
                           r.nic_of(int(dst[i])) if y[i] < 0 else r.nics[y[i]], int(salt[i]))
        assert tuple(edges[indptr[i]:indptr[i + 1]].tolist()) == want.edges
        key = next(k for k in t.router._via if k[:2] == (int(src[i]), int(dst[i])) and t.router._via[k].edges == want.edges)
        assert t.router._via[key].latency == want.latency


def test_a_few_new_routes_across_a_fabric_take_one_pass_of_its_arithmetic(monkeypatch):
    """Not one fabric pass per new route: a ring's 60 new hops between racks are routed together."""
    t = load_system("gb200-nvl72-pod", 24)
    calls = []
    mids = t.fabric.mids
    monkeypatch.setattr(t.fabric, "mids", lambda *a: calls.append(len(a[0])) or mids(*a))
    t.router.route_table(*_fabric_pairs(t, 60, 3))
    assert calls == [60]


def test_net_path_type_is_the_nearest_gpu_nic_path() -> None:
    """NCCL's typeInter: PIX where a NIC shares a PCIe switch with a GPU, PHB through a CPU, P2C through the
    GPU's own Grace over C2C (paths.cc, 2.27's PATH_P2C)."""
    from p2sim.topology import load_system

    assert load_system("dgx-h100", nodes=2).router.net_path_type == "PIX"
    assert load_system("a100", nodes=2).router.net_path_type == "PHB"
    assert load_system("gb200-nvl72-pod", nodes=2).router.net_path_type == "P2C"
