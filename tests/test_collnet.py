"""p2sim.collectives.hops.collnet: CollNet (SHARP) flows, rates and limits, hand-computed on a small SHARP fabric."""

from __future__ import annotations

import pytest

from p2sim.collectives.expand import Expander, check_forced
from p2sim.sim import SimSettings, Simulator
from p2sim.topology import Topology, load_system
from p2sim.util.errors import InputError

from .test_fabric import fabric_system

GB = 1e9


def sharp_system(gpus: int = 2, nics: int = 2) -> Topology:
    """2 nodes of ``gpus`` Ampere GPUs on an NVSwitch (1000 GB/s) with ``nics`` NICs of 10 GB/s, one 1:1 leaf
    with SHARP (tests/test_fabric.py's system); every link at its file rate (efficiency 1), so every rate
    below is a hand sum."""
    return Topology(fabric_system(nodes_per_leaf=2, oversubscription=1.0, nics=nics, gpus=gpus, sharp=True), 2)


def _coll(topo: Topology, algo: str, op: str, nbytes: float = 2.0**30):
    members = tuple(range(2 * topo.gpus_per_node))
    return Simulator(topo, SimSettings(algo, proto="Simple")).collectives(op, [members], [nbytes])[0]


def test_forced_collnet_allreduce_runs_at_the_nodes_nic_rate():
    """Direct and Chain send each node's buffer once up and once down: 2 NICs x 10 GB/s per node (Ampere:
    no 0.85), an AllReduce bus factor of 2 (2 nodes x 2 GPUs: nccl-tests' 2(n-1)/n = 1.5 on busbw)."""
    topo = sharp_system()
    for algo in ("collnet_direct", "collnet_chain"):
        c = _coll(topo, algo, "AllReduce")
        assert c.algo == algo and c.bus_factor == 2.0
        assert c.algbw(topo.capacity) == pytest.approx(20 * GB)
        # time of 1 GiB: latency plus bytes over 20 GB/s
        assert Expander(topo).analytic_seconds(c, 2.0**30) == pytest.approx(c.latency + 2.0**30 / (20 * GB))


@pytest.mark.parametrize("op", ["AllGather", "ReduceScatter"])
def test_collnet_direct_allgather_reducescatter_flows(op):
    """Each GPU is a rail: an AllGather gets its rail's whole part (1/2 of the buffer) from the network and
    sends its own (1/4) up, then copies the rail's part to the other GPU; NCCL's 0.9 on the network side:
    algbw = 2 NICs x 10 GB/s x 0.9 = 18 GB/s, and NCCL's bus factor 1 (no bus-to-algorithm conversion)."""
    topo = sharp_system()
    c = _coll(topo, "collnet_direct", op)
    assert c.algo == "collnet_direct" and c.bus_factor == 1.0 and len(c.flows) == 2
    assert c.algbw(topo.capacity) == pytest.approx(18 * GB)
    sent, got = c.sent(), c.received()
    # per GPU on NVLink: half the buffer each way (the rail's part, to or from the node's other GPU)
    gather = op == "AllGather"
    for g in range(4):
        nvlink_out = 0.5 if gather else 0.5
        to_net, from_net = (0.25, 0.5) if gather else (0.5, 0.25)
        assert sent[g] == pytest.approx(nvlink_out + to_net)
        assert got[g] == pytest.approx(0.5 + from_net)
    assert Expander(topo).choose(op, tuple(range(4)), 2.0**30, "collnet_direct") == ("collnet_direct", "Simple")
    assert Expander(topo).choose(op, tuple(range(4)), 2.0**30, "collnet")[0] == "collnet_direct"


@pytest.mark.parametrize("op", ["AllGather", "ReduceScatter"])
def test_collnet_allgather_needs_one_nic_per_gpu(op):
    """2 GPUs and 1 NIC per node: NCCL zeroes CollNet AllGather/ReduceScatter (localRanks > heads), runs
    its AllReduce."""
    topo = sharp_system(gpus=2, nics=1)
    with pytest.raises(InputError, match="1:1 GPU:NIC"):
        check_forced(topo, "collnet_direct", "auto", op, tuple(range(4)))
    assert _coll(topo, "collnet_direct", "AllReduce").algo == "collnet_direct"
    assert "collnet_direct" not in {a for a, _ in Expander(topo).available(op, tuple(range(4)))}


@pytest.mark.parametrize("op", ["AllReduce", "AllGather", "ReduceScatter"])
def test_collnet_refused_and_unchosen_past_8_local_ranks(op):
    """enqueue.cc skips both CollNets when a node has more than 8 local ranks (NCCL_MAX_DIRECT_ARITY + 1)."""
    topo = sharp_system(gpus=16, nics=16)
    members = tuple(range(32))
    for algo in ("collnet_direct", "collnet_chain") if op == "AllReduce" else ("collnet_direct",):
        with pytest.raises(InputError, match="at most 8"):
            check_forced(topo, algo, "auto", op, members)
    assert not any(a.startswith("collnet") for a, _ in Expander(topo).available(op, members))


def test_dgx_b200_collnet_rates_and_nccls_ranking():
    """DGX B200, 2 nodes: each GPU's NIC path binds Direct (PCIe gen5 at NCCL's 48 GB/s), with NCCL's 0.85
    (Blackwell).  Chain runs the tree's split kernel over each node's chain and one network hop each way: its 24
    channels (12 pairs) at NCCL's 2-node perChMaxTreeBw, 42.8 GB/s of bus bandwidth a pair, 12 x 42.8 / 2 =
    256.8 GB/s of algorithm bandwidth -- below Direct's 326.4, as measured (Chain 526-548 GB/s busbw, Direct
    546-606).  NCCL's model has no such cap and ranks Chain above Direct (tuning.cc: nChannels x bwIntra for
    Chain vs 0.85 x heads x bwIntra for Direct), so ``collnet`` still picks Chain, as the "CollNet" rows ran
    it; AllGather over CollNet Direct: 8 x 48 x 0.9."""
    topo = load_system("dgx-b200", 2)
    members = tuple(range(16))
    direct = _coll(topo, "collnet_direct", "AllReduce", 2.0**35)
    chain = _coll(topo, "collnet_chain", "AllReduce", 2.0**35)
    assert direct.algbw(topo.capacity) == pytest.approx(0.85 * 8 * 48 * GB)
    assert chain.algbw(topo.capacity) == pytest.approx(12 * 42.8 * GB / 2)
    assert chain.tuning[1] > direct.tuning[1]  # NCCL's own model: Chain first
    assert Expander(topo).choose("AllReduce", members, 2.0**35, "collnet")[0] == "collnet_chain"
    assert _coll(topo, "collnet_direct", "AllGather").algbw(topo.capacity) == pytest.approx(0.9 * 8 * 48 * GB)


def test_collnet_run_time_channels_and_chunks_as_nccls():
    """Hand-computed from enqueue.cc: Direct's ncSwitch loop (16 MiB, 8 heads, 24 channels: 24 -> 16 at 256 B
    per thread, then 12), Chain's ring rule (nBytes < nc x 640 x 512), and calcCollChunking's halving loops
    (Direct depth 2: 8 GiB on 24 x 8 gives 85 chunks of 512 KiB per channel and head, < 128: 256 KiB; Chain
    depth 8, at most 256 KiB: 16 MiB on 24 channels holds 2 chunks, < 512: 128 KiB, then < 64: 64 KiB)."""
    from p2sim.collectives.nccl_tables import (collnet_chain_channels, collnet_channels, collnet_chunk,
                                               collnet_direct_channels)

    assert collnet_channels(16, 8) == 24 and collnet_channels(16, 1) == 16
    assert collnet_direct_channels(24, 2**24, 8) == 12 and collnet_direct_channels(24, 2**35, 8) == 24
    assert collnet_chain_channels(24, 8 * 640 * 512) == 8 and collnet_chain_channels(24, 2**35) == 24
    assert collnet_chunk(False, 2**33, 24, 8, 8, 2**19) == 2**18
    assert collnet_chunk(False, 2**35, 24, 8, 8, 2**19) == 2**19
    assert collnet_chunk(False, 2**33, 24, 8, 1, 2**19) == 2**19  # one GPU per node: depth 1
    assert collnet_chunk(True, 2**24, 24, 1, 8, 2**19) == 2**16
    assert collnet_chunk(True, 2**35, 24, 1, 8, 2**19) == 2**18


def test_dgx_b200_collnet_direct_runs_every_channel_through_every_head():
    """connectCollNet gives every one of comm->nChannels channels all the heads: Direct's channels are the
    Chain's (the ring's half again), not one per head; each head's flow has that many connections."""
    from p2sim.collectives.algorithms import algorithm

    topo = load_system("dgx-b200", 2)
    members = tuple(range(16))
    ex = Expander(topo)
    full = ex.channels(members)
    direct = algorithm("collnet_direct").channels_used(topo, "Simple", members, full, 2.0**35)
    chain = algorithm("collnet_chain").channels_used(topo, "Simple", members, full, 2.0**35)
    assert direct == chain == min(64, full + full // 2) > 8
    c = _coll(topo, "collnet_direct", "AllReduce", 2.0**35)
    assert {f.channels for f in c.flows} == {direct}


def test_dgx_b200_collnet_chain_window_binds_at_one_gib():
    """Chain's chunk at 1 GiB is 128 KiB (calcCollChunking), 8 in flight per channel over the network step's
    round trip: below the NIC path's rate, where 32 GiB (256 KiB chunks) reaches it."""
    from p2sim.collectives.binding import CAP_WINDOW

    topo = load_system("dgx-b200", 2)
    small = _coll(topo, "collnet_chain", "AllReduce", 2.0**30)
    assert small.algbw(topo.capacity) < 0.99 * 8 * 48 * GB
    assert any(CAP_WINDOW in f.cap_kinds for f in small.flows)


# several systems: a SHARP SuperPOD, a GB200 NVL72 pod (72 GPUs a node), RoCE with ECMP, flat H100, A100 (16 GPUs,
# one NIC a node)
MEMO_SYSTEMS = [("superpod-h100", 4), ("gb200-nvl72-pod", 2), ("roce-h100", 4), ("h100", 2), ("a100", 2)]


def _local_sets(gpn: int) -> list[tuple[int, ...]]:
    """Local GPU sets of every kind a group leaves on a node: all, halves, strides, one, a pair."""
    full = tuple(range(gpn))
    return [full, full[: gpn // 2], full[gpn // 2:], full[::2], full[1::4] or (1,), (0,), (gpn - 1,), (0, gpn - 1)]


@pytest.mark.parametrize("system,nodes", MEMO_SYSTEMS)
def test_collnet_heads_memo_equals_the_plain_computation(system, nodes):
    """collnet_heads, kept in the topology's caches per local GPU set, equals the heads worked out afresh on each
    node (its template's heads moved), and collnet_head_count their number; clear() drops what is kept."""
    from p2sim.collectives.caches import CollectiveCaches
    from p2sim.collectives.channels import Segment
    from p2sim.collectives.hops.collnet import _heads_of, collnet_head_count, collnet_heads

    topo = load_system(system, nodes)
    caches = CollectiveCaches(topo)
    gpn = topo.gpus_per_node
    for node in range(nodes):
        for local in _local_sets(gpn):
            seg = Segment(node, tuple(node * gpn + g for g in local))
            plain = [(nic, node * gpn + h) for nic, h in _heads_of(topo, local, 8)]
            for kept in (None, caches, caches):  # afresh, computed and kept, then found
                assert collnet_heads(topo, seg, caches=kept) == plain
                assert collnet_head_count(topo, seg, caches=kept) == len(plain)
            assert (local, 8) in caches.collnet_heads
            assert collnet_heads(topo, seg, limit=2, caches=caches) == plain[:2]
    caches.clear()
    assert not caches.collnet_heads



def _collnet_groups(nodes: int, gpn: int) -> list[tuple[int, ...]]:
    """Groups whose nodes hold the same local GPUs (every GPU, the first half, odd ones, one) and one whose don't."""
    out = [tuple(n * gpn + g for n in range(nodes) for g in local)
           for local in (range(gpn), range(gpn // 2), range(1, gpn, 2), (gpn - 1,))]
    out.append(tuple(range(gpn)) + tuple(n * gpn + g for n in range(1, nodes) for g in range(gpn // 2)))
    return out


@pytest.mark.parametrize("system,nodes", [("superpod-h100", 8), ("superpod-h100", 3), ("sharp 4x2", 2)])
def test_collnet_tables_of_alike_nodes_equal_node_by_node(system, nodes, monkeypatch):
    """CollNet Direct's AllReduce, AllGather and ReduceScatter tables, built from one node moved by array where
    every node holds the same local GPUs, equal the tables built node by node (collnet._alike off)."""
    import numpy as np

    from p2sim.collectives.hops import collnet
    from p2sim.collectives.channels import segments

    topo = sharp_system(gpus=4, nics=2) if system == "sharp 4x2" else load_system(system, nodes)  # 2 GPUs a NIC
    assert collnet.collnet_possible(topo, segments(topo, tuple(range(topo.devices))))
    builds = [lambda s: collnet.collnet_direct_tables(topo, s, 1.2),
              lambda s: collnet.collnet_rail_tables(topo, s, "AllGather", 1.1),
              lambda s: collnet.collnet_rail_tables(topo, s, "ReduceScatter", 1.1)]
    for members in _collnet_groups(nodes, topo.gpus_per_node):
        segs = segments(topo, members)
        got = [build(segs) for build in builds]
        with monkeypatch.context() as m:
            m.setattr(collnet, "_alike", lambda topo, segs: None)
            want = [build(segs) for build in builds]
        for g, w in zip(got, want):
            assert len(g) == len(w) > 0
            for a, b in zip(g, w):
                for field in ("src", "dst", "coef", "inter", "overhead", "indptr", "edges"):
                    assert np.array_equal(getattr(a, field), getattr(b, field)), field


def _plain_net_table(topo, segs, heads, overhead, to_net=1.0, from_net=1.0):
    """The network hops of CollNet's heads, node by node (what collnet._net_table sorts into templates)."""
    import numpy as np

    from p2sim.collectives.hops.collnet import NET
    from p2sim.collectives.pattern import HopTable

    src, dst, coef, parts = [], [], [], []
    for seg, (nic, h) in zip(segs, heads):
        local, shift = h % topo.gpus_per_node, seg.node
        out_part, _, in_part = topo.router.via_parts(local, nic, nic, local)
        for part, ends, c in ((out_part, (h, NET), to_net), (in_part, (NET, h), from_net)):
            part = np.asarray(part, dtype=np.int64)
            parts.append(part + shift * topo._stride[part])
            src.append(ends[0])
            dst.append(ends[1])
            coef.append(c)
    n = len(src)
    indptr = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
    return HopTable(np.array(src), np.array(dst), np.array(coef), np.ones(n, dtype=bool), np.full(n, overhead),
                    indptr, np.concatenate(parts).astype(np.int64))


@pytest.mark.parametrize("system,nodes", [("superpod-h100", 8), ("gb200-nvl72-pod", 2), ("roce-h100", 8)])
def test_collnet_net_table_equals_node_by_node(system, nodes):
    """_net_table's hops, one template moved by array where every node's head is at one local place and NIC,
    else per template, equal the hops built node by node: every node's head alike, heads and NICs varying by node."""
    import numpy as np

    from p2sim.collectives.channels import segments
    from p2sim.collectives.hops.collnet import _net_table, collnet_heads

    topo = load_system(system, nodes)
    gpn = topo.gpus_per_node
    segs = segments(topo, tuple(range(nodes * gpn)))
    per_node = [collnet_heads(topo, s) for s in segs]
    cases = [[hs[0] for hs in per_node], [hs[i % len(hs)] for i, hs in enumerate(per_node)],
             [hs[-1 - (i % 3) % len(hs)] for i, hs in enumerate(per_node)]]
    for heads in cases:
        for args in ((1.0,), (1.25, 0.5, 1.0)):
            got, want = _net_table(topo, segs, heads, *args), _plain_net_table(topo, segs, heads, *args)
            for field in ("src", "dst", "coef", "inter", "overhead", "indptr", "edges"):
                assert np.array_equal(getattr(got, field), getattr(want, field)), field
            assert got.key() == want.key()
