from __future__ import annotations

import pytest

from p2sim.collectives import Expander
from p2sim.collectives.nvls import nvls_heads
from p2sim.collectives.channels import segments
from p2sim.collectives.ring import ring_factor
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
