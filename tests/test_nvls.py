from __future__ import annotations

import pytest

from p2sim.collectives import Expander
from p2sim.collectives.hops.nvls import nvls_heads
from p2sim.collectives.nccl_tables import nvls_head_speed
from p2sim.collectives.channels import segments
from p2sim.collectives.hops.ring import ring_factor
from p2sim.topology import load_system


@pytest.mark.parametrize("n", [2, 4, 8])
def test_nvls_moves_the_buffer_about_once_where_the_ring_moves_2n_1_over_n(n):
    topo = load_system("dgx-h100", 1)
    ex = Expander(topo)
    members = tuple(range(n))
    nvls = ex.collective("nvls", "Simple", "AllReduce", members, 2**30)
    ring = ex.collective("ring", "Simple", "AllReduce", members, 2**30)
    # per GPU and direction: its buffer to the switch plus its reduced share back out, S (n+1)/n
    assert all(v == pytest.approx((n + 1) / n) for v in nvls.sent().values())
    assert all(v == pytest.approx((n + 1) / n) for v in nvls.received().values())
    assert all(v == pytest.approx(ring_factor("AllReduce", n)) for v in ring.sent().values())
    # bus bandwidth: NVLink x NVLS efficiency x 2(n-1)/(n+1)
    link = 450e9 * 0.824
    assert nvls.algbw(topo.capacity) == pytest.approx(link * 0.85 * n / (n + 1))


def test_nvls_reducescatter_and_allgather_are_its_halves():
    ex = Expander(load_system("dgx-h100", 1))
    rs = ex.collective("nvls", "Simple", "ReduceScatter", tuple(range(8)), 2**30)
    ag = ex.collective("nvls", "Simple", "AllGather", tuple(range(8)), 2**30)
    assert set(rs.sent().values()) == {1.0} and all(v == pytest.approx(1 / 8) for v in rs.received().values())
    assert all(v == pytest.approx(1 / 8) for v in ag.sent().values()) and set(ag.received().values()) == {1.0}


def test_nvls_needs_a_sharp_switch_and_hopper():
    assert ("nvls", "Simple") not in Expander(load_system("dgx-a100", 1)).available("AllReduce", range(8))
    assert ("nvls", "Simple") in Expander(load_system("dgx-h100", 1)).available("AllReduce", range(8))
    two = Expander(load_system("dgx-h100", 2))
    assert ("nvls_tree", "Simple") in two.available("AllReduce", range(16))
    assert all(a != "nvls" for a, _ in two.available("AllReduce", range(16)))  # NVLS alone is one node only


def test_nvls_tree_heads_are_one_gpu_per_nic():
    topo = load_system("dgx-h100", 2)
    heads = nvls_heads(topo, segments(topo, range(16)))
    assert [len(h) for h in heads] == [8, 8]
    assert len({nic for _, nic in heads[0]}) == 8


# -- NVLS heads as NCCL's search finds them (search.cc, connect.cc; nccl-facts.md section 1) -----------

def _variant(tmp_path, system: str, *edits: tuple[str, str]) -> str:
    """A copy of a shipped system file with text replaced (each edit must apply)."""
    from pathlib import Path

    import p2sim

    text = (Path(p2sim.__file__).parent.parent / "topologies" / f"{system}.toml").read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / f"{system}-variant.toml"
    path.write_text(text)
    return str(path)


def test_nvls_tree_heads_nvl72_72_nics_give_32_heads():
    # min(NCCL_MAX_NVLS_ARITY 32, 72 NICs, 72 GPUs with a NIC): the first 32 NICs and their GPUs
    topo = load_system("gb200-nvl72-pod", 2)
    heads = nvls_heads(topo, segments(topo, range(144)))
    assert [len(h) for h in heads] == [32, 32]
    assert [g for g, _ in heads[0]] == list(range(32)) and [g for g, _ in heads[1]] == list(range(72, 104))
    assert [nic for _, nic in heads[0]] == [f"nic{i}" for i in range(32)]


def test_nvls_tree_heads_fewer_nics_fewer_heads(tmp_path):
    # a DGX H100 with 4 NICs (one per PCIe switch): one head per NIC, 4 heads
    path = _variant(tmp_path, "dgx-h100", ('{ name = "nic[0-7]", kind = "nic" }', '{ name = "nic[0-3]", kind = "nic" }'),
                    ('["nic[0-1]", "pcie0"], ["nic[2-3]", "pcie1"], ["nic[4-5]", "pcie2"], ["nic[6-7]", "pcie3"]',
                     '["nic0", "pcie0"], ["nic1", "pcie1"], ["nic2", "pcie2"], ["nic3", "pcie3"]'),
                    ('["nic[0-7]", "rail[0-7]"]', '["nic[0-3]", "rail[0-3]"]'))
    topo = load_system(path, 2)
    heads = nvls_heads(topo, segments(topo, range(16)))
    assert [len(h) for h in heads] == [4, 4]
    assert len(Expander(topo).collective("nvls_tree", "Simple", "AllReduce", tuple(range(16)), 2**30).flows) == 4


def test_nvls_head_speed_walks_down_until_every_head_fits():
    # GB200: 18 x 40.1 GB/s; (32 + 1) x 22 > 721.8 >= 33 x 20: 32 heads at 20 GB/s
    assert nvls_head_speed("blackwell", 32, 18 * 40.1) == (32, 20.0)
    # H100: 18 x 20.6 = 370.8 >= 9 x 40 (9 x 42 > 370.8): 8 heads at 40 GB/s
    assert nvls_head_speed("hopper", 8, 18 * 20.6) == (8, 40.0)
    # an NVLink too slow for 32 even at the slowest speed, 0.12: int(3 / 0.12) - 1 = 24 heads
    assert nvls_head_speed("hopper", 32, 3.0) == (24, 0.12)


def test_nvls_in_one_nvl72_rack_has_32_heads_each_carrying_a_32nd_more():
    topo = load_system("gb200-nvl72", 1)
    c = Expander(topo).collective("nvls", "Simple", "AllReduce", tuple(range(72)), 2**30)
    sent = c.sent()
    assert all(sent[g] == pytest.approx(1 + 1 / 32) for g in range(32))
    assert all(sent[g] == pytest.approx(1.0) for g in range(32, 72))
    from p2sim.collectives.algorithms import algorithm

    assert algorithm("nvls").heads(topo, tuple(range(72))) == 32  # calcCollChunking's nHeads


def test_nvls_tree_each_head_nic_carries_one_over_heads_of_the_network_traffic():
    topo = load_system("gb200-nvl72-pod", 2)
    c = Expander(topo).collective("nvls_tree", "Simple", "AllReduce", tuple(range(144)), 2**30)
    edges, coef = c.link_load()
    load = dict(zip(edges.tolist(), coef.tolist()))
    per_nic = [sum(load.get(e, 0.0) for e in topo.network_edges_of(0, f"nic{i}")) for i in range(72)]
    total = sum(per_nic)
    assert total > 0
    assert all(x == pytest.approx(total / 32) for x in per_nic[:32]) and not any(per_nic[32:])
    assert len(c.flows) == 32 and all(f.channels == 32 and f.share == pytest.approx(1 / 32) for f in c.flows)


@pytest.mark.slow  # fabrics of up to 2,304 GPUs
def test_nvls_tree_busbw_falls_as_racks_are_added_once_the_network_binds(tmp_path):
    # 50 Gb/s NICs (6.25 GB/s): 32 heads' NICs bind.  At 2 racks a head sends its slice (S/32) once
    # (half on each tree, up as a child and down as the root): algbw 32 x 6.25 = 200 GB/s; from 4 racks an
    # interior head also forwards its tree's half to two children, twice the bytes: 100 GB/s
    from p2sim.api import sweep

    path = _variant(tmp_path, "gb200-nvl72-pod", ("nic      = { bandwidth = 50.0 }", "nic      = { bandwidth = 6.25 }"))
    algbw = {}
    for racks in (2, 4):
        topo = load_system(path, racks)
        members = tuple(range(72 * racks))
        algbw[racks] = Expander(topo).collective("nvls_tree", "Simple", "AllReduce", members, 2**33).algbw(topo.capacity)
    assert algbw[2] == pytest.approx(200e9) and algbw[4] == pytest.approx(100e9)
    # beyond, the NICs carry the same, and the trees' depth adds 2 log2(racks) network steps: busbw keeps falling
    busbw = [sweep(system=path, nodes=r, minbytes=2**29, maxbytes=2**29).points[0].busbw for r in (2, 4, 8, 16)]
    assert all(a > b for a, b in zip(busbw, busbw[1:]))


def test_nvls_tree_two_trees_hash_apart_under_ecmp():
    # NVLS-Tree's channel c follows tree c % 2 (src/graph/connect.cc, connectNvls): a head slot's two trees
    # are two channels with connections of their own, so between two nodes of different stripes of
    # roce-h100 (ECMP) the two trees' hops between the same heads hash independently onto the 8 ports
    topo = load_system("roce-h100", 16)
    f = topo.fabric
    members = tuple(range(8)) + tuple(range(64, 72))  # node 0 and node 8: leaves of different stripes
    c = Expander(topo).collective("nvls_tree", "Simple", "AllReduce", members, 2**30)
    pairs: dict[tuple[int, int, int], set[tuple[int, ...]]] = {}
    for i, flow in enumerate(c.flows):
        for h in flow.hops:
            if h.inter_node:
                pairs.setdefault((i, h.src, h.dst), set()).add(tuple(e for e in h.edges if f.first <= e < f.end))
    assert len(pairs) == 2 * len(c.flows)  # per head slot: head to head, each way
    apart = sum(len(v) == 2 for v in pairs.values())
    assert apart >= len(pairs) // 2  # one salt for both trees: never apart


def test_nvls_plateau_follows_the_systems_stated_efficiency():
    """One GB200 NVL72 rack: the NVLS AllReduce is link-bound at 8 GiB, so its rate scales with the share of
    NVLink the reduction reaches -- the file's assumed 0.62 against NCCL's nvlsEfficiency 0.74, by hand
    0.62 / 0.74 of it."""
    from dataclasses import replace

    from p2sim.collectives import Expander
    from p2sim.topology import find_spec, load_system

    spec = find_spec("gb200-nvl72")
    assert spec.rates.nvls_efficiency == 0.62
    members, nbytes = tuple(range(72)), 2.0**33
    rates = []
    for s in (spec, replace(spec, rates=replace(spec.rates, nvls_efficiency=None))):
        topo = load_system(s, nodes=1)
        rates.append(Expander(topo).collective("nvls", "Simple", "AllReduce", members, nbytes).algbw(topo.capacity))
    assert rates[0] / rates[1] == pytest.approx(0.62 / 0.74, rel=1e-9)
