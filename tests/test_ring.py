from __future__ import annotations

import pytest

from p2sim.collectives import Expander
from p2sim.collectives.hops.ring import chain_pairs, ring_factor
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


def _ecmp(qps: int, seed: int = 5, routing: str = "ecmp", oversubscription: float = 1.0, nodes_per_leaf: int = 2):
    """4 nodes of 1 GPU and 1 NIC (10 GB/s), leaves of ``nodes_per_leaf`` with 10 GB/s uplink ports."""
    from dataclasses import replace

    from p2sim.topology import Topology

    from .test_fabric import fabric_system

    spec = fabric_system(nodes_per_leaf=nodes_per_leaf, oversubscription=oversubscription, routing=routing)
    spec = spec.with_fabric(replace(spec.fabric, seed=seed))
    return Topology(replace(spec, nccl=replace(spec.nccl, ib_qps_per_connection=qps)), 4)


def _rates(topo, groups, op: str = "AllReduce") -> list[float]:
    """Each group's ``op`` rate (buffer bytes/s) when all run at once over the fabric (no latency)."""
    import numpy as np

    from p2sim.sim.engine import FlowSpec, run_flows

    colls = [Expander(topo).collective("ring", "Simple", op, g, 2**30) for g in groups]
    flows = [FlowSpec(*c.link_load(), 1e9, 0.0) for c in colls]
    _, records, _ = run_flows(flows, topo.capacity, record=True)
    assert all(len(c.flows) == 1 for c in colls) and np.all(topo.capacity > 0)
    return [1e9 / (r.end - r.start) for r in records]


def _ports(topo, flow) -> set[str]:
    """The uplink ports a flow's hops take (``leaf 0 port 1 up``, ...)."""
    f = topo.fabric
    return {f.describe(e) for h in flow.hops for e in h.edges if f.first <= e < f.end and "port" in f.describe(e)}


def test_ecmp_collision_of_two_connections_by_hand():
    # leaves of 2 nodes with 2 uplink ports of the NICs' 10 GB/s.  Broadcasts from node 0 to node 2 and
    # from node 1 to node 3 each cross leaf 0 by two connections (the ring pair's two channels, half the
    # buffer each way round), hashed with salts 0 and 1.  Seed 14's hash puts all four on port 0:
    topo = _ecmp(1, seed=14)
    f = topo.fabric
    port = lambda p, q, salt: f.describe(int(f.mids([p], [0], [q], [0], [salt])[1][0]))  # noqa: E731
    assert {port(p, q, s) for p, q in ((0, 2), (1, 3)) for s in (0, 1)} == {"leaf 0 port 0 up"}
    # four flows of half a buffer each share one 10 GB/s port: 2.5 GB/s each, a buffer per 0.2 ns: 5 GB/s
    groups = [(0, 2), (1, 3)]
    assert _rates(topo, groups, "Broadcast") == pytest.approx([5e9, 5e9])
    # with 2 queue pairs per connection (connection c's are salts 2c and 2c + 1) the same hash puts
    # connection 0's on port 0 and connection 1's on port 1: four quarter-buffer flows per port, 10 GB/s
    assert [port(0, 2, s) for s in range(4)] == [port(1, 3, s) for s in range(4)] == \
        ["leaf 0 port 0 up"] * 2 + ["leaf 0 port 1 up"] * 2
    assert _rates(_ecmp(2, seed=14), groups, "Broadcast") == pytest.approx([10e9, 10e9])
    # adaptive routing spreads each connection over both ports whatever its queue pairs
    for qps in (1, 2):
        assert _rates(_ecmp(qps, seed=14, routing="adaptive"), groups, "Broadcast") == pytest.approx([10e9, 10e9])


def test_a_ring_pairs_two_channels_are_two_connections_hashed_apart():
    # NCCL opens a connection per channel and peer (src/transport/net.cc), so the pair's two channels,
    # which on two nodes both send from node 0 to node 2, hash apart: at seed 5 onto both ports
    topo = _ecmp(1, seed=5)
    c = Expander(topo).collective("ring", "Simple", "Broadcast", (0, 2), 2**30)
    assert _ports(topo, c.flows[0]) == {"leaf 0 port 0 up", "leaf 0 port 1 up", "leaf 1 port 0 down",
                                        "leaf 1 port 1 down"}
    assert _rates(topo, [(0, 2), (1, 3)], "Broadcast") == pytest.approx([10e9, 10e9])


def test_queue_pairs_split_each_hop_across_nodes():
    one, four = (Expander(_ecmp(k)).collective("ring", "Simple", "AllReduce", (0, 2), 2**30) for k in (1, 4))
    h1, h4 = one.flows[0].hops, four.flows[0].hops
    assert len(h4) == 4 * len(h1)  # every hop crosses the nodes here
    assert sorted(h.coef for h in h4) == pytest.approx(sorted(h.coef / 4 for h in h1 for _ in range(4)))
    assert one.sent() == pytest.approx(four.sent())  # the bytes are the connection's, however spread
    # adaptive routing (or another transport): the hops stay whole, the queue pairs change nothing
    ar1, ar4 = (Expander(_ecmp(k, routing="adaptive")).collective("ring", "Simple", "AllReduce", (0, 2), 2**30)
                for k in (1, 4))
    assert len(ar4.flows[0].hops) == len(ar1.flows[0].hops)
    assert all(a.edges == b.edges and a.coef == b.coef for a, b in zip(ar1.flows[0].hops, ar4.flows[0].hops))


def test_ecmp_cost_falls_as_queue_pairs_rise_at_equal_port_speed():
    # 4 nodes, leaves of 2 with 2 ports of the NICs' speed (1:1): the slower of the two crossing
    # AllReduces, averaged over 16 hash seeds.  One queue pair each collides on half the seeds (rate
    # 1/2 there); more queue pairs spread each connection over both ports, towards the NIC's 10 GB/s
    mean = {k: sum(min(_rates(_ecmp(k, seed=s), [(0, 2), (1, 3)])) for s in range(16)) / 16 for k in (1, 4, 16)}
    assert mean[1] < mean[4] < mean[16]
    assert mean[1] <= 0.75e10 and mean[16] >= 0.85e10


def _per_op_tables(topo, op, members, segs, rings, free, pairs):
    """The ring's tables across nodes as they were built before the cyclic tables: each collective routing its own
    chain arrays (the reference :func:`ring_tables` must equal to the bit)."""
    import numpy as np

    from p2sim.collectives.channels import ring_channel_pairs
    from p2sim.collectives.hops.ring import _base, _chain_arrays, _spread, _table, kinds, node_order

    half = ring_factor(op, len(members)) / 2
    of, reps = kinds(topo, segs)
    nic_index = {nic: i for i, nic in enumerate(topo.nics)}
    out = []
    for channel, row in enumerate(ring_channel_pairs(topo, reps, pairs)):
        nic_of_node = {seg.node: nic_index[row[k][0]] for seg, k in zip(segs, of)}
        src, dst = [], []
        for backwards in (False, True):
            local = [np.asarray(node_order(topo, rep, rings[rep.node][0][0], entry, nic, free[rep.node], backwards),
                                dtype=np.int64) - _base(topo, rep) for rep, (nic, entry) in zip(reps, row)]
            a, b = _chain_arrays(op, _spread(topo, segs, of, local), members[0])
            src.append(a)
            dst.append(b)
        s = np.concatenate(src)
        conn = np.repeat(np.array([2 * channel, 2 * channel + 1], dtype=np.int64), [len(a) for a in src])
        out.append(_table(topo, s, np.concatenate(dst), np.full(len(s), half), nic_of_node, conn))
    return out


def _ring_cases():
    """(topology, group) pairs across nodes: a GB200 rack pod's rails, a SuperPOD, RoCE with ECMP and queue
    pairs, a flat H100 cluster; groups of one GPU a node, of several, uneven, in shuffled order."""
    yield load_system("gb200-nvl72-pod", 16), (5, 77, 149, 221, 293), 4
    yield load_system("gb200-nvl72-pod", 16), tuple(g + 72 * n for n in (0, 3, 9) for g in (0, 1, 40, 41)), 8
    yield load_system("superpod-h100", 8), tuple(8 * n + g for n in range(8) for g in (2, 6)), 16
    yield load_system("roce-h100", 8), (40, 3, 11, 19, 27, 35, 43, 51, 59), 4
    yield load_system("roce-h100", 8), tuple(8 * n + g for n in (1, 4, 6) for g in range(8)), 8
    yield load_system("h100", 4), (9, 1, 17, 25, 26, 2), 2
    yield _ecmp(4), (0, 1, 2, 3), 2


@pytest.mark.parametrize("case", range(7))
@pytest.mark.parametrize("op", ["AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"])
def test_ring_tables_from_the_cyclic_ones_equal_each_collective_routed_alone(case, op):
    """Every collective's tables are its chains taken from the ring's routed once (round the ring; a chain
    less one hop each way, queue pairs kept together), equal to the bit to routing each collective's own."""
    from p2sim.collectives.channels import segments
    from p2sim.collectives.hops.ring import ring_tables

    topo, members, pairs = list(_ring_cases())[case]
    ex = Expander(topo)
    segs = segments(topo, members)
    mix = {s.node: ex.rings(s.local(topo)) for s in segs}
    free = {s.node: len(mix[s.node]) == 1 and ex.structures.free_segment(s) for s in segs}
    for kept in (None, ex.caches, ex.caches):  # built afresh, built and kept, then taken from what is kept
        got = ring_tables(topo, op, members, segs, mix, free, pairs, kept)
        want = _per_op_tables(topo, op, members, segs, mix, free, pairs)
        assert len(got) == len(want) == pairs
        for g, w in zip(got, want):
            assert g.key() == w.key()
            assert g.inter.tolist() == w.inter.tolist()
            assert (g.ports is None) == (w.ports is None)
            if g.ports is not None:
                assert g.ports.tolist() == w.ports.tolist()


def test_a_groups_five_collectives_route_its_ring_once_per_channel_pair(monkeypatch):
    """Across nodes the routes round the ring are computed once per group and channel pair, not per collective."""
    from p2sim.collectives.channels import segments
    from p2sim.collectives.hops.ring import ring_tables

    topo = load_system("gb200-nvl72-pod", 16)
    members, pairs = (5, 77, 149, 221, 293, 365), 4
    ex = Expander(topo)
    segs = segments(topo, members)
    mix = {s.node: ex.rings(s.local(topo)) for s in segs}
    free = {s.node: len(mix[s.node]) == 1 and ex.structures.free_segment(s) for s in segs}
    calls = []
    route_table = topo.router.route_table
    monkeypatch.setattr(topo.router, "route_table", lambda *a, **k: calls.append(1) or route_table(*a, **k))
    tables = {op: ring_tables(topo, op, members, segs, mix, free, pairs, ex.caches)
              for op in ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce")}
    assert len(calls) == pairs
    assert [len(t) for t in tables["Broadcast"]] == [2 * (len(members) - 1)] * pairs


def test_the_cyclic_tables_ledger_counts_every_array_they_keep():
    """What the caches keep of a topology's cyclic ring tables is counted whole (table, queue pairs, ring
    orders), so its budget bounds what it holds."""
    import numpy as np

    from p2sim.collectives.channels import segments
    from p2sim.collectives.caches import CollectiveCaches
    from p2sim.collectives.hops.ring import ring_tables

    topo = load_system("roce-h100", 8)  # queue pairs: per is kept too
    members = tuple(8 * n + g for n in (1, 4, 6) for g in range(8))
    ex = Expander(topo)
    segs = segments(topo, members)
    mix = {s.node: ex.rings(s.local(topo)) for s in segs}
    free = {s.node: len(mix[s.node]) == 1 and ex.structures.free_segment(s) for s in segs}
    caches = CollectiveCaches(topo)
    ring_tables(topo, "AllReduce", members, segs, mix, free, 4, caches)
    memo, held = caches.cyclic, caches.cyclic_bytes

    def arrays(obj, seen):
        if isinstance(obj, np.ndarray):
            return 0 if id(obj) in seen or seen.add(id(obj)) else obj.nbytes
        if isinstance(obj, (tuple, list)):
            return sum(arrays(o, seen) for o in obj)
        return sum(arrays(v, seen) for v in vars(obj).values()) if hasattr(obj, "__dict__") else 0

    seen: set[int] = set()
    assert held[0] == sum(arrays(c, seen) for cyclics in memo.values() for c in cyclics) > 0
