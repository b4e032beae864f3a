"""The flows stage (p2sim.collectives.flows): a structure with its protocol -- the pipeline fill NCCL's latency
leaves out, the CTA cap at fewer channels or threads, the hops that store and forward whole chunks."""

from __future__ import annotations

import pytest

from p2sim.collectives import Expander
from p2sim.collectives.flows import Flows
from p2sim.topology import load_system

def test_nvls_latency_adds_two_loops_of_its_pipeline_fill():
    """all_reduce.h (NVLS): scatter, the heads' reduce + multicast and gather hand whole loops of a chunk per head
    on, so the last loop leaves two loops after its bytes.  8 H100s: 16 channels x 8 heads x 128 KiB (1 GiB is
    not below 64 x 16 x 8 x 128 KiB) = 16 MiB a loop; NCCL's own latency (25 us) leaves the fill out."""
    topo = load_system("dgx-h100", 1)
    c = Expander(topo).collective("nvls", "Simple", "AllReduce", tuple(range(8)), 2**30)
    assert c.channels == 16 and c.tuning[0] == pytest.approx(25e-6)
    assert c.latency - c.tuning[0] == pytest.approx(2 * 16 * 8 * 131072 / c.algbw(topo.capacity))


def test_nvls_tree_fill_grows_with_the_trees_depth():
    """NVLS Tree: NVLS's two loops plus one per tree hop up and down; 2 DGX H100s: depth 1, 4 loops of
    16 channels x 8 heads x 128 KiB (NVLSTREE_MAX_CHUNKSIZE caps at 64 KiB only from 4 nodes)."""
    topo = load_system("dgx-h100", 2)
    ex = Expander(topo)
    c = ex.collective("nvls_tree", "Simple", "AllReduce", tuple(range(16)), 2**30)
    assert ex.flows.fill("nvls_tree", "AllReduce", 2, c.channels, 8 * 131072, 1e11) == pytest.approx(
        4 * 16 * 8 * 131072 / 1e11)
    assert ex.flows.fill("ring", "AllReduce", 2, 16, 8 * 131072, 1e11) == 0.0  # a ring's steps are NCCL's latency


def test_a_ring_on_fewer_channels_moves_at_its_ctas_share():
    """Medium-size ramp: at 64 KiB NCCL runs 2 of the 24 channels of 8 A100s (64 KiB / (512 threads x 64 B));
    each CTA moves the node's ring rate over 24 channels, not all of NVLink."""
    ex = Expander(load_system("dgx-a100", nodes=1))
    m = tuple(range(8))
    full = ex.collective("ring", "Simple", "AllReduce", m, 2**30)
    small = ex.collective("ring", "Simple", "AllReduce", m, 65536)
    assert small.channels == 2 and full.channels == 24
    per = ex.flows.node_channel_rate(m)
    assert per == pytest.approx(240.0 / 24)  # NVLink 3 at NCCL's 240 GB/s over 24 channels
    assert small.algbw(ex.topo.capacity) * small.bus_factor == pytest.approx(2 * per * 1e9)
    assert full.algbw(ex.topo.capacity) * full.bus_factor > 20 * per * 1e9  # all channels: the links bind


def test_a_ring_with_halved_threads_moves_at_their_share():
    """Below 32 KiB a Simple ring runs 1 channel with 512 threads halved (enqueue.cc): 16 KiB - 1 gets 128."""
    ex = Expander(load_system("dgx-a100", nodes=1))
    m = tuple(range(8))
    c = ex.collective("ring", "Simple", "AllReduce", m, 16383)
    assert c.channels == 1
    assert c.algbw(ex.topo.capacity) * c.bus_factor == pytest.approx(ex.flows.node_channel_rate(m) * 128 / 512 * 1e9)


def test_a_tree_simple_chunk_waits_behind_every_hop_that_stores_and_forwards_it():
    """Tree Simple (ProtoSimple<1, 1>, all_reduce.h) hands each chunk on whole at each of its 2 x 7 chain hops
    and 2 network hops (2 nodes of 8); the bytes at the collective's rate count one pass through the slowest
    hop.  With a rate far above the node's links every hop takes the chunk at the slowest pace: 15 more."""
    topo = load_system("p4d", 2)
    ex = Expander(topo)
    m = tuple(range(16))
    assert ex.flows.forwarded("tree", "Simple", "AllReduce", m, 2, 8, 262144, 1e15) == pytest.approx(
        15 * 8 * 262144 / 1e15)
    # at a slower rate a chain hop moves the 8 channels' chunks at the node's ring rate, the network hops at the
    # collective's pace (one of the two already counted)
    node = ex.flows.node_ring_rate(m) * 1e9
    assert ex.flows.forwarded("tree", "Simple", "AllReduce", m, 2, 8, 262144, 1e10) == pytest.approx(
        8 * 262144 / 1e10 + 14 * 8 * 262144 / node)
    # LL and LL128 pass NVLink lines on as they land, a ring's chunk is a 1/ranks share: nothing left out
    for algo, proto in (("tree", "LL"), ("tree", "LL128"), ("ring", "Simple")):
        assert ex.flows.forwarded(algo, proto, "AllReduce", m, 2, 8, 262144, 1e10) == 0.0


def test_a_medium_tree_simple_allreduce_on_p4d_pays_its_chunks_hops(monkeypatch):
    """2 x p4d (NCCL_PROTO=simple), 2 MiB: 8 channels of one 256 KiB chunk each; the chunk's 16 hops are
    time NCCL's model leaves out, and p2sim's latency holds them beyond what it had without them."""
    topo = load_system("p4d", 2)
    m = tuple(range(16))
    ex = Expander(topo)
    c = ex.collective("tree", "Simple", "AllReduce", m, 2**21)
    fill = ex.flows.forwarded("tree", "Simple", "AllReduce", m, 2, c.channels, 2**21 // c.channels,
                              c.tuning[1] / 0.92)
    monkeypatch.setattr(Flows, "forwarded", lambda *a: 0.0)
    without = Expander(topo).collective("tree", "Simple", "AllReduce", m, 2**21)
    assert c.channels == 8 and fill > 50e-6
    assert c.latency - without.latency == pytest.approx(fill)
    assert c.tuning == without.tuning  # NCCL's choice does not see it


def test_infiniband_trees_of_ll_and_ll128_are_unchanged_by_the_forwarded_hops():
    """2 DGX H100 over InfiniBand: from 64 KiB to 4 MiB NCCL runs trees of LL and LL128, whose NVLink hops stream:
    no hop of theirs is added."""
    topo = load_system("dgx-h100", 2)
    ex = Expander(topo)
    m = tuple(range(16))
    for n in (2**16, 2**20, 2**22):
        algo, proto = ex.choose("AllReduce", m, n)[:2]
        assert proto != "Simple"
        c = ex.collective(algo, proto, "AllReduce", m, n)
        assert ex.flows.forwarded(algo, proto, "AllReduce", m, 2, c.channels, 2**16, 1e10) == 0.0
