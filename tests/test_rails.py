"""aws-ofi-nccl's rails (p2sim.collectives.rails): stripes per message and a connection's rate over the rails."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p2sim.collectives import Expander
from p2sim.collectives.binding import CAP_RAIL, collective_binding
from p2sim.collectives.rails import rail_rate, stripes
from p2sim.topology import Topology, find_spec

KiB = 1024


def test_stripes_follow_the_plugins_threshold_scheduler():
    # ceil(size / 128 KiB) clamped to 1..rails, then the largest divisor of the rail count (get_num_stripes)
    assert [stripes(s, 4, 128 * KiB) for s in (1, 128 * KiB, 128 * KiB + 1, 384 * KiB, 384 * KiB + 1)] == [1, 1, 2, 2, 4]
    assert stripes(640 * KiB, 6, 128 * KiB) == 3  # ceil = 5, not a divisor of 6: 3
    assert stripes(2**30, 1, 128 * KiB) == 1


@given(st.integers(1, 2**32), st.integers(1, 16), st.integers(1, 2**22))
def test_stripes_divide_the_rails_and_never_shrink_with_the_size(size, rails, least):
    n = stripes(size, rails, least)
    assert 1 <= n <= rails and rails % n == 0
    assert stripes(size * 2, rails, least) >= n


def test_a_connections_rate_is_the_rails_its_messages_cover():
    # by hand: a 400 Gb/s device of 4 rails is 12.5 GB/s a rail
    assert rail_rate(50e9, 4, 128 * KiB, 64 * KiB, 1) == 12.5e9
    assert rail_rate(50e9, 4, 128 * KiB, 64 * KiB, 3) == 37.5e9   # three messages on three rails
    assert rail_rate(50e9, 4, 128 * KiB, 256 * KiB, 1) == 25e9    # one message on two stripes
    assert rail_rate(50e9, 4, 128 * KiB, 256 * KiB, 8) == 50e9
    assert rail_rate(50e9, 1, 128 * KiB, 8, 1) == math.inf       # one rail: nothing to share out


@given(st.floats(1e9, 1e12), st.integers(1, 8), st.integers(1, 2**24), st.floats(0, 64))
def test_a_connection_never_beats_its_device(device, rails, message, flight):
    r = rail_rate(device, rails, 128 * KiB, message, flight)
    assert r == math.inf if rails == 1 else 0 < r <= device * (1 + 1e-12)
    assert rail_rate(device, rails, 128 * KiB, message, flight + 1) >= r


def _p5(rails: int) -> Topology:
    # one channel, and a tree channel rate NCCL's tables would otherwise cap first: the rails are what is left
    spec = find_spec("p5")
    return Topology(replace(spec, nccl=replace(spec.nccl, max_channels=1, ofi_rails=rails),
                            rates=replace(spec.rates, tree_channel_rate=1000.0)), 2)


def test_a_single_message_rides_one_rail_on_p5():
    """2 x p5, one GPU each, one tree channel, 64 KiB: the channel's one message in flight rides one 100 Gb/s rail of
    its GPU's four (12.5 GB/s); the tree's network connection carries half the flow's bytes, so the algorithm
    bandwidth is 25 GB/s, bound by the rails; with the four NICs striping every message (ofi_rails = 1) the PCIe
    path binds instead, above it."""
    four, one = _p5(4), _p5(1)
    a = Expander(four).collective("tree", "Simple", "AllReduce", (0, 8), 64 * KiB)
    b = Expander(one).collective("tree", "Simple", "AllReduce", (0, 8), 64 * KiB)
    assert a.algbw(four.capacity) == pytest.approx(25e9)
    assert collective_binding(a, four.capacity, four.edge_class, 2**40).resource == CAP_RAIL
    assert b.algbw(one.capacity) > 25e9 and CAP_RAIL not in b.flows[0].cap_kinds
    # 1 MiB: steps of 512 KiB stripe over all four rails: the same rate either way
    a = Expander(four).collective("tree", "Simple", "AllReduce", (0, 8), 2**20)
    b = Expander(one).collective("tree", "Simple", "AllReduce", (0, 8), 2**20)
    assert a.algbw(four.capacity) == b.algbw(one.capacity)


def test_no_rails_without_the_rdma_protocol_or_across_one_node():
    spec = find_spec("p5")
    sendrecv = Topology(replace(spec, nccl=replace(spec.nccl, ofi_protocol="SENDRECV")), 2)
    c = Expander(sendrecv).collective("tree", "Simple", "AllReduce", (0, 8), 64 * KiB)
    assert CAP_RAIL not in c.flows[0].cap_kinds
    inside = Topology(spec, 1)
    c = Expander(inside).collective("ring", "Simple", "AllReduce", tuple(range(8)), 64 * KiB)
    assert all(CAP_RAIL not in f.cap_kinds for f in c.flows)
