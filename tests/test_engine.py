from __future__ import annotations

import numpy as np
import pytest

from p2sim.sim.engine import FlowSpec, run_flows


def flow(edges, volume, latency=0.0, coef=None):
    e = np.asarray(edges, dtype=np.int64)
    return FlowSpec(e, np.ones(len(e)) if coef is None else np.asarray(coef, float), volume, latency)


@pytest.mark.parametrize("k", [1, 2, 5, 16])
def test_k_identical_transfers_on_one_link_take_k_times_as_long(k):
    cap = np.array([4.0])
    one, _, _ = run_flows([flow([0], 100.0)], cap)
    many, recs, _ = run_flows([flow([0], 100.0) for _ in range(k)], cap)
    assert one == pytest.approx(25.0)
    assert many == pytest.approx(k * one)
    assert all(r.end == pytest.approx(k * one) for r in recs)


def test_rates_are_recomputed_when_flows_finish_and_join():
    cap = np.array([10.0, 10.0])
    t, recs, samples = run_flows([flow([0], 100.0), flow([0, 1], 20.0), flow([1], 50.0, latency=1.0)], cap, True)
    # 0..1: flows 0,1 share link 0 at 5 each; flow 1 has 15 left
    # 1..: flow 2 joins link 1: link 0 (5,5), link 1: flow1 5, flow2 5 -> flow 1 ends at 4
    # 4..: flow 0 alone at 10 (80 left at t=4 -> ends 12); flow 2 alone at 10 (35 left -> ends 7.5)
    assert [r.end for r in recs] == pytest.approx([12.0, 4.0, 7.5])
    assert t == pytest.approx(12.0)
    for s in samples:  # a flow never exceeds any link's bandwidth
        assert (s.load <= cap[s.edges] * (1 + 1e-12)).all()


def test_latency_delays_the_transfer():
    t, recs, _ = run_flows([flow([0], 10.0, latency=3.0)], np.array([10.0]))
    assert t == pytest.approx(4.0) and recs[0].start == pytest.approx(3.0)


def test_weighted_usage_counts_every_traversal():
    # a ring whose two hops both cross link 0 loads it twice per byte
    t, _, _ = run_flows([flow([0], 10.0, coef=[2.0])], np.array([10.0]))
    assert t == pytest.approx(2.0)


def test_zero_volume_and_infinite_capacity():
    t, _, _ = run_flows([flow([0], 0.0, latency=1.0)], np.array([1.0]))
    assert t == pytest.approx(1.0)
    t, _, _ = run_flows([flow([0], 5.0, latency=2.0)], np.array([np.inf]))
    assert t == pytest.approx(2.0)


def test_same_run_twice_is_identical():
    flows = [flow([i % 3, 3], 10.0 + i, latency=0.1 * (i % 2)) for i in range(12)]
    cap = np.array([3.0, 5.0, 7.0, 11.0])
    a = run_flows(flows, cap, True)
    b = run_flows(flows, cap, True)
    assert a[0] == b[0] and a[1] == b[1]
    assert all((x.load == y.load).all() for x, y in zip(a[2], b[2]))
