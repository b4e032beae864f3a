from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from p2sim.sim.maxmin import max_min_rates


@st.composite
def problems(draw):
    flows = draw(st.integers(1, 6))
    links = draw(st.integers(1, 5))
    usage = draw(arrays(float, (flows, links), elements=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])))
    for j in range(flows):  # every flow uses at least one link
        if not usage[j].any():
            usage[j, draw(st.integers(0, links - 1))] = 1.0
    cap = draw(arrays(float, (links,), elements=st.floats(1.0, 100.0)))
    return usage, cap


@settings(max_examples=200, deadline=None)
@given(problems())
def test_max_min_is_feasible_and_every_flow_is_bottlenecked(problem):
    usage, cap = problem
    rates = max_min_rates(usage, cap)
    load = rates @ usage
    assert (load <= cap * (1 + 1e-9)).all()  # never exceeds a link
    saturated = load >= cap * (1 - 1e-9)
    for j in range(len(rates)):
        # max-min: each flow crosses a saturated link on which no flow has a larger rate
        links = np.flatnonzero((usage[j] > 0) & saturated)
        assert any(rates[j] >= rates[usage[:, l] > 0].max() * (1 - 1e-9) for l in links)


def test_equal_sharing_and_infinite_links():
    assert max_min_rates(np.ones((4, 1)), np.array([8.0])).tolist() == [2.0] * 4
    r = max_min_rates(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([np.inf, 5.0]))
    assert np.isinf(r[0]) and r[1] == 5.0
