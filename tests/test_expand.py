from __future__ import annotations

import re

import pytest

from p2sim.collectives import Expander, check_algo, check_forced
from p2sim.util.algorithms import COLLNET
from p2sim.util.errors import InputError
from p2sim.topology import load_system

from .helpers import rail_nodes


@pytest.mark.parametrize("system,nodes", [("dgx-h100", 1), ("dgx-h100", 2), ("dgx-a100", 2), ("pcie-8gpu", 1)])
@pytest.mark.parametrize("nbytes", [8, 2**16, 2**20, 2**24, 2**30])
def test_auto_picks_the_least_time_by_nccls_own_model(system, nodes, nbytes):
    topo = load_system(system, nodes)
    ex = Expander(topo)
    members = tuple(range(topo.devices))
    tuned = {}
    for ap in ex.available("AllReduce", members):
        c = ex.collective(*ap, "AllReduce", members, nbytes)
        lat, bw = c.tuning
        tuned[ap] = lat + nbytes / bw
        # what NCCL's latency model leaves out only ever adds time
        assert c.latency >= lat * (1 - 1e-12)
    assert tuned[ex.choose("AllReduce", members, nbytes)] == min(tuned.values())


def test_sizes_move_the_protocol_from_ll_to_ll128_to_simple():
    ex = Expander(load_system("dgx-h100", 1))
    members = tuple(range(8))
    protos = [ex.choose("AllReduce", members, n, "ring")[1] for n in (8, 2**20, 2**22, 2**30)]
    assert protos[0] == "LL" and protos[-1] == "Simple" and "LL128" in protos


def test_forcing_and_falling_back():
    ex = Expander(load_system("dgx-a100", 1))
    members = tuple(range(8))
    assert ex.choose("AllReduce", members, 2**30, "tree")[0] == "tree"
    assert ex.choose("ReduceScatter", members, 2**30, "tree")[0] == "ring"  # trees reduce only
    with pytest.raises(InputError, match="ampere"):  # no NVLink SHARP on A100: refused, as NCCL refuses it
        ex.choose("AllReduce", members, 2**30, "nvls")
    assert ex.choose("AllReduce", members, 2**30, "auto", "LL")[1] == "LL"


@pytest.mark.parametrize("system, nodes, algo, op, members, proto, reason", [
    ("dgx-h100", 2, "collnet_direct", None, None, "auto", "no SHARP tier"),
    ("dgx-h100", 2, "collnet", None, None, "auto", "no SHARP tier"),
    ("dgx-a100", 1, "nvls", None, None, "auto", "GPUs are ampere"),
    ("a3-mega", 1, "nvls", None, None, "auto", r"\[nccl\] algorithms \(ring, tree"),
    ("h100", 1, "nvls_tree", None, None, "auto", "has 1 node here"),
    ("superpod-h100", 1, "collnet_chain", None, None, "auto", "has 1 node here"),
    ("h100", 1, "nvls", None, None, "LL", "Simple protocol only"),
    ("h100", 1, "tree", "AllGather", None, "auto", "runs AllReduce only"),
    ("h100", 1, "nvls", "Broadcast", None, "auto", "runs AllReduce, ReduceScatter, AllGather only"),
    ("h100", 2, "nvls", "AllReduce", tuple(range(16)), "auto", "spans 2 nodes"),
    ("h100", 2, "nvls_tree", "AllReduce", tuple(range(8)), "auto", "lies in one node"),
    ("superpod-h100", 2, "collnet_direct", "AllReduce", tuple(range(8)), "auto", "lies in one node"),
    ("h100", 2, "nvls_tree", "AllReduce", (0, 8), "auto", "at least 2 GPUs"),
])
def test_why_a_forced_algorithm_cannot_run(system, nodes, algo, op, members, proto, reason):
    assert re.search(reason, Expander(load_system(system, nodes)).why_not(algo, op, members, proto))


@pytest.mark.parametrize("system, nodes, algo, op, members", [
    ("h100", 2, "nvls", "AllReduce", tuple(range(8))),
    ("h100", 2, "nvls_tree", "AllReduce", tuple(range(16))),
    ("superpod-h100", 2, "collnet_direct", "AllReduce", tuple(range(16))),
    ("superpod-h100", 2, "collnet", "AllReduce", tuple(range(16))),
    ("dgx-a100", 2, "tree", "AllReduce", tuple(range(8))),
    ("h100", 2, "nvls", "AllReduce", (3,)),  # one rank: NCCL has nothing to choose for
])
def test_a_forced_algorithm_that_can_run_is_chosen(system, nodes, algo, op, members):
    ex = Expander(load_system(system, nodes))
    assert ex.why_not(algo, op, members) is None
    if len(members) > 1:
        assert ex.choose(op, members, 2**30, algo)[0] in ((algo,) if algo != "collnet" else COLLNET)


def test_the_refusal_in_choose_names_the_reason():
    ex = Expander(load_system("h100", 2))
    with pytest.raises(InputError, match="algo: nvls cannot run this AllReduce of 16 GPUs: its group spans 2 nodes"):
        ex.choose("AllReduce", tuple(range(16)), 2**30, "nvls")
    assert ex.choose("Reduce", tuple(range(16)), 2**30, "nvls")[0] == "ring"  # a collective NVLS has not: a ring


def test_check_forced_names_system_and_collective():
    with pytest.raises(InputError, match="algo: collnet_direct cannot run on dgx-h100: dgx-h100 has no SHARP tier"):
        check_forced(load_system("dgx-h100", 2), "collnet_direct")
    with pytest.raises(InputError, match="algo: tree cannot run AllGather over 8 GPUs on h100"):
        check_forced(load_system("h100", 1), "tree", op="AllGather", members=tuple(range(8)))
    check_forced(load_system("h100", 1), "tree", op="AllReduce", members=tuple(range(8)))


@pytest.mark.parametrize("system,nodes,proto,algo", [
    ("p4d", 2, "LL", "ring"),  # [nccl] protocols = ["Simple"] (aws-ofi-nccl's default, not the user's)
    ("p4d", 2, "LL128", "ring"),
    ("pcie-8gpu", 1, "LL128", "ring"),  # no NVLink: LL128 off by default, on when named
])
def test_a_forced_protocol_runs_as_nccl_proto_runs_it(system, nodes, proto, algo):
    """NCCL_PROTO=X enables X in place of a plugin's default and of LL128's NVLink-only default (tuning.cc:
    the rule applies to a default-enabled LL128); it used to be replaced by Simple without a word."""
    topo = load_system(system, nodes)
    ex = Expander(topo)
    members = tuple(range(topo.devices))
    assert ex.choose("AllReduce", members, 2**20, algo, proto) == (algo, proto)
    assert ex.choose("AllReduce", members, 2**20, "auto", proto)[1] == proto
    assert proto not in {p for _, p in ex.available("AllReduce", members)}  # not NCCL's default here


def test_per_channel_network_rate_caps_a_flow():
    slow = rail_nodes(8, 8, model="ring_net_rate = 1.0")
    c = Expander(slow).collective("ring", "Simple", "AllReduce", tuple(range(16)), 2**30)
    # 16 channels of 1 GB/s each sending 2(n-1)/n per byte per node: at most 16 / (2 x 15/16) GB/s
    assert c.algbw(slow.capacity) == pytest.approx(16e9 / (2 * 15 / 16))


def test_check_algo():
    assert check_algo("NVLS-Tree") == "nvls_tree"
    with pytest.raises(InputError, match="algo"):
        check_algo("butterfly")


def test_a_group_moved_between_nodes_expands_alike():
    topo = load_system("dgx-h100", 4)
    ex = Expander(topo)
    a = ex.collective("ring", "Simple", "AllReduce", (0, 1, 8, 9), 2**30)
    b = ex.collective("ring", "Simple", "AllReduce", (16, 17, 24, 25), 2**30)  # built by moving a
    c = Expander(topo)._build("ring", "Simple", "AllReduce", (16, 17, 24, 25),
                              __import__("p2sim.collectives.channels", fromlist=["segments"]).segments(
                                  topo, (16, 17, 24, 25)), 4, 1.0, 2**30)
    assert [f.edges.tolist() for f in b.flows] == [f.edges.tolist() for f in c.flows]
    assert [f.coef.tolist() for f in b.flows] == [f.coef.tolist() for f in c.flows]
    assert b.sent() == c.sent() and a.latency == b.latency


def test_dropping_the_caches_changes_no_result(monkeypatch):
    # the caches of built collectives and structures are bounded (CACHE_BYTES): a search that
    # drops them again and again predicts exactly what one that keeps them does
    import p2sim.collectives.caches as expand_module
    from p2sim.formalism.hierarchy import Lowering
    from p2sim.formalism.placement import Placement
    from p2sim.formalism.program import parse_program
    from p2sim.sim import SimSettings, Simulator
    from p2sim.topology import load_system

    def run() -> list[float]:
        topo = load_system("superpod-h100", 8)
        lw = Lowering.of(Placement.of(topo.hierarchy, [8, 8], [[1, 8, 1], [1, 1, 8]]), [0])
        out = []
        for text in ("AllReduce(slice=0, Inside)", "ReduceScatter(slice=0, Inside) ; AllGather(slice=0, Inside)"):
            for algo in ("auto", "ring", "tree"):
                out.append(Simulator(topo, SimSettings(algo)).simulate(lw, parse_program(text), 2**28).total_seconds)
        return out

    kept = run()
    monkeypatch.setattr(expand_module, "CACHE_BYTES", 1)
    assert run() == kept


def _busbw(spec, nodes: int, algo: str, sizes: tuple[int, ...]) -> list[float]:
    from p2sim import api

    r = api.sweep(system=spec, nodes=nodes, minbytes=sizes[0], maxbytes=sizes[-1], stepfactor=4, algo=algo)
    return [p.busbw for p in r.points]


_ACCEPT = [("dgx-h100", 2, a, (2**30, 2**32)) for a in ("nvls_tree", "ring", "tree")] + [
    ("dgx-h100", 8, a, (2**30, 2**32)) for a in ("nvls_tree", "tree")] + [
    # a ring over 64 ranks at 1 GiB moves 1 MiB chunks (two in flight per connection) and crosses the network
    # 14 times in a row: there a wire of tens of microseconds costs NCCL itself bandwidth (test below)
    ("dgx-h100", 8, "ring", (2**32,))]


@pytest.mark.parametrize("system,nodes,algo,sizes", _ACCEPT)
def test_a_physical_nic_latency_costs_no_large_message_bandwidth(system, nodes, algo, sizes):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from p2sim.topology import find_spec

    spec = find_spec(system)
    none = _busbw(spec, nodes, algo, sizes)

    @settings(max_examples=8, deadline=None)
    @given(st.floats(1.0, 20.0))
    def check(latency):
        stated = _busbw(spec.with_class("nic", latency=latency), nodes, algo, sizes)
        assert all(s >= 0.95 * n for s, n in zip(stated, none)), (latency, stated, none)

    check()


def test_a_ring_of_many_ranks_pays_its_wire_as_nccl_does():
    # 8 x 8 H100, 1 GiB: each of 16 channels moves 1 MiB chunks (64 MiB over 64 ranks), 2 MiB in flight per
    # connection; a 40 us crossing (20 us on each NIC link) makes the round trip 28 + 80 us and more: the
    # window binds, as it binds NCCL's proxy (maxDepth = 8 slots, net.cc)
    from p2sim.topology import find_spec

    spec = find_spec("dgx-h100")
    none, slow = _busbw(spec, 8, "ring", (2**30,))[0], _busbw(spec.with_class("nic", latency=20.0), 8, "ring", (2**30,))[0]
    assert slow < 0.8 * none


def test_the_ring_plateau_counts_the_communicators_channels():
    """ncclTopoGetAlgoTime: nBytes / (comm->nChannels x nRanks) >= 64, with every channel of the communicator."""
    ex = Expander(load_system("dgx-a100", nodes=2))
    m = tuple(range(16))
    full = ex.channels(m)
    nbytes = 64 * 16 * full - 16  # below the plateau with all channels, above it with the one NCCL runs
    c = ex.collective("ring", "Simple", "AllReduce", m, nbytes)
    above = ex.collective("ring", "Simple", "AllReduce", m, 64 * 16 * full)
    assert c.channels < full
    assert above.latency / c.latency == pytest.approx(1.4, rel=1e-3)


def test_a_collective_does_not_depend_on_the_sizes_built_before_it():
    """Whether a connection's chunks all fit in flight (pipeline.window) depends on the size: a tree over 6 + 6
    H100s at 56 MiB keeps its window cap whether or not 40 MiB was built first (the cache once returned the
    40 MiB collective, which has none)."""
    topo = load_system("h100", 2)
    members = tuple(range(6)) + tuple(range(8, 14))
    fresh = Expander(topo).collective("tree", "Simple", "AllReduce", members, 56 * 2**20)
    ex = Expander(topo)
    ex.collective("tree", "Simple", "AllReduce", members, 40 * 2**20)
    after = ex.collective("tree", "Simple", "AllReduce", members, 56 * 2**20)
    assert [f.caps for f in after.flows] == [f.caps for f in fresh.flows]
    assert after.latency == fresh.latency


def test_a_collectives_kept_algorithm_bandwidth_is_its_capacity_arrays():
    """Collective.algbw keeps its figure for the last capacity array asked: another array (another
    topology's rates) gets its own figure, and the kept one is the one computed fresh."""
    import dataclasses

    import numpy as np

    from p2sim.collectives import Expander
    from p2sim.topology import load_system

    topo = load_system("h100", 2)
    e = Expander(topo)
    members = tuple(range(16))
    algo, proto = e.choose("AllReduce", members, 2**30)
    c = e.collective(algo, proto, "AllReduce", members, 2**30)
    first = c.algbw(topo.capacity)
    fresh = dataclasses.replace(c)  # the same fields, nothing kept
    assert c.algbw(topo.capacity) == first == fresh.algbw(topo.capacity)
    halved = topo.capacity / 2
    assert c.algbw(halved) == fresh._algbw(halved) < first  # the links bind below the caps
    assert c.algbw(topo.capacity) == first and np.isfinite(first)


def test_ecmp_groups_equal_up_to_their_ports_share_one_structure_and_build_exactly():
    """On an ECMP fabric, groups that are one group moved but for their ports share one structure (its
    ports' routes re-hashed where each group is): each collective is the one built in place, to the bit."""
    import numpy as np

    topo = load_system("roce-h100", 64)  # rail leaves of 8 nodes: these groups cross the spines
    groups = [tuple(n * 8 + 3 for n in (s, s + 8, s + 16, s + 24)) for s in range(8)]
    ex = Expander(topo)
    built = []
    build = ex.structures.build
    ex.structures.build = lambda algo, *args: built.append(algo) or build(algo, *args)  # in place, from nothing
    for algo, proto in (("ring", "Simple"), ("tree", "LL"), ("ring", "LL128")):
        for g in groups:
            a = ex.collective(algo, proto, "AllReduce", g, 2.0**28)
            b = Expander(topo).collective(algo, proto, "AllReduce", g, 2.0**28)
            assert (a.latency, a.tuning, a.channels) == (b.latency, b.tuning, b.channels)
            assert len(a.flows) == len(b.flows)
            for f, h in zip(a.flows, b.flows):
                assert np.array_equal(f.edges, h.edges) and np.array_equal(f.coef, h.coef)
                assert (f.share, f.channels, f.caps) == (h.share, h.channels, h.caps)
                assert f.table.hops() == h.table.hops()
    assert built == ["ring", "tree"]  # one each for the eight groups (they cross nodes: each its own before)
    assert all(any(topo.hashed(e).any() for e, _ in st.loads) for st in ex.shared.structures.values())  # ports moved


def test_settings_of_groups_alike_in_size_nodes_and_channels_are_computed_once(monkeypatch):
    """A ring's and a tree's settings read a group only through its size, node count and channels: the groups at a
    GB200 rack's other places take the first one's, equal to what a fresh expander computes for each; NVLS (its
    own heads) and CollNet (its own channel count) compute their own."""
    import p2sim.collectives.expand as expand
    from p2sim.collectives.algorithms import algorithm

    assert algorithm("ring").settings_by_count() and algorithm("tree").settings_by_count()
    assert not algorithm("nvls").settings_by_count() and not algorithm("collnet_direct").settings_by_count()
    topo = load_system("gb200-nvl72-pod", 16)
    groups = [tuple(g + 72 * n for n in (0, 2, 5, 9)) for g in (0, 7, 33, 71)]
    calls = []
    scheduled = expand.scheduled_channels
    monkeypatch.setattr(expand, "scheduled_channels", lambda *a: calls.append(a) or scheduled(*a))
    ex = Expander(topo)
    got = [ex._settings(algo, "Simple", "AllReduce", g, 2.0**30) for algo in ("ring", "tree") for g in groups]
    assert len(calls) == 2  # once per algorithm
    assert got == [Expander(topo)._settings(algo, "Simple", "AllReduce", g, 2.0**30)
                   for algo in ("ring", "tree") for g in groups]
