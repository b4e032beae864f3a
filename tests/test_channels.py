from __future__ import annotations

import math

import pytest

from p2sim.collectives import Expander
from p2sim.collectives.channels import channel_count, node_nics, ring_channel_pairs, segments
from p2sim.topology import load_system

from .helpers import rail_nodes


def test_one_node_channels_follow_nccls_search():
    # DGX A100: 240 GB/s of NVLink per GPU at NCCL's 40 GB/s per channel = 6, doubled twice
    assert Expander(load_system("dgx-a100", 1)).channels(range(8)) == 24
    # H100: 370.8 GB/s at 60 GB/s = 6, doubled twice
    assert Expander(load_system("dgx-h100", 1)).channels(range(8)) == 24
    # through host memory: one ring at 30.7 GB/s, one channel at that speed, doubled twice
    assert Expander(load_system("pcie-8gpu", 1)).channels(range(8)) == 4
    # P2's PCIe example: 10 GB/s between the CPU sockets, below NCCL's 25 GB/s doubling threshold
    assert Expander(load_system("p2-16gpu", 1)).channels(range(8)) == 2


def test_across_nodes_two_channels_per_nic_used():
    topo = rail_nodes(8, 8)
    segs = segments(topo, range(16))
    assert [node_nics(topo, s) for s in segs] == [tuple(f"nic{i}" for i in range(8))] * 2
    assert channel_count(topo, segs, 0.0) == 16
    # a group of two GPUs per node uses only their two NICs
    segs = segments(topo, [0, 1, 8, 9])
    assert channel_count(topo, segs, 0.0) == 4


def test_hca_restricts_the_nics():
    from dataclasses import replace

    spec = load_system("dgx-h100").spec
    spec = replace(spec, nccl=replace(spec.nccl, hca=("nic0", "nic2", "nic4", "nic6")))
    topo = load_system(spec, 2)
    assert topo.router.local_nics(1) == ("nic0",)  # GPU 1 shares GPU 0's PCIe switch and its NIC
    assert Expander(topo).channels(range(16)) == 8


def test_channels_are_dealt_over_every_nic_and_gpu():
    topo = rail_nodes(4, 2)  # two GPUs share each NIC
    segs = segments(topo, range(8))
    rows = ring_channel_pairs(topo, segs, 4)
    assert [r[0] for r in rows] == [("nic0", 0), ("nic1", 2), ("nic0", 1), ("nic1", 3)]


@pytest.mark.parametrize("k", [1, 2, 4])
def test_min_and_max_channels_clamp(k):
    topo = rail_nodes(8, 8, extra=f"[nccl]\nmax_channels = {k}\n")
    assert Expander(topo).channels(range(16)) == k


def test_scheduler_gives_each_channel_32k_of_traffic():
    """scheduleCollTasksToPlan (enqueue.cc): cells of 32 KiB of traffic, at least one a channel."""
    from p2sim.collectives.channels import scheduled_channels
    # 64 KiB AllReduce, LL128: 128 KiB of traffic = 4 cells, though topoGetAlgoInfo allows 12 channels
    assert scheduled_channels("AllReduce", "LL128", 65536, 8, 12) == 4
    # LL's traffic counts x4: 64 KiB -> 512 KiB of traffic = 16 cells
    assert scheduled_channels("AllReduce", "LL", 65536, 8, 24) == 16
    # 1 MiB AllReduce over 24 channels: 64 cells of 16 KiB, ceil(2 MiB / 24 / 32 KiB) = 3 a channel -> 22
    assert scheduled_channels("AllReduce", "Simple", 2**20, 8, 24) == 22
    assert scheduled_channels("AllReduce", "Simple", 8, 8, 24) == 1


def test_threads_halve_below_the_threshold_to_64():
    """topoGetAlgoInfo (enqueue.cc): nt halves while nBytes < nc x nt x threshold and nt % 128 == 0."""
    from p2sim.collectives.channels import threads_used
    assert threads_used("Simple", 32768, 1, 64) == 512  # 1 x 512 x 64 = 32 KiB: no halving
    assert threads_used("Simple", 32767, 1, 64) == 256
    assert threads_used("Simple", 16383, 1, 64) == 128
    assert threads_used("Simple", 8191, 1, 64) == 64
    assert threads_used("Simple", 8, 1, 64) == 64  # 64 is no multiple of 128
    assert threads_used("LL128", 8, 1, 8) == 320


def test_across_racks_the_nvlink_budget_bounds_the_channels():
    """A GB200 rack has 72 NICs, but NCCL's ring search charges every channel's speed on each GPU's NVLink
    (search.cc): 18 x 40.1 GB/s holds 16 channels at 45.1 GB/s (15 at 48), doubled by connect.cc to 32 -- not
    two per NIC (64).  A DGX H100's 8 NICs bind before its NVLink does (8 at 45 GB/s): 16, as before."""
    from p2sim.collectives.channels import channel_count, segments

    gb = load_system("gb200-nvl72-pod", nodes=4)
    assert channel_count(gb, segments(gb, tuple(range(288))), math.inf) == 32
    h = load_system("dgx-h100", nodes=2)
    assert channel_count(h, segments(h, tuple(range(16))), math.inf) == 16
