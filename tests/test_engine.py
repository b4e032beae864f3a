from __future__ import annotations

import contextlib
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from p2sim.util.errors import InputError
from p2sim.sim import maxmin
import p2sim.sim.engine as engine
from p2sim.sim.engine import FlowSpec, run_flows, sparse_usage
from p2sim.sim.symmetry import quotient

from .reference_engine import run_flows as run_reference


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


# ---- the incremental engine against the previous dense engine ---------------------------------


@pytest.fixture(params=["incremental", "switch", "auto"])
def solver_mode(request, monkeypatch):
    """Every network solved incrementally; densely for 2 updates, then incrementally; the default."""
    if request.param == "incremental":
        monkeypatch.setattr(maxmin, "_DENSE_MATRIX", 0)
    elif request.param == "switch":
        monkeypatch.setattr(maxmin, "_DENSE", 0)
        monkeypatch.setattr(maxmin, "_DENSE_UPDATES", 2)
    return request.param


@st.composite
def scenarios(draw):
    """Random flows on a few links: shared links, weights, private ceilings, staggered starts."""
    links = draw(st.integers(1, 6))
    n = draw(st.integers(1, 14))
    cap = draw(st.lists(st.sampled_from([1.0, 2.0, 5.0, 10.0, 7.5, np.inf]), min_size=links, max_size=links))
    flows = []
    for j in range(n):
        edges = draw(st.sets(st.integers(0, links - 1), min_size=1, max_size=links))
        coef = [draw(st.sampled_from([0.5, 1.0, 1.0, 2.0])) for _ in edges]
        if draw(st.booleans()):  # a private ceiling, as the simulator appends per channel
            edges = set(edges) | {links + j}
            coef.append(draw(st.sampled_from([1.0, 3.0])))
        volume = draw(st.sampled_from([0.0, 1.0, 10.0, 17.0, 100.0, 250.0]))
        latency = draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.5]))
        flows.append(flow(sorted(edges), volume, latency, coef))
    capacity = np.array(cap + [draw(st.sampled_from([3.0, 4.0])) for _ in range(n)])
    return flows, capacity


# the fixture only picks the solver: the same for every generated input
@pytest.mark.slow  # hypothesis: hundreds of simulations on two engines
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_results_equal_the_dense_engine(solver_mode, scenario):
    flows, capacity = scenario
    try:
        want = run_reference(flows, capacity)
    except RuntimeError:  # a flow that can never finish: both engines must say so
        with pytest.raises(InputError, match="never finishes"):
            run_flows(flows, capacity)
        return
    got = run_flows(flows, capacity)
    assert got[0] == pytest.approx(want[0], rel=1e-9)
    for a, b in zip(got[1], want[1]):
        assert (a.label, a.start) == (b.label, b.start)
        assert a.end == pytest.approx(b.end, rel=1e-9, abs=1e-12)


def test_many_flows_finishing_at_distinct_times_equal_the_dense_engine(solver_mode):
    rng = np.random.default_rng(3)
    links = 30
    cap = rng.choice([10.0, 25.0, 100.0], size=links)
    flows = []
    for _ in range(150):
        edges = np.sort(rng.choice(links, size=rng.integers(1, 6), replace=False))
        flows.append(flow(edges, float(rng.integers(1, 1000)), float(rng.uniform(0, 5)), rng.choice([1.0, 2.0], len(edges))))
    got, want = run_flows(flows, cap, True), run_reference(flows, cap, True)
    assert got[0] == pytest.approx(want[0], rel=1e-9)
    np.testing.assert_allclose([r.end for r in got[1]], [r.end for r in want[1]], rtol=1e-9)
    # the rate samples too: the same times, and the same loads on the same links
    assert [s.time for s in got[2]] == pytest.approx([s.time for s in want[2]], rel=1e-12)
    for a, b in zip(got[2], want[2]):
        assert a.edges.tolist() == b.edges.tolist()
        np.testing.assert_allclose(a.load, b.load, rtol=1e-9)


@pytest.mark.parametrize("system", ["a100", "v100", "h100"])
def test_simulated_programs_equal_the_dense_engine(monkeypatch, solver_mode, system):
    # every step of every program of every matrix on 2 nodes, ring and tree, through both engines
    from p2sim.sim import SimSettings, Simulator
    from p2sim.sim import simulator as simulator_module
    from p2sim.formalism.synthesis import synthesize_placements
    from p2sim.topology import load_system

    steps = []

    def both(flows, capacity, record=False):
        got, want = run_flows(flows, capacity, record), run_reference(flows, capacity, record)
        steps.append(len(flows))
        assert got[0] == pytest.approx(want[0], rel=1e-9)
        np.testing.assert_allclose([r.end for r in got[1]], [r.end for r in want[1]], rtol=1e-9)
        return got

    monkeypatch.setattr(simulator_module, "run_flows", both)
    topo = load_system(system, nodes=2)
    syn = synthesize_placements(topo.hierarchy, [2, topo.devices // 2], [1])
    for algo in ("ring", "tree"):
        sim = Simulator(topo, SimSettings(algo))
        for m in syn.matrices:
            for p in m.programs:
                sim.simulate(m.lowering, p, 2**30)
    assert len(steps) > 10 and max(steps) > 1


# ---- no stall, whatever the magnitudes --------------------------------------------------------


@contextlib.contextmanager
def deadline(seconds: float):
    """Fail (rather than hang the suite) if the block runs longer than ``seconds``."""

    def expired(_signum, _frame):
        raise TimeoutError(f"still running after {seconds} s: the engine stalled")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_latency_of_1e20_us_completes(solver_mode):
    # at t = 1e14 s the clock's spacing is 1/64 s, far above these flows' durations: the dense
    # engine looped for ever here; now the flows finish at the instant the clock can represent
    lat = 1e20 * 1e-6
    flows = [flow([0], 1e6, lat), flow([0, 1], 5e5, lat), flow([1], 1e3, lat + 1.0)]
    with deadline(10):
        t, recs, _ = run_flows(flows, np.array([1e9, 1e9]))
    assert t == lat + 1.0
    assert [(r.start, r.end) for r in recs] == [(lat, lat), (lat, lat), (lat + 1.0, lat + 1.0)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.sampled_from([0.0, 1e-6, 1.0, 1e6, 1e14, 1e20 * 1e-6 + 1.0]),
                       st.sampled_from([1e-300, 1.0, 1e9, 1e20, 1e300]),
                       st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True)),
             min_size=1, max_size=6),
    st.lists(st.sampled_from([1e-9, 1.0, 1e11, 1e300]), min_size=3, max_size=3),
)
# flow 4's ceiling of 1e300 (link 1 is its own) once rounded link 2's load away: flow 2 ended at 0.5 s
@example(specs=[(0.0, 1e-300, [0]), (0.0, 1e-300, [0]), (0.0, 1.0, [2]), (1e-6, 1e-300, [0, 2]), (0.0, 1.0, [0, 1, 2])],
         capacity=[1e-9, 1e300, 1.0])
def test_no_stall_whatever_the_magnitudes(solver_mode, specs, capacity):
    """Latencies up to 1e20 us, bandwidths from 1e-9 to 1e300 bytes/s: time advances or flows end."""
    flows = [flow(sorted(e), volume, latency) for latency, volume, e in specs]
    longest = max(f.latency for f in flows) + sum(f.volume for f in flows) / min(capacity)
    with deadline(10):
        if not np.isfinite(longest) or longest > 1e300:
            # past the float range (1e300 bytes at 1e-9 bytes/s): refused with one message, not hung
            with contextlib.suppress(InputError):
                run_flows(flows, np.array(capacity))
            return
        t, recs, _ = run_flows(flows, np.array(capacity))
    for f, r in zip(flows, recs):
        assert r.start == f.latency
        alone = f.volume / min(capacity[e] for e in f.edges.tolist())
        # never faster than alone on its slowest link, never slower than behind every other flow
        assert r.end >= r.start
        assert r.end - r.start >= alone * (1 - 1e-9) or r.end - r.start <= np.spacing(r.end)
        assert np.isfinite(r.end)
    assert t == max(r.end for r in recs)


def test_a_ceiling_far_above_a_link_never_rounds_its_other_loads_away(solver_mode):
    # A (16 B) on link 2; B (1 B) on links 0 and 2; C (10 B) on links 0, 1 and 2, where link 1
    # (1e300 B/s) is C's own: a ceiling of 1e300.  Capacities 2, 1e300, 10.
    # 0..1: B and C share link 0 at 1 each; A takes the rest of link 2, 8.  B ends at 1
    #       (A has 16 - 8 = 8 left, C 10 - 1 = 9).
    # 1..2: C alone on link 0 at 2, A still at 10 - 2 = 8: A ends at 1 + 8/8 = 2 (C has 7 left).
    # 2.. : C at 2 ends at 2 + 7/2 = 5.5.
    # When B ended, C stood on link 2 at its ceiling for a moment: 8 + 1e300 - 1e300 = 0 lost A's
    # load there, and A ran at 16 on a link of 10 (ending at 1.5).
    capacity = np.array([2.0, 1e300, 10.0])
    t, recs, samples = run_flows([flow([2], 16.0), flow([0, 2], 1.0), flow([0, 1, 2], 10.0)], capacity, True)
    assert [r.end for r in recs] == pytest.approx([2.0, 1.0, 5.5], rel=1e-12)
    assert t == pytest.approx(5.5, rel=1e-12)
    for s in samples:  # a flow never exceeds any link's bandwidth
        assert (s.load <= capacity[s.edges] * (1 + 1e-12)).all()


@pytest.mark.parametrize("bandwidth", [1e-9, 1e300])
def test_one_flow_at_extreme_bandwidths_takes_volume_over_bandwidth(bandwidth):
    with deadline(10):
        t, recs, _ = run_flows([flow([0], 1e3, 2.0)], np.array([bandwidth]))
    assert t == pytest.approx(2.0 + 1e3 / bandwidth, rel=1e-12)


def test_a_flow_that_can_never_finish_is_one_clear_error():
    with pytest.raises(InputError, match=r"flow 'stuck' never finishes: its rate is 0"):
        run_flows([FlowSpec(np.array([0]), np.ones(1), 5.0, 0.0, "stuck")], np.array([0.0]))
    with pytest.raises(InputError, match="past the largest float time"):
        run_flows([flow([0], 1e300, 0.0)], np.array([1e-300]))
    with pytest.raises(InputError, match="must be finite"):
        run_flows([flow([0], 1.0, np.inf)], np.array([1.0]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 9), st.sampled_from([0.0, 0.5, 1.0, 2.0])), max_size=5), max_size=6))
def test_sparse_usage_merges_repeats_and_drops_zero_coefficients(spec):
    # in order or not, with repeats or zero coefficients: each flow's links once, ascending, summed
    flows = [FlowSpec(np.array([e for e, _ in f], dtype=np.int64), np.array([c for _, c in f]), 1.0, 0.0) for f in spec]
    links, (indptr, local, coef) = sparse_usage(flows)
    assert links.tolist() == sorted({e for f in spec for e, _ in f})
    for j, f in enumerate(spec):
        want: dict[int, float] = {}
        for e, c in f:
            if c > 0:
                want[e] = want.get(e, 0.0) + c
        got = dict(zip(links[local[indptr[j]:indptr[j + 1]]].tolist(), coef[indptr[j]:indptr[j + 1]].tolist()))
        assert sorted(want) == list(got) and all(got[e] == want[e] for e in want)


def test_the_quotient_is_given_only_the_links_in_use(monkeypatch):
    # 64 congruent flows on 64 of a million links: the quotient sees those 64 (and one more shared), not
    # the million (nor a second pass over the flows to find them)
    seen = []

    def spy(indptr, links, coef, capacity, volume, latency):
        seen.append((int(links.max()) + 1, len(capacity)))
        return quotient(indptr, links, coef, capacity, volume, latency)
    monkeypatch.setattr(engine, "quotient", spy)
    monkeypatch.setattr(engine, "_SYMMETRY_MIN", 0)
    capacity = np.full(1_000_000, 4.0)
    flows = [flow([10_000 * k + 7, 999_999], 8.0) for k in range(64)]
    t, records, _ = run_flows(flows, capacity)
    assert seen == [(65, 65)]
    assert t == 8.0 / (4.0 / 64) and {r.end for r in records} == {t}
