from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from p2sim.sim import maxmin
from p2sim.sim.maxmin import MaxMin, max_min_rates

from .reference_engine import max_min_rates as dense_max_min_rates


@st.composite
def problems(draw, max_flows=6, max_links=5):
    flows = draw(st.integers(1, max_flows))
    links = draw(st.integers(1, max_links))
    usage = draw(arrays(float, (flows, links), elements=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])))
    for j in range(flows):  # every flow uses at least one link
        if not usage[j].any():
            usage[j, draw(st.integers(0, links - 1))] = 1.0
    # small integers make ties (several links saturating at one level) common
    cap = draw(arrays(float, (links,), elements=st.one_of(st.floats(1.0, 100.0), st.sampled_from([1.0, 2.0, 4.0, np.inf]))))
    return usage, cap


def solver(usage: np.ndarray, cap: np.ndarray, dense: bool | None = False) -> MaxMin:
    """The incremental solver on a dense problem (not the dense one these sizes would get)."""
    rows, cols = np.nonzero(usage > 0)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=usage.shape[0]))])
    return MaxMin(indptr, cols, usage[rows, cols], cap, dense=dense)


def assert_same_rates(got: np.ndarray, want: np.ndarray) -> None:
    assert (np.isinf(got) == np.isinf(want)).all()
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-9, atol=0.0)


@pytest.mark.slow  # hypothesis against the dense solver
@settings(max_examples=200, deadline=None)
@given(problems())
def test_max_min_is_feasible_and_every_flow_is_bottlenecked(problem):
    usage, cap = problem
    rates = max_min_rates(usage, cap)
    finite = np.where(np.isfinite(rates), rates, 0.0)
    load = finite @ usage
    assert (load <= cap * (1 + 1e-9)).all()  # never exceeds a link
    saturated = load >= cap * (1 - 1e-9)
    for j in range(len(rates)):
        if np.isinf(rates[j]):  # only on infinite links
            assert np.isinf(cap[usage[j] > 0]).all()
            continue
        # max-min: each flow crosses a saturated link on which no flow has a larger rate
        links = np.flatnonzero((usage[j] > 0) & saturated)
        assert any(rates[j] >= finite[usage[:, l] > 0].max() * (1 - 1e-9) for l in links)


@settings(max_examples=200, deadline=None)
@given(problems())
def test_one_shot_rates_equal_the_dense_solver(problem):
    usage, cap = problem
    mm = solver(usage, cap)
    mm.update(joined=range(usage.shape[0]))
    assert_same_rates(mm.rate, dense_max_min_rates(usage, cap))
    # the dense solver kept for small networks is the previous one, unchanged
    assert max_min_rates(usage, cap).tolist() == dense_max_min_rates(usage, cap).tolist()


@st.composite
def histories(draw):
    """A problem and a sequence of (joining, finishing) sets, as the engine produces them."""
    usage, cap = draw(problems(max_flows=14, max_links=8))
    flows = usage.shape[0]
    active: set[int] = set()
    steps = []
    for _ in range(draw(st.integers(1, 12))):
        joined = draw(st.sets(st.sampled_from(range(flows)))) - active
        finished = draw(st.sets(st.sampled_from(sorted(active)))) if active else set()
        steps.append((sorted(joined), sorted(finished)))
        active = (active | joined) - finished
    return usage, cap, steps


@pytest.mark.slow  # hypothesis against the dense solver
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(histories())
@pytest.mark.parametrize("dense", [False, True, None])
def test_incremental_updates_equal_the_dense_solver_after_every_step(monkeypatch, dense, history):
    usage, cap, steps = history
    if dense is None:  # dense for two updates, then incremental from there on
        monkeypatch.setattr(maxmin, "_DENSE", 0)
        monkeypatch.setattr(maxmin, "_DENSE_UPDATES", 2)
    mm = solver(usage, cap, dense)
    active = np.zeros(usage.shape[0], dtype=bool)
    for joined, finished in steps:
        before = mm.rate.copy()
        changed = mm.update(joined=joined, finished=finished)
        active[joined] = True
        active[finished] = False
        want = np.zeros(usage.shape[0])
        ids = np.flatnonzero(active)
        if ids.size:
            want[ids] = dense_max_min_rates(usage[ids], cap)
        assert_same_rates(mm.rate, want)
        # ``changed`` names exactly the flows whose rate moved
        moved = np.flatnonzero(mm.rate != before)
        assert changed.tolist() == moved.tolist()
        assert (mm.rate[~active] == 0).all()


@st.composite
def ceiling_histories(draw):
    """Histories on shared links of small capacities, each flow with a link of its own (a
    ceiling) of any magnitude: a ceiling far above a link once rounded its other loads away."""
    flows = draw(st.integers(1, 8))
    links = draw(st.integers(1, 4))
    usage = draw(arrays(float, (flows, links), elements=st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0])))
    for j in range(flows):
        if not usage[j].any():
            usage[j, draw(st.integers(0, links - 1))] = 1.0
    cap = draw(st.lists(st.sampled_from([1e-9, 1e-3, 1.0, 2.0, 10.0, 1e6, 1e20]), min_size=links, max_size=links))
    own = np.diag([draw(st.sampled_from([1.0, 2.0])) for _ in range(flows)])
    cap += [draw(st.sampled_from([np.inf, 1e300, 1e17, 1e9, 1e4, 3.0, 1e-6])) for _ in range(flows)]
    active: set[int] = set()
    steps = []
    for _ in range(draw(st.integers(1, 10))):
        joined = draw(st.sets(st.sampled_from(range(flows)))) - active
        finished = draw(st.sets(st.sampled_from(sorted(active)))) if active else set()
        steps.append((sorted(joined), sorted(finished)))
        active = (active | joined) - finished
    return np.hstack([usage, own]), np.array(cap), steps


@pytest.mark.slow  # hypothesis against the dense solver
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ceiling_histories())
@pytest.mark.parametrize("dense", [False, None])
def test_ceilings_of_any_magnitude_equal_the_dense_solver_after_every_step(monkeypatch, dense, history):
    test_incremental_updates_equal_the_dense_solver_after_every_step.hypothesis.inner_test(monkeypatch, dense, history)
    usage, cap, steps = history
    mm = solver(usage, cap, dense)  # replayed: every link within its capacity after every step
    for joined, finished in steps:
        mm.update(joined=joined, finished=finished)
        assert (np.where(np.isfinite(mm.rate), mm.rate, 0.0) @ usage <= cap * (1 + 1e-9)).all()


def test_incremental_on_a_larger_random_network():
    # 120 flows over 40 links joining and leaving in random batches, against the dense solver
    rng = np.random.default_rng(7)
    flows, links = 120, 40
    usage = np.zeros((flows, links))
    for j in range(flows):
        usage[j, rng.choice(links, size=rng.integers(1, 6), replace=False)] = rng.choice([1.0, 1.0, 2.0, 0.5])
    cap = rng.choice([10.0, 25.0, 100.0], size=links)
    mm = solver(usage, cap)
    active = np.zeros(flows, dtype=bool)
    for _ in range(60):
        joined = [int(j) for j in np.flatnonzero(~active) if rng.random() < 0.15]
        finished = [int(j) for j in np.flatnonzero(active) if rng.random() < 0.1]
        mm.update(joined=joined, finished=finished)
        active[joined] = True
        active[finished] = False
        ids = np.flatnonzero(active)
        if ids.size:
            assert_same_rates(mm.rate[ids], dense_max_min_rates(usage[ids], cap))


def test_equal_sharing_and_infinite_links():
    assert max_min_rates(np.ones((4, 1)), np.array([8.0])).tolist() == [2.0] * 4
    r = max_min_rates(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([np.inf, 5.0]))
    assert np.isinf(r[0]) and r[1] == 5.0


def test_a_finishing_flow_frees_its_share_along_a_chain():
    # links 0..2 of capacity 10; flow 0 on link 0, flow 1 on links 0-1, flow 2 on links 1-2, flow 3 on link 2
    usage = np.array([[1.0, 0, 0], [1, 1, 0], [0, 1, 1], [0, 0, 1]])
    mm = solver(usage, np.array([10.0, 10.0, 10.0]))
    mm.update(joined=[0, 1, 2, 3])
    assert mm.rate.tolist() == [5.0, 5.0, 5.0, 5.0]
    mm.update(finished=[0])  # flow 1 takes link 0's room, up to link 1's half
    assert mm.rate.tolist() == [0.0, 5.0, 5.0, 5.0]
    mm.update(finished=[3])  # now link 1 binds flows 1 and 2 at 5 each still
    assert mm.rate.tolist() == [0.0, 5.0, 5.0, 0.0]
    mm.update(finished=[2])
    assert mm.rate.tolist() == [0.0, 10.0, 0.0, 0.0]


def test_a_ceiling_far_above_a_link_never_rounds_its_other_loads_away():
    # flow 0 on link 2; flow 1 on links 0 and 2; flow 2 on links 0, 1 and 2, link 1 its own (a
    # ceiling of 1e300); capacities 2, 1e300, 10
    usage = np.array([[0.0, 0, 1], [1, 0, 1], [1, 1, 1]])
    mm = solver(usage, np.array([2.0, 1e300, 10.0]))
    mm.update(joined=[0, 1, 2])  # flows 1 and 2 share link 0; flow 0 takes the rest of link 2
    assert mm.rate.tolist() == [8.0, 1.0, 1.0]
    # flow 2 takes link 0 whole; link 2 (8 + 2) stays full.  Flow 2 stood on link 2 at its ceiling
    # for a moment: 8 + 1e300 - 1e300 = 0 lost flow 0's load there, which rose to 16
    mm.update(finished=[1])
    assert mm.rate.tolist() == [8.0, 0.0, 2.0]


def test_a_rate_far_above_a_link_never_rounds_its_load_away():
    # links: Z (1e20), X (10), A's own (7), V (15); flows: A on X and its own link, C on Z and X,
    # F on Z with a weight of 1e20, J on X and V, K on V
    usage = np.array([[0.0, 1, 1, 0], [1, 1, 0, 0], [1e20, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 1]])
    mm = solver(usage, np.array([1e20, 10.0, 7.0, 15.0]))
    mm.update(joined=[0, 1, 2])  # C and F share Z at 1 (1e20 = (1 + 1e20) x 1); A at 7; X has room
    assert mm.rate.tolist() == [7.0, 1.0, 1.0, 0.0, 0.0]
    # Z to C alone would be 1e20, which overloads X: A and C share X at 5 each.  X's load summed
    # as 8 + 1e20 - 1e20 + ... came to 0 instead of 10
    mm.update(finished=[2])
    assert mm.rate.tolist() == [5.0, 5.0, 0.0, 0.0, 0.0]
    mm.update(finished=[0, 1])
    mm.update(joined=[3, 4])  # J and K share V at 7.5; X has room
    assert mm.rate.tolist() == [0.0, 0.0, 0.0, 7.5, 7.5]
    mm.update(finished=[4])  # V to J alone would be 15: X (10) binds it.  X's load, 10 short, hid that
    assert mm.rate.tolist() == [0.0, 0.0, 0.0, 10.0, 0.0]


def test_weights_far_apart_never_round_a_links_weight_away():
    # link 0 (1e20): flow 0 with a weight of 1e-4, flow 1 with 1e4, flow 2 with 1; link 1 (1e-9):
    # flows 1 and 2.  Link 1 stops flows 1 and 2 at 5e-10; flow 0 takes the rest of link 0:
    # (1e20 - (1e4 + 1) 5e-10) / 1e-4 = 1e24 - 0.05, 1e24 in floats.  Link 0's weight, summed as
    # 1e4 + 1 + 1e-4 - 1e4 - 1, was 1e-4 to 7e-9: flow 0 overloaded link 0 by as much
    mm = solver(np.array([[1e-4, 0.0], [1e4, 1.0], [1.0, 1.0]]), np.array([1e20, 1e-9]))
    mm.update(joined=[0, 1, 2])
    assert mm.rate.tolist() == [1e24, 5e-10, 5e-10]
    # the same with 1e8 and 1e-8: link 1 stops flows 0 and 1 at 5e-18, flow 2 takes the rest of
    # link 0, (1e20 - 1e-9) / 1e-8 = 1e28.  2e8 + 1e-8 - 2e8 = 0 left link 0 without weight: flow
    # 2 ran at its ceiling (1e300), or without one stopped the solver ("unbounded")
    usage = np.array([[1e8, 1e8, 0.0], [1e8, 1e8, 0.0], [1e-8, 0.0, 1.0]])
    for ceiling in (1e300, np.inf):
        mm = solver(usage, np.array([1e20, 1e-9, ceiling]))
        mm.update(joined=[0, 1, 2])
        assert mm.rate.tolist() == [5e-18, 5e-18, 1e28]
    # flows 0 and 1 weigh 1e-8 on links 0 and 1 (1e6 each); flow 2 1e-8 on link 0, 0.5 on link 1,
    # capped at 1e4 by a link of its own.  Link 1 binds: (1e6 - 0.5 * 1e4) / 2e-8 = 4.975e13 each.
    # Link 1, found overloaded, entered the solver with its weight summed as 0.5 + 2e-8 - 0.5
    mm = solver(np.array([[1e-8, 1e-8, 0.0], [1e-8, 1e-8, 0.0], [1e-8, 0.5, 1.0]]), np.array([1e6, 1e6, 1e4]))
    mm.update(joined=[0, 1, 2])
    assert mm.rate.tolist() == [4.975e13, 4.975e13, 1e4]
    # links 0 (1e20), 1 (1e6), 2 (1e-3); flow 0 weighs 1e20 on links 0 and 1, capped at 3; flow 1
    # 1e20 on links 0 and 1, 0.5 on link 2; flow 2 1e20 on links 0, 1 and 2; flow 3 1e20 on link 0,
    # 0.5 on link 1, capped at 1e4.  Link 2 stops flows 1 and 2 at 1e-3 / (1e20 + 0.5) = 1e-23;
    # link 1 flows 0 and 3 at (1e6 - 2e-3) / (1e20 + 0.5) = 9.99999998e-15.  Flow 0 grown to its
    # ceiling (3e20 of load) was taken into link 1's B below flow 3 and out again, with 2e-3
    usage = np.array([[1e20, 1e20, 0, 1, 0, 0, 0], [1e20, 1e20, 0.5, 0, 1, 0, 0], [1e20, 1e20, 1e20, 0, 0, 1, 0],
                      [1e20, 0.5, 0, 0, 0, 0, 1]])
    mm = solver(usage, np.array([1e20, 1e6, 1e-3, 3.0, np.inf, np.inf, 1e4]))
    mm.update(joined=[0, 1])
    mm.update(joined=[2, 3])
    assert mm.rate.tolist() == pytest.approx([9.99999998e-15, 1e-23, 1e-23, 9.99999998e-15], rel=1e-12, abs=0)


def test_zero_capacity_stops_its_flows():
    r = max_min_rates(np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([0.0, 4.0]))
    assert r.tolist() == [0.0, 4.0]


@pytest.mark.parametrize("scale", [1e-9, 1.0, 1e300])
def test_extreme_capacities(scale):
    usage = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    cap = np.array([3.0, 4.0]) * scale
    assert_same_rates(max_min_rates(usage, cap), dense_max_min_rates(usage, cap))
