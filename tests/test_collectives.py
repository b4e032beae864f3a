from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p2sim.collectives import Expander, check_algo, step_volumes
from p2sim.collectives.latency import BASE_LATENCY_S, ring_latency
from p2sim.collectives.ring import channels, ring_order
from p2sim.collectives.tree import btree_parent, double_tree
from p2sim.errors import InputError
from p2sim.hierarchy import Lowering
from p2sim.placement import Placement
from p2sim.program import parse_program
from p2sim.topology import load_system

from .helpers import ring_node


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


def test_ring_order_keeps_nodes_consecutive_and_channels_rotate():
    h = load_system("h100", 2)
    members = [9, 1, 8, 0, 10, 2]
    assert ring_order(h, members) == [0, 1, 2, 8, 9, 10]
    assert ring_order(h, members, 1) == [1, 2, 0, 9, 10, 8]
    assert channels(h, members) == 3  # GPUs 0,1,2 use NICs 0,1,2
    a = load_system("a100", 2)
    assert channels(a, [0, 1, 16, 17]) == 1
    assert channels(a, [0, 1, 2]) == 1


@pytest.mark.parametrize("op", ["AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"])
def test_bytes_sent_equal_bytes_received(op):
    t = load_system("v100", 2)
    p = Expander(t).pattern("ring", op, [3, 0, 5, 9, 12])
    assert sum(p.sent().values()) == pytest.approx(sum(p.received().values()))
    n = 5
    per_rank = {"AllReduce": 2 * (n - 1) / n, "ReduceScatter": (n - 1) / n, "AllGather": (n - 1) / n}
    if op in per_rank:
        assert all(v == pytest.approx(per_rank[op]) for v in p.sent().values())
    else:  # pipelined chains from / to the root, one each way round the ring, half the data each
        sent, received = p.sent(), p.received()
        assert sum(sent.values()) == pytest.approx(n - 1)
        if op == "Broadcast":
            assert sent[3] == pytest.approx(1.0) and received[3] == 0.0
        else:
            assert received[3] == pytest.approx(1.0) and sent[3] == 0.0
        assert max(received.values()) <= 1.0 + 1e-12 and max(sent.values()) <= 1.0 + 1e-12


def test_tree_pattern_traffic():
    t = load_system("a100", 4)
    members = list(range(0, 64, 4))  # 4 GPUs in each of 4 nodes
    p = Expander(t).pattern("tree", "AllReduce", members)
    assert p.algo == "tree"
    assert sum(p.sent().values()) == pytest.approx(sum(p.received().values()))
    # chain: 3 hops per node, 1 byte each way; two trees over 4 nodes: 3 edges each, 1/2 byte each way
    assert sum(p.sent().values()) == pytest.approx(4 * 3 * 2 + 2 * 3 * 0.5 * 2)
    # other collectives stay rings under NCCL_ALGO=Tree
    assert Expander(t).pattern("tree", "ReduceScatter", members).algo == "ring"


def test_ring_latency_follows_nccl_formula():
    t = ring_node(4, latency=2.0)
    p = Expander(t).pattern("ring", "AllReduce", [0, 1, 2, 3])
    assert p.latency == pytest.approx(ring_latency("AllReduce", 4, 1, 2e-6, 0.0))
    assert p.latency == pytest.approx(BASE_LATENCY_S + 6 * 2e-6)


def test_step_volumes_follow_device_states():
    pl = Placement.of((2, 16), (2, 16), ((1, 2), (2, 8)))
    lw = Lowering.of(pl, [1])
    prog = parse_program("ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)")
    vols = step_volumes(lw, prog, 1024.0)
    assert [set(v) for v in vols] == [{1024.0}, {128.0}, {1024.0}]
    assert [len(v) for v in vols] == [4, 16, 4]
    prog = parse_program("Reduce(slice=1, Inside) ; AllReduce(slice=1, Master(0)) ; Broadcast(slice=1, Inside)")
    assert [set(v) for v in step_volumes(lw, prog, 1024.0)] == [{1024.0}] * 3


def test_unknown_algorithm():
    with pytest.raises(InputError, match="algo"):
        check_algo("butterfly")


def test_analytic_time_per_byte_uses_the_slowest_hop():
    t = load_system("a100", 2)
    p = Expander(t).pattern("ring", "AllReduce", list(range(32)))
    assert p.analytic_seconds_per_byte == pytest.approx(2 * 31 / 32 / 8e9)
    assert math.isclose(Expander(t).pattern("tree", "AllReduce", list(range(32))).analytic_seconds_per_byte, 2 / 8e9)
