from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p2sim.collectives import Expander
from p2sim.collectives.hops.tree import btree_parent, double_tree
from p2sim.topology import load_system

from .helpers import rail_nodes


@given(st.integers(1, 200))
def test_btree_is_a_binary_tree_rooted_at_zero(n):
    parents = [btree_parent(r, n) for r in range(n)]
    assert parents[0] is None
    children = [0] * n
    for r, p in enumerate(parents[1:], 1):
        assert p is not None and 0 <= p < n and p != r
        children[p] += 1
    assert max(children) <= 2
    for r in range(n):  # every rank reaches the root
        seen = 0
        while parents[r] is not None:
            r = parents[r]
            seen += 1
            assert seen <= n


@given(st.integers(2, 64))
def test_double_tree_is_complementary(n):
    t1, t2 = double_tree(n)
    inner1 = {p for p in t1 if p is not None}
    inner2 = {p for p in t2 if p is not None}
    if n % 2 == 0:
        assert not inner1 & inner2  # mirror: no node is interior in both trees
    assert sum(p is None for p in t2) == 1


def test_tree_traffic_on_four_nodes():
    t = load_system("a100", 4)
    members = tuple(range(0, 64, 4))  # 4 GPUs in each of 4 nodes
    c = Expander(t).collective("tree", "Simple", "AllReduce", members, 2**30)
    assert c.algo == "tree"
    assert sum(c.sent().values()) == pytest.approx(sum(c.received().values()))
    # chain: 3 hops per node, 1 byte each way; two trees over 4 nodes: 3 edges each, 1/2 byte each way
    assert sum(c.sent().values()) == pytest.approx(4 * 3 * 2 + 2 * 3 * 0.5 * 2)


def test_on_two_nodes_a_tree_sends_each_byte_across_once_each_way():
    topo = rail_nodes(8, 8)
    c = Expander(topo).collective("tree", "Simple", "AllReduce", tuple(range(16)), 2**30)
    edges, coef = c.link_load()
    up = sum(v for e, v in zip(edges.tolist(), coef.tolist())
             if topo.edges[e][0].startswith("n0/nic") and topo.edges[e][1].startswith("net/"))
    assert up == pytest.approx(1.0)  # S per node and direction
    hops = [h for f in c.flows for h in f.hops]
    assert {h.overhead for h in hops} == {1.0}  # NCCL's 92% for trees is its choice's, not the wire's
    assert c.tuning[1] == pytest.approx(0.92 * c.algbw(topo.capacity))
    # every channel's trees use one NIC on both nodes: 8 NICs, one tree channel each
    assert len(c.flows) == 8


def test_odd_node_counts_use_the_shifted_tree():
    topo = rail_nodes(8, 8, nodes=3)
    c = Expander(topo).collective("tree", "Simple", "AllReduce", tuple(range(24)), 2**30)
    assert sum(c.sent().values()) == pytest.approx(sum(c.received().values()))


def test_the_double_trees_two_trees_are_connections_of_their_own_under_ecmp():
    # NCCL runs tree 0 on channel c and tree 1 on its copy c + nChannels (src/graph/connect.cc,
    # connectTrees), each channel with its own connections (src/transport/net.cc): on two nodes both trees
    # send from node 0 to node 2 (one up, one down), and their queue pairs hash apart -- at seed 0 onto
    # both uplink ports each way, where one salt for both would take one port each way
    from p2sim.collectives import Expander

    from .test_ring import _ecmp, _ports

    topo = _ecmp(1, seed=0)
    c = Expander(topo).collective("tree", "Simple", "AllReduce", (0, 2), 2**30)
    assert _ports(topo, c.flows[0]) == {f"leaf {g} port {j} {d}" for g in (0, 1) for j in (0, 1)
                                        for d in ("up", "down")}


def _gb200(nodes: int, version: str):
    from dataclasses import replace

    from p2sim.topology import find_spec
    spec = find_spec("gb200-nvl72-pod")
    return load_system(replace(spec, nccl=replace(spec.nccl, version=version, nvls=False, collnet=False)), nodes=nodes)


def test_a_tree_across_racks_runs_at_the_newest_per_channel_figure_and_chooses_by_its_releases():
    """Twenty GB200 racks, NVLS and CollNet off (the published rows of 1,440 GPUs).  NCCL 2.26.2 chose by its tuning.cc's Blackwell rows, twice
    Hopper's (72 GB/s a tree channel from 4 nodes): a Simple tree at 16 GiB (its LL128 off: the NICs sit
    behind Grace, PHB before 2.27.3).  Its time is bound by the newest figure, 2.28.3's 24 GB/s per graph
    channel: 16 graph channels (32 channels, a pair per graph channel) x 24 GB/s = 384 GB/s of bus bandwidth,
    192 GB/s of algorithm bandwidth -- by hand, 16 GiB in at least 89.5 ms."""
    old = _gb200(20, "2.26.2")
    ex = Expander(old)
    members = tuple(range(1440))
    nbytes = float(2**34)
    assert ex.choose("AllReduce", members, nbytes) == ("tree", "Simple")
    coll = ex.collective("tree", "Simple", "AllReduce", members, nbytes)
    assert coll.algbw(old.capacity) == pytest.approx(16 * 24e9 / 2, rel=1e-6)
    assert ex.analytic_seconds(coll, nbytes) >= nbytes / 192e9
    # NCCL's own estimate (its choice) still counts 2.26.2's 72 GB/s a channel: above the time's
    assert coll.tuning[1] > coll.algbw(old.capacity)
    # the newest release's 24 GB/s make its own model pick the ring there (its latency, 2,878 steps, paid off)
    assert Expander(_gb200(20, "")).choose("AllReduce", members, nbytes)[0] == "ring"
