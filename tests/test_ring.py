from __future__ import annotations

import pytest

from p2sim.collectives import Expander
from p2sim.collectives.ring import chain_pairs, ring_factor
from p2sim.topology import load_system

from .helpers import rail_nodes


@pytest.mark.parametrize("op", ["AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"])
def test_bytes_sent_equal_bytes_received(op):
    t = load_system("v100", 2)
    c = Expander(t).collective("ring", "Simple", op, (3, 0, 5, 9, 12), 2**30)
    sent, received = c.sent(), c.received()
    assert sum(sent.values()) == pytest.approx(sum(received.values()))
    n = 5
    if op in ("AllReduce", "ReduceScatter", "AllGather"):
        assert all(v == pytest.approx(ring_factor(op, n)) for v in sent.values())
    else:  # pipelined chains from / to the root, half the data each way round the ring
        assert sum(sent.values()) == pytest.approx(n - 1)
        if op == "Broadcast":
            assert sent[3] == pytest.approx(1.0) and received[3] == 0.0
        else:
            assert received[3] == pytest.approx(1.0) and sent[3] == 0.0


def test_chain_pairs():
    assert chain_pairs("AllReduce", [0, 1, 2], 0) == [(0, 1), (1, 2), (2, 0)]
    assert chain_pairs("Broadcast", [0, 1, 2], 1) == [(1, 2), (2, 0)]
    assert chain_pairs("Reduce", [0, 1, 2], 1) == [(2, 0), (0, 1)]


def test_each_channel_pair_enters_and_leaves_by_one_nic():
    topo = rail_nodes(8, 8)
    c = Expander(topo).collective("ring", "Simple", "AllReduce", tuple(range(16)), 2**30)
    assert c.channels == 16 and len(c.flows) == 8
    for f in c.flows:
        nics = {topo.edges[e][1] for h in f.hops if h.inter_node for e in h.edges
                if topo.edges[e][1].startswith("net/")}
        assert len(nics) == 1  # one rail per channel pair


def test_two_gpus_sharing_a_nic_load_every_nic_equally():
    topo = rail_nodes(4, 2)  # 4 GPUs, 2 NICs per node
    c = Expander(topo).collective("ring", "Simple", "AllReduce", tuple(range(8)), 2**30)
    edges, coef = c.link_load()
    ups = {topo.edges[e][0]: v for e, v in zip(edges.tolist(), coef.tolist()) if topo.edges[e][1].startswith("net/")}
    assert set(ups) == {"n0/nic0", "n0/nic1", "n1/nic0", "n1/nic1"}
    # the ring's whole network traffic, 2(n-1)/n per node and direction, split evenly over two NICs
    assert all(v == pytest.approx(2 * 7 / 8 / 2) for v in ups.values())
