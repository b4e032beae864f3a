"""Fabrics above the node: routes and capacities by arithmetic, answers computable by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.formalism.hierarchy import Lowering, LoweredStep
from p2sim.formalism.semantics import Op
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program
from p2sim.sim import SimSettings, Simulator
from p2sim.sim.engine import FlowSpec, run_flows
from p2sim.topology import Topology, load_system
from p2sim.topology.spec import SystemSpec
from p2sim.util.errors import TopologyError

from .helpers import spec_from

GB = 1e9


def fabric_system(**kwargs) -> SystemSpec:
    return spec_from(fabric_text(**kwargs))


def fabric_text(nodes_per_leaf: int = 2, oversubscription: float = 2.0, routing: str = "adaptive", nics: int = 1,
                rails: int = 1, sharp: bool = False, tiers: str | None = None, gpus: int = 1, levels: str = "") -> str:
    """Nodes of ``gpus`` GPUs with ``nics`` NICs of 10 GB/s (GPU and NIC joined at 1000 GB/s),
    leaves of ``nodes_per_leaf`` nodes with 10 GB/s uplink ports under one spine."""
    tiers = tiers or (f'[{{ name = "leaf", nodes = {nodes_per_leaf}, oversubscription = {oversubscription} }}, '
                      '{ name = "spine" }]')
    per = max(1, gpus // nics)
    pairs = ", ".join(f'["gpu[{i * per}-{i * per + per - 1}]", "pcie{i}"]' for i in range(nics))
    return f"""
name = "fab"
default_nodes = 4
levels = [{levels}{{ name = "node", cardinality = "nodes" }}, {{ name = "gpu", cardinality = {gpus} }}]
[classes]
nvswitch = {{ bandwidth = 1000.0, efficiency = 1.0 }}
pcie = {{ bandwidth = 1000.0, efficiency = 1.0 }}
nic = {{ bandwidth = 10.0, efficiency = 1.0 }}
leaf = {{ bandwidth = 10.0, efficiency = 1.0 }}
spine = {{ bandwidth = 10.0, efficiency = 1.0 }}
[gpu]
arch = "ampere"
[node]
gpus = "gpu[0-{gpus - 1}]"
components = [{{ name = "sw", kind = "nvswitch" }}, {{ name = "pcie[0-{nics - 1}]", kind = "pcie_switch" }},
              {{ name = "nic[0-{nics - 1}]", kind = "nic" }}]
links = [
  {{ class = "nvswitch", pairs = [["gpu[0-{gpus - 1}]", "sw"]] }},
  {{ class = "pcie", pairs = [{pairs}, ["nic[0-{nics - 1}]", "pcie[0-{nics - 1}]"]] }},
]
[network]
transport = "ib"
[fabric]
routing = "{routing}"
rails = {rails}
sharp = {'true' if sharp else 'false'}
tiers = {tiers}
"""


def rates(topo: Topology, pairs: list[tuple[int, int]], volume: float = 1e9) -> list[float]:
    """Each pair's rate (bytes/s) when all send ``volume`` at once (no latency)."""
    flows = [FlowSpec(np.array(topo.router.route(a, b).edges), np.ones(len(topo.router.route(a, b).edges)), volume, 0.0)
             for a, b in pairs]
    _, records, _ = run_flows(flows, topo.capacity, record=True)
    return [volume / (r.end - r.start) for r in records]


def test_crossing_a_2_to_1_oversubscribed_spine_halves_the_rate():
    topo = Topology(fabric_system(oversubscription=2.0), 4)
    # inside a leaf each pair has its NICs to itself: 10 GB/s each
    assert rates(topo, [(0, 1), (2, 3)]) == pytest.approx([10 * GB, 10 * GB])
    # across: both pairs climb leaf 0's uplinks (2 NICs x 10 GB/s / 2 = 10 GB/s): 5 GB/s each
    assert rates(topo, [(0, 2), (1, 3)]) == pytest.approx([5 * GB, 5 * GB])
    # non-blocking: the same pairs get their NICs' rate
    topo = Topology(fabric_system(oversubscription=1.0), 4)
    assert rates(topo, [(0, 2), (1, 3)]) == pytest.approx([10 * GB, 10 * GB])


def test_routes_climb_to_the_lowest_tier_where_the_nodes_meet():
    topo = Topology(fabric_system(tiers='[{ name = "leaf", nodes = 2 }, { name = "spine", nodes = 4 }, '
                                       '{ name = "core" }]').with_class("leaf", bandwidth=10.0), 8)
    f = topo.fabric

    def tiers(a, b):
        return [f.describe(e) for e in f.route(a, 0, b, 0)]

    assert tiers(0, 1) == ["cable nic0 of node 0 up", "cable nic0 of node 1 down"]
    assert tiers(0, 2) == ["cable nic0 of node 0 up", "leaf 0 up", "leaf 1 down", "cable nic0 of node 2 down"]
    assert tiers(0, 4) == ["cable nic0 of node 0 up", "leaf 0 up", "spine 0 up", "spine 1 down", "leaf 2 down",
                           "cable nic0 of node 4 down"]


def test_a_ring_over_two_leaves_crosses_the_spine_twice_per_channel():
    topo = Topology(fabric_system(nodes_per_leaf=2, oversubscription=1.0, gpus=2), 4)
    sim = Simulator(topo, SimSettings("ring", proto="Simple"))
    coll = sim.collectives("AllReduce", [tuple(range(8))], [2.0**30])[0]
    f = topo.fabric
    ups = {int(e) for g in range(f.groups[0]) for e in f.uplink_ids(0, g)[::2]}
    for flow in coll.flows:  # a flow is a pair of channels, one each way round the ring
        crossings = sum(1 for h in flow.hops if set(h.edges) & ups)
        assert crossings == 2 * 2


def test_ecmp_is_deterministic_and_can_collide_adaptive_splits_evenly():
    ecmp = Topology(fabric_system(nodes_per_leaf=4, oversubscription=1.0, routing="ecmp"), 8)
    f = ecmp.fabric
    assert f.ports[0] == 4
    p, q = np.arange(4), np.arange(4) + 4
    first = f.mids(p, np.zeros(4), q, np.zeros(4))
    again = Topology(fabric_system(nodes_per_leaf=4, oversubscription=1.0, routing="ecmp"), 8).fabric.mids(
        p, np.zeros(4), q, np.zeros(4))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))  # same seed, same ports
    # over many flows (channels) some pairs hash onto the same port while others idle
    salt = np.repeat(np.arange(8), 4)
    _, edges = f.mids(np.tile(p, 8), np.zeros(32), np.tile(q, 8), np.zeros(32), salt)
    counts = np.bincount(edges[::2], minlength=f.end)  # each route: its up port, then the far leaf's down
    used = counts[counts > 0]
    assert used.max() > 32 / 4 and len(used) <= 4  # a collision: more than an even share on one port
    # four flows from leaf 0 to leaf 1: ECMP's rates follow its hashes, adaptive gives each 10 GB/s
    pairs = [(i, 4 + i) for i in range(4)]
    ecmp_rates = rates(ecmp, pairs)
    adaptive = Topology(fabric_system(nodes_per_leaf=4, oversubscription=1.0), 8)
    assert rates(adaptive, pairs) == pytest.approx([10 * GB] * 4)
    ports = [f.mids([a], [0], [b], [0])[1][0] for a, b in pairs]
    expect = [10 * GB / ports.count(x) for x in ports]
    assert ecmp_rates == pytest.approx(expect)


def test_one_routes_hash_is_the_array_hash():
    # route_via hashes one route in Python's integers, route_table many in numpy's: the same ports
    f = Topology(fabric_system(nodes_per_leaf=2, oversubscription=1.0, routing="ecmp", nics=2, rails=2, gpus=2), 16
                 ).fabric
    rng = np.random.default_rng(1)
    p, q, x, y = rng.integers(0, 16, 300), rng.integers(0, 16, 300), rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    salt = rng.integers(0, 2**40, 300)
    many = f._hash(p, x, q, y, salt, 1)
    assert [int(f._hash(*(int(v[i]) for v in (p, x, q, y, salt)), 1)[0]) for i in range(300)] == many.tolist()


def test_ecmp_seed_changes_the_ports():
    a = Topology(fabric_system(nodes_per_leaf=8, oversubscription=1.0, routing="ecmp"), 16).fabric
    spec = fabric_system(nodes_per_leaf=8, oversubscription=1.0, routing="ecmp")
    from dataclasses import replace

    b = Topology(spec.with_fabric(replace(spec.fabric, seed=7)), 16).fabric
    p, q = np.arange(8), np.arange(8) + 8
    assert not np.array_equal(a.mids(p, np.zeros(8), q, np.zeros(8))[1], b.mids(p, np.zeros(8), q, np.zeros(8))[1])


def test_sharp_allreduce_moves_the_buffer_once_each_way_per_node():
    topo = Topology(fabric_system(sharp=True, oversubscription=1.0), 4)
    sim = Simulator(topo, SimSettings("collnet_chain", proto="Simple"))
    coll = sim.collectives("AllReduce", [(0, 1, 2, 3)], [2.0**30])[0]
    assert coll.algo == "collnet_chain"
    edges, coef = coll.link_load()
    load = dict(zip(edges.tolist(), coef.tolist()))
    f = topo.fabric
    for node in range(4):  # S up and S down through the node's NIC cable
        assert load[f.cable(0, node, True)] == pytest.approx(1.0)
        assert load[f.cable(0, node, False)] == pytest.approx(1.0)
    for g in range(2):  # each leaf sends the reduced stream up once, gets the result once
        up, down = f.uplink_ids(0, g)
        assert load[int(up)] == pytest.approx(1.0) and load[int(down)] == pytest.approx(1.0)
    ring = Simulator(topo, SimSettings("ring", proto="Simple")).collectives("AllReduce", [(0, 1, 2, 3)], [2.0**30])[0]
    ring_load = dict(zip(*[a.tolist() for a in ring.link_load()]))
    assert ring_load[f.cable(0, 0, True)] == pytest.approx(2 * 3 / 4)  # a ring's 2(n-1)/n
    # SHARP halves the NIC bytes: nearly twice the ring's speed on NIC-bound nodes
    t_sharp = sim.simulate(Lowering.of(Placement.of((4, 1), (4,), ((4, 1),)), (0,)),
                           parse_program("AllReduce(slice=0, Inside)"), 2.0**30).total_seconds
    t_ring = Simulator(topo, SimSettings("ring", proto="Simple")).simulate(
        Lowering.of(Placement.of((4, 1), (4,), ((4, 1),)), (0,)), parse_program("AllReduce(slice=0, Inside)"),
        2.0**30).total_seconds
    assert 1.45 < t_ring / t_sharp < 1.6  # the NICs' 1.5, and the ring's longer start-up


def test_collnet_needs_sharp_switches_and_is_chosen_only_where_enabled():
    plain = Topology(fabric_system(sharp=False), 4)
    assert Simulator(plain, SimSettings("auto")).expander.available("AllReduce", (0, 1, 2, 3)) == [
        (a, p) for a, p in Simulator(plain, SimSettings("auto")).expander.available("AllReduce", (0, 1, 2, 3))
        if not a.startswith("collnet")]
    sharp = Topology(fabric_system(sharp=True), 4)
    algos = {a for a, _ in Simulator(sharp, SimSettings("auto")).expander.available("AllReduce", (0, 1, 2, 3))}
    assert {"collnet_direct", "collnet_chain"} <= algos
    # a ReduceScatter over 1:1 GPU:NIC nodes runs CollNet Direct (NCCL 2.20.3 on); Broadcast has no CollNet:
    # NCCL runs a ring
    sim = Simulator(sharp, SimSettings("collnet"))
    assert sim.expander.choose("ReduceScatter", (0, 1, 2, 3), 1e6, "collnet")[0] == "collnet_direct"
    assert sim.expander.choose("Broadcast", (0, 1, 2, 3), 1e6, "collnet")[0] == "ring"
    assert sim.expander.choose("AllReduce", (0, 1, 2, 3), 1e9, "collnet")[0].startswith("collnet")


def test_an_nvl72_ring_stays_on_nvlink():
    topo = load_system("gb200-nvl72")
    sim = Simulator(topo, SimSettings("ring", proto="Simple"))
    coll = sim.collectives("AllReduce", [tuple(range(72))], [2.0**30])[0]
    classes = {topo.edge_class[e] for f in coll.flows for e in f.edges.tolist()}
    assert classes == {"nvswitch"}
    # across racks the rings leave through the GPUs' own NICs
    pod = load_system("gb200-nvl72-pod", 2)
    coll = Simulator(pod, SimSettings("ring", proto="Simple")).collectives("AllReduce", [tuple(range(144))], [2.0**30])[0]
    used = {pod.edge_class[e] for f in coll.flows for e in f.edges.tolist()}
    assert "nic" in used and "nvswitch" in used


def test_rank_keeps_the_reduced_axis_inside_a_leaf_under_a_4_to_1_spine():
    from p2sim.studies.rank import RankRequest, run_rank

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fab.toml"
        path.write_text(fabric_text(nodes_per_leaf=2, oversubscription=4.0, gpus=2, nics=1,
                                    levels='{ name = "leaf", fabric = "leaf" }, '))
        r = run_rank(RankRequest.build(system=str(path), nodes=4, axes="data=4,tensor=2", reduce="data", workers=1,
                                       algo="ring", bytes="1GiB"))
    best = dict(zip(("data", "tensor"), r.best.matrix))
    # hierarchy [leaf 2, node 2, gpu 2]: the data axis stays inside one leaf (no factor at the leaf level)
    assert best["data"][0] == 1
    crossing = [s for s in r.ranking.matrices if s.matrix[0][0] > 1]
    assert crossing and min(s.best.seconds for s in crossing) > r.best.seconds


def test_fabric_levels_set_the_hierarchy_and_say_where_a_group_is_partial():
    spec = fabric_system(nodes_per_leaf=2, levels='{ name = "leaf", fabric = "leaf" }, ')
    assert spec.hierarchy(8) == (4, 2, 1) and spec.node_count(8) == 8 and spec.partial_group(8) is None
    assert spec.hierarchy(1) == (1, 1, 1) and spec.partial_group(1) is None
    # a partial last leaf (as real clusters have): the level counts one group and the nodes level holds all 5;
    # only placements need whole groups, and they are told why
    assert spec.hierarchy(5) == (1, 5, 1) and spec.node_count(5) == 5
    assert "5 nodes is not a whole number of the leaf tier's groups of 2 nodes" in spec.partial_group(5)
    assert "the last has 1" in spec.partial_group(5)
    # without a level the fabric takes any node count (the last leaf partly filled)
    assert fabric_system(nodes_per_leaf=2).hierarchy(5) == (5, 1)
    Topology(fabric_system(nodes_per_leaf=2), 5)


@pytest.mark.parametrize(("system", "nodes", "unit", "rails"), [("superpod-h100", 248, 32, 8),
                                                                ("gb200-nvl72-pod", 20, 8, 1)])
def test_a_partial_last_unit_has_its_nodes_leaves_and_routes(system, nodes, unit, rails):
    topo = load_system(system, nodes)
    f = topo.fabric
    units = -(-nodes // unit)  # the whole ones and the partial last
    assert topo.node_count == nodes and topo.devices == nodes * topo.gpus_per_node
    assert topo.hierarchy[0] == 1 and topo.hierarchy[1] == nodes
    assert f.groups[0] == units * rails  # one leaf per rail in every unit, the partial one's too
    last, first_of_last = nodes - 1, (units - 1) * unit
    assert int(f.group(0, last)) == int(f.group(0, first_of_last)) == (units - 1) * rails
    # inside the partial unit a route stays under its leaf; to another unit it climbs to the spine
    assert [f.describe(e) for e in f.route(first_of_last, 0, last, 0)] == [
        f"cable nic0 of node {first_of_last} up", f"cable nic0 of node {last} down"]
    up = f.route(0, 0, last, 0)
    assert len(up) == 4 and "leaf 0 up" in f.describe(up[1])
    assert "not a whole number" in topo.spec.partial_group(nodes)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(0, 7), st.sampled_from(["adaptive", "ecmp"]), st.integers(1, 6),
       st.integers(1, 5))
def test_moved_groups_get_the_routes_built_in_place(span, first, routing, shift, stride):
    """A move that the key allows maps every route to the route built where the group lands: strided
    groups too, which the tiers' shape key lets move by less than a tier's group."""
    topo = Topology(fabric_system(nodes_per_leaf=2, oversubscription=1.0, routing=routing,
                                  tiers='[{ name = "leaf", nodes = 2 }, { name = "spine", nodes = 4 }, '
                                        '{ name = "core" }]'), 16)
    nodes = [n for n in range(first, first + stride * span, stride) if n < 16]
    for a in nodes:  # a move by no node leaves every route where it is (an ECMP port included)
        for b in (b for b in nodes if b != a):
            here = np.array(topo.router.route(a, b).edges, dtype=np.int64)
            assert np.array_equal(topo.move_edges(here, nodes[0], np.zeros(2, dtype=np.int64)), np.stack([here, here]))
            if topo.fabric.ecmp and len(here):  # the arithmetic's own answer at d = 0, with every edge's route
                routes = np.tile(np.array([a, 0, b, 0, 1]), (len(here), 1))
                trunk = here >= topo.fabric.first + 2 * topo.node_count * len(topo.fabric.nics)
                assert np.array_equal(topo.fabric.move(here[trunk], nodes[0], np.zeros(1, dtype=np.int64),
                                                       routes[trunk])[0], here[trunk])
    d = shift
    if nodes[-1] + d >= 16 or topo.move_key(nodes) != topo.move_key([n + d for n in nodes]):
        return
    for a in nodes:
        for b in nodes:
            if a != b:
                here = np.array(topo.router.route(a, b).edges)
                there = np.array(topo.router.route(a + d, b + d).edges)
                assert np.array_equal(topo.move_edges(here, nodes[0], np.array([d]))[0], there)


@pytest.mark.slow  # a fabric of 16,384 GPUs
def test_superpod_simulates_16384_gpus():
    topo = load_system("superpod-h100", 2048)
    assert topo.hierarchy == (64, 32, 8) and topo.devices == 16384
    sim = Simulator(topo, SimSettings("auto"))
    lw = Lowering.of(Placement.of(topo.hierarchy, (16384,), ((64, 32, 8),)), (0,))
    r = sim.simulate(lw, parse_program("AllReduce(slice=0, Inside)"), 2.0**30)
    assert r.total_seconds > 0


@pytest.mark.parametrize(("tiers", "says"), [
    # uplinks of 1e7 ports: an array per port under ECMP (2.4 GiB)
    ('[{ name = "leaf", nodes = 2, uplinks = 10000000 }, { name = "spine" }]',
     "fabric.tiers[0].uplinks: 10000000 must be a whole number in 1..1048576 (uplink ports)"),
    ('[{ name = "leaf", nodes = 2, uplinks = 2.5 }, { name = "spine" }]', "fabric.tiers[0].uplinks: 2.5 must be a whole"),
    ('[{ name = "leaf", nodes = 2, uplinks = 17 }, { name = "spine" }]',
     "fabric.tiers[0].uplinks: 17 gives each leaf group 17 uplink ports of 10 GB/s for the 2 NICs under it, above "
     "the bound of 16"),
    # a group of 10^12 nodes: 116 TiB of cables' ports
    ('[{ name = "leaf", nodes = 1000000000000 }, { name = "spine" }]',
     "fabric.tiers[0].nodes: 1000000000000 must be a whole number in 1..16384 (nodes)"),
    # 0.001: 1,000 ports per NIC (3.9 GiB at 16,384 nodes)
    ('[{ name = "leaf", nodes = 2, oversubscription = 0.001 }, { name = "spine" }]',
     "fabric.tiers[0].oversubscription: 0.001 gives each leaf group 2,000 uplink ports"),
    ('[{ name = "leaf", nodes = 2, oversubscription = inf }, { name = "spine" }]',
     "fabric.tiers[0].oversubscription: inf must be a number in [0.000976562, 1024]"),
])
def test_fabric_counts_are_bounded_by_what_is_physical(tiers, says):
    with pytest.raises(TopologyError) as e:
        fabric_system(routing="ecmp", tiers=tiers)
    assert str(e.value).startswith("test.toml: " + says)


def test_an_ecmp_all_to_all_tier_needs_a_port_per_peer_group():
    # 64 leaves of one node, each with one uplink port, joined all-to-all: 63 direct links each, 4,032 in all
    spec = fabric_system(routing="ecmp", nodes_per_leaf=1, oversubscription=1.0,
                         tiers='[{ name = "leaf", nodes = 1 }, { name = "spine", connect = "all-to-all" }]')
    Topology(spec, 2)  # two leaves: one port each reaches the other
    with pytest.raises(TopologyError, match="at 64 nodes the spine tier joins 64 leaf groups all-to-all, but under "
                                            "ecmp routing each pair is a direct link and a leaf group has 1 uplink "
                                            "ports for its 63 peers"):
        Topology(spec, 64)


# capacities and latencies of every shipped fabric at 256 nodes under both routings (sha256 of their bytes,
# taken before the fabric's counts were bounded): the bounds leave every shipped system as it was
SHIPPED_FABRICS = [
    ("dgx-b200", "adaptive", 20098, "ae37e4b70dde7dda"),  # added with the file (issue 32)
    ("dgx-b200", "ecmp", 28160, "e31e4febc5823824"),
    ("gb200-nvl72-pod", "adaptive", 147520, "0380b9f84879d262"),
    ("gb200-nvl72-pod", "ecmp", 184320, "87ead9d0eea52a32"),
    ("perlmutter", "adaptive", 9860, "589894b8fdf0a2a4"),  # the first switch on the NIC links (issue 32 review)
    ("perlmutter", "ecmp", 17924, "f5449e969771962a"),
    ("roce-h100", "adaptive", 20480, "644b5910816ae0f7"),
    ("roce-h100", "ecmp", 24064, "d898cbf03a6fcf3d"),
    ("superpod-h100", "adaptive", 20098, "b91ca36c97cede84"),
    ("superpod-h100", "ecmp", 28160, "76ad33b4b64af05d"),
]


@pytest.mark.parametrize(("name", "routing", "links", "digest"), SHIPPED_FABRICS)
def test_shipped_fabrics_load_with_the_same_links(name, routing, links, digest):
    import hashlib
    from dataclasses import replace

    from p2sim.topology import find_spec

    spec = find_spec(name)
    topo = Topology(spec.with_fabric(replace(spec.fabric, routing=routing)), 256)
    assert len(topo.capacity) == links
    assert hashlib.sha256(topo.capacity.tobytes() + topo.latency.tobytes()).hexdigest()[:16] == digest


def _shape_classes_against_flows(system: str, nodes: int, axes: tuple[int, ...], algo: str,
                                 limit: int = 8) -> tuple[int, int]:
    """Every matrix's data-axis AllReduce step: each class of the tiers' shape key is exact (a member's
    own collective, built where it is, loads the template's links moved to it) and refines the
    flow-level symmetry (the k-th flows of its members are in one class of :func:`quotient`).
    Returns (groups, classes) over the first ``limit`` matrices."""
    from p2sim.collectives import Expander
    from p2sim.formalism.placement import enumerate_matrices
    from p2sim.sim.flows import moved_flow_arrays
    from p2sim.sim.moved import moved_classes
    from p2sim.sim.symmetry import quotient

    topo = load_system(system, nodes)
    gpn = topo.gpus_per_node
    sim = Simulator(topo, SimSettings(algo))
    groups_seen = classes_seen = 0
    for m in enumerate_matrices(topo.hierarchy, axes)[:limit]:
        step = Lowering.of(Placement.of(topo.hierarchy, axes, m), [0]).lower(parse_program("AllReduce(slice=0, Inside)"))[0]
        v = [2.0**30] * len(step.groups)
        classes = []
        for g, vol, shifts, members in moved_classes(topo, step, v):
            a, p = sim.expander.choose("AllReduce", g, vol, algo, "auto")
            c = sim.expander.collective(a, p, "AllReduce", g, vol)
            classes.append((c, vol, shifts, members))
            e, load = c.link_load()
            for k in {0, len(members) - 1}:  # built in place by a fresh expander (nothing moved)
                other = step.groups[int(members[k])]
                own = Expander(topo, sim.expander.rates).collective(a, p, "AllReduce", other, vol)
                oe, oload = own.link_load()
                moved = topo.move_edges(e, min(g) // gpn, shifts[k:k + 1])[0]
                assert sorted(zip(moved.tolist(), load.tolist())) == sorted(zip(oe.tolist(), oload.tolist()))
        groups_seen += len(step.groups)
        classes_seen += len(classes)
        flows, capacity = moved_flow_arrays(topo, "AllReduce", step, classes)
        q = quotient(flows.indptr, flows.edges, flows.coef, capacity, flows.volume, flows.latency)
        per_group = len(flows.volume) // len(step.groups)
        of_flow = (np.arange(len(flows.volume)) if q is None else q.of_flow).reshape(len(step.groups), per_group)
        for _, _, _, members in classes:
            assert (of_flow[members] == of_flow[members[0]]).all(), (system, nodes, m)
    return groups_seen, classes_seen


@pytest.mark.parametrize(("system", "nodes", "axes"), [
    ("superpod-h100", 64, (16, 4, 8)),
    ("superpod-h100", 512, (128, 4, 8)),
    ("roce-h100", 64, (16, 4, 8)),
    pytest.param("gb200-nvl72-pod", 64, (64, 8, 9), marks=pytest.mark.slow),  # 4,608 GPUs
    ("perlmutter", 256, (64, 4, 4)),
    ("dgx-b200", 64, (16, 4, 8)),
])
def test_the_tiers_shape_symmetry_is_exact_and_refines_the_flow_level_one(system, nodes, axes):
    # ECMP: every group over several nodes is built where it is, so fewer of its matrices
    groups, classes = _shape_classes_against_flows(system, nodes, axes, "ring", 3 if system == "roce-h100" else 8)
    assert classes < groups or system == "roce-h100"


def test_a_strided_group_is_one_class_wherever_its_stage_is():
    """Data-parallel groups with one node per pipeline stage in every unit (nodes p, p + 4, ...) differ
    only by position: one class per local GPU (each its rail), not one per stage as well."""
    from p2sim.sim.moved import moved_classes

    topo = load_system("superpod-h100", 64)  # 2 units of 32 nodes
    groups = [tuple((p + 4 * k) * 8 + g for k in range(16)) for p in range(4) for g in range(8)]
    classes = list(moved_classes(topo, LoweredStep(Op.ALL_REDUCE, tuple(groups)), [1.0] * len(groups)))
    assert len(classes) == 8
    assert sorted(len(members) for *_, members in classes) == [4] * 8


def test_groups_spanning_into_a_partial_last_unit_are_only_themselves():
    """The fabric is irregular there: the key leaves those groups to the flow-level symmetry."""
    f = load_system("superpod-h100", 48).fabric  # units of 32 nodes: the second holds 16
    keys = f.move_keys(np.array([[0, 1], [32, 33], [30, 33], [29, 32], [0, 31]]))
    assert keys[:, 0].tolist() == [-1, -1, 30, 29, -1]  # inside a unit, even the partial one: moves
    assert (keys[0] == keys[1]).all()


def test_an_ecmp_port_moves_with_its_route():
    """Under ECMP a moved port is the moved route's hash (Fabric.move given each edge's route): the same
    links :meth:`Fabric.mids` gives the moved routes, for moves of whole leaves and of whole rails' groups."""
    f = load_system("roce-h100", 64).fabric  # leaves of 8 nodes per rail, 8 ports each
    rng = np.random.default_rng(0)
    n = 40
    p = rng.integers(0, 16, n)
    q = (p + 8 * rng.integers(1, 3, n)) // 8 * 8 + rng.integers(0, 8, n)  # another leaf: through the spines
    x = rng.integers(0, 8, n)
    salt = rng.integers(0, 64, n)
    indptr, edges = f.mids(p, x, q, x, salt)
    assert f.hashed(edges).all() and len(edges) == 2 * n  # a leaf's port up, the other's down
    routes = np.repeat(np.column_stack([p, x, q, x, salt]), np.diff(indptr), axis=0)
    shifts = np.array([8, 16])
    moved = f.move(edges, 0, shifts, routes)
    for row, d in zip(moved, shifts):
        assert row.tolist() == f.mids(p + d, x, q + d, x, salt)[1].tolist()
    assert (moved[0] != edges + 2 * 8 * 1).any()  # not a shift of the ids: re-hashed
    with pytest.raises(ValueError, match="routes"):
        f.move(edges, 0, shifts)
