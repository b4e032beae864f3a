"""AllToAll and SendRecv as NCCL's grouped sends and receives (p2sim.collectives.p2p)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.collectives import Expander
from p2sim.collectives.p2p import channels_per_peer, p2p_collective, p2p_pairs, pxn_proxy
from p2sim.formalism.hierarchy import LoweredStep
from p2sim.formalism.semantics import Op
from p2sim.sim.simulator import Simulator
from p2sim.topology import load_system
from p2sim.topology.settings import ModelRates

GIB = 2**30


def _edge(topo, src: str, dst: str) -> int:
    """The id of node-level link ``src -> dst`` (names as in the system file, node 0)."""
    return topo._index[(f"n0/{src}", f"n0/{dst}")]


def test_alltoall_in_one_nvswitch_node_is_its_bytes_over_a_gpu_link():
    """n ranks on one NVSwitch: each sends S (n-1)/n through its own NVSwitch port, all at once."""
    topo = load_system("h100", nodes=1)
    sim = Simulator(topo)
    g = tuple(range(8))
    r = sim.step(LoweredStep(Op.ALL_TO_ALL, (g,)), (float(GIB),))
    c = sim.expander.collective("p2p", "Simple", "AllToAll", g, GIB)
    port = float(topo.capacity[_edge(topo, "gpu0", "nvswitch")])
    assert r.seconds == pytest.approx(c.latency + GIB * 7 / 8 / port, rel=1e-9)
    assert c.bus_factor == pytest.approx(7 / 8)
    assert sum(c.sent().values()) == pytest.approx(8 * 7 / 8)


def test_sendrecv_across_two_nodes_is_its_buffer_over_one_nic():
    topo = load_system("h100", nodes=2)
    sim = Simulator(topo)
    r = sim.step(LoweredStep(Op.SEND_RECV, ((0, 8),)), (float(GIB),))
    c = sim.expander.collective("p2p", "Simple", "SendRecv", (0, 8), GIB)
    nic = float(topo.capacity[list(topo.router.route(0, 8).edges)].min())  # the 400 Gb/s NIC binds its route
    assert r.seconds == pytest.approx(c.latency + GIB / nic, rel=1e-9)
    assert c.nodes == 2 and c.bus_factor == 1.0


def test_pairs_of_nccl_tests():
    s, d, c = p2p_pairs("SendRecv", 2)
    assert list(zip(s.tolist(), d.tolist())) == [(0, 1), (1, 0)]
    s, d, c = p2p_pairs("AllToAll", 3)
    assert sorted(zip(s.tolist(), d.tolist())) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert np.allclose(c, 1 / 3)
    with pytest.raises(ValueError):
        p2p_pairs("AllReduce", 2)


def test_pxn_sends_through_the_rail_matched_gpu():
    """GPU 0 to GPU 9 (local 1 on the next node): NVLink to GPU 1, out of its NIC on rail 1, no spine."""
    topo = load_system("h100", nodes=2)
    assert pxn_proxy(topo, 0, 9) == 1 and pxn_proxy(topo, 0, 8) == 0 and pxn_proxy(topo, 0, 9, pxn=False) == 0
    g = tuple(range(16))
    spine = {i for i, k in enumerate(topo.edge_class) if k == "spine"}
    with_pxn = p2p_collective(topo, topo.spec.rates, "AllToAll", g, GIB, 16)
    without = p2p_collective(topo, topo.spec.rates, "AllToAll", g, GIB, 16, pxn=False)
    assert not spine & set(with_pxn.flows[0].edges.tolist())
    assert spine & set(without.flows[0].edges.tolist())
    hops = with_pxn.flows[0].hops
    legs = [h for h in hops if (h.src, h.dst) == (0, 1)]  # the NVLink leg (and 0's own chunk to 1)
    assert sum(h.coef for h in legs) == pytest.approx(2 / 16)
    assert any(h.src == 1 and h.dst == 9 and h.inter_node for h in hops)


def test_alltoall_across_nodes_is_bound_by_the_nics():
    """Half of each rank's buffer leaves the node, through its rail's NIC (with PXN every NIC carries S/2)."""
    topo = load_system("h100", nodes=2)
    sim = Simulator(topo)
    g = tuple(range(16))
    r = sim.step(LoweredStep(Op.ALL_TO_ALL, (g,)), (float(GIB),))
    c = sim.expander.collective("p2p", "Simple", "AllToAll", g, GIB)
    nic = float(topo.capacity[list(topo.router.route(0, 8).edges)].min())
    assert r.seconds == pytest.approx(c.latency + GIB / 2 / nic, rel=1e-9)


def test_concurrent_groups_contend_on_shared_links():
    """Two SendRecv pairs from GPUs 0 and 1 to the next node: without PXN's rails each uses its own NIC, so
    a step of both takes as long as one; a third group through the same NICs (2 <-> 10 shares none) neither."""
    topo = load_system("h100", nodes=2)
    sim = Simulator(topo)
    one = sim.step(LoweredStep(Op.SEND_RECV, ((0, 8),)), (float(GIB),)).seconds
    two = sim.step(LoweredStep(Op.SEND_RECV, ((0, 8), (1, 9))), (float(GIB), float(GIB))).seconds
    assert two == pytest.approx(one, rel=1e-9)
    # an AllToAll of the 16 GPUs beside nothing vs. the same group twice the buffer: linear in bytes past latency
    c = sim.expander.collective("p2p", "Simple", "AllToAll", tuple(range(16)), GIB)
    t1 = sim.step(LoweredStep(Op.ALL_TO_ALL, (tuple(range(16)),)), (float(GIB),)).seconds
    t2 = sim.step(LoweredStep(Op.ALL_TO_ALL, (tuple(range(16)),)), (float(2 * GIB),)).seconds
    assert t2 - c.latency == pytest.approx(2 * (t1 - c.latency), rel=1e-6)


def test_channels_per_peer_follow_ncclTopoComputeP2pChannels():
    topo = load_system("h100", nodes=4)
    # h100.toml puts two 400 Gb/s NICs on each GPU's PCIe switch: both local, max(2, ceil(100 / 14)) = 8
    assert topo.router.local_nics(0) == ("nic0", "nic1")
    assert channels_per_peer(topo, (0, 8), 16) == 8
    # 32 ranks need ceil(32 / 8) = 4 batches: halved while per x 4 > 16 p2p channels (to 4); 8 channels: 2
    assert channels_per_peer(topo, tuple(range(32)), 16) == 4
    assert channels_per_peer(topo, tuple(range(32)), 8) == 2
    assert channels_per_peer(topo, tuple(range(8)), 16) == 2  # inside a node


def test_expander_chooses_p2p_whatever_is_forced():
    ex = Expander(load_system("h100", nodes=1))
    assert ex.choose("AllToAll", tuple(range(8)), GIB) == ("p2p", "Simple")
    assert ex.choose("SendRecv", (0, 1), 8, "tree", "LL") == ("p2p", "Simple")
    lat, bw = ex.tuning("p2p", "Simple", "AllToAll", tuple(range(8)), GIB)
    assert lat > 0 and bw > 0


def test_one_channel_per_peer_carries_nccls_per_channel_figure_not_the_nic():
    """16 nodes of 8 GPUs: 128 peers halve p2pnChannelsPerPeer to 1 (ncclTopoComputeP2pChannels), and one
    channel's connection carries NCCL_P2P_PER_CHANNEL_NET_BW = 14 GB/s, below the 50 GB/s NIC (hand figure:
    1 GiB / 14 GB/s = 76.7 ms); at 2 nodes 8 channels per peer fill the NIC instead."""
    topo = load_system("dgx-b200", nodes=16)
    sim = Simulator(topo)
    g = tuple(range(128))
    c = sim.expander.collective("p2p", "Simple", "SendRecv", g, GIB)
    assert c.channels == 1
    r = sim.step(LoweredStep(Op.SEND_RECV, (g,)), (float(GIB),))
    assert r.seconds == pytest.approx(c.latency + GIB / 14e9, rel=1e-9)
    two = load_system("dgx-b200", nodes=2)
    c2 = Simulator(two).expander.collective("p2p", "Simple", "SendRecv", tuple(range(16)), GIB)
    nic = float(two.capacity[list(two.router.route(0, 8).edges)].min())
    assert c2.channels == 8 and nic < 8 * 14e9
    r2 = Simulator(two).step(LoweredStep(Op.SEND_RECV, (tuple(range(16)),)), (float(GIB),))
    assert r2.seconds == pytest.approx(c2.latency + GIB / nic, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=2, max_value=40))
def test_alltoall_pairs_are_every_ordered_pair_in_rank_order(n):
    """Built without the n x n pairs and their mask (issue 43), in the order of that construction."""
    s, d, c = p2p_pairs("AllToAll", n)
    assert list(zip(s.tolist(), d.tolist())) == [(a, b) for a in range(n) for b in range(n) if a != b]
    assert s.dtype == d.dtype == np.int64 and c.tolist() == [1.0 / n] * (n * (n - 1))


def test_an_alltoall_asks_the_router_per_local_pair_not_per_transfer(monkeypatch):
    """Issue 43: at 1,024 nodes a Python list per transfer (67 M) ran out of memory; the NICs and PXN proxies
    are looked up once per local GPU (pair) and indexed as arrays."""
    topo = load_system("dgx-h100", nodes=4)
    router = type(topo.router)
    calls = {"nic_of": 0, "intra_type": 0}
    for name in calls:
        real = getattr(router, name)

        def counted(self, *a, _real=real, _name=name):
            calls[_name] += 1
            return _real(self, *a)
        monkeypatch.setattr(router, name, counted)
    c = p2p_collective(topo, ModelRates(), "AllToAll", tuple(range(32)), GIB, 32)
    assert len(c.flows[0].table) > 32 * 31  # every transfer is there (PXN legs besides)
    gpn = topo.gpus_per_node
    assert calls["nic_of"] <= gpn and calls["intra_type"] <= 2 * gpn * gpn
