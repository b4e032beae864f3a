"""p2sim.sim.joint: steps of different collectives run together share links; disjoint ones are not slowed."""

from __future__ import annotations

import math

import pytest

from p2sim.formalism.hierarchy import LoweredStep
from p2sim.formalism.semantics import Op
from p2sim.sim.joint import Load, alone_seconds, run_built, slowdowns, step_flows
from p2sim.sim.sim_settings import SimSettings
from p2sim.sim.simulator import Simulator
from p2sim.topology import load_system


@pytest.fixture(scope="module")
def sim():
    return Simulator(load_system("a100", nodes=4), SimSettings())


def _load(groups, size=2.0**28, calls=1.0, op=Op.ALL_TO_ALL):
    return Load(LoweredStep(op, groups), size, calls)


def test_two_equal_loads_on_one_nic_take_twice_as_long(sim):
    # GPUs 0 and 1 of a node reach the network through one NIC (a100): two equal AllToAlls across two nodes
    # share it, each at half its rate
    s = slowdowns(sim, [_load(((0, 16),)), _load(((1, 17),))])
    assert s == pytest.approx((2.0, 2.0), rel=5e-3)  # up to the start-up latency, paid once either way


def test_disjoint_loads_are_exactly_unchanged(sim):
    assert slowdowns(sim, [_load(((0, 16),)), _load(((32, 48),))]) == (1.0, 1.0)


def test_a_load_twice_the_bytes_slows_the_other_for_its_whole_time(sim):
    # the smaller shares the NIC from start to end: twice as long; the larger shares it for the smaller's
    # bytes, then runs alone: (1 + 2) / 2 of its time
    small, large = _load(((0, 16),)), _load(((1, 17),), calls=2.0)
    s = slowdowns(sim, [small, large])
    assert s[0] == pytest.approx(2.0, rel=5e-3)
    assert s[1] == pytest.approx(1.5, rel=5e-3)


def test_calls_scale_the_time_after_the_latency(sim):
    load = _load(((0, 16),))
    built = step_flows(sim, load.step, (load.volume,))
    one = sim.step(load.step, (load.volume,)).seconds
    assert run_built(sim, [built], [1.0])[0] == pytest.approx(one, rel=1e-12)
    assert alone_seconds(sim, built, 3.0, one) == pytest.approx(run_built(sim, [built], [3.0])[0], rel=1e-9)


def test_a_load_started_after_the_other_ends_is_not_slowed(sim):
    a, b = _load(((0, 16),)), _load(((1, 17),))
    fa, fb = (step_flows(sim, x.step, (x.volume,)) for x in (a, b))
    alone = run_built(sim, [fa], [1.0])[0]
    ta, tb = run_built(sim, [fa, fb], [1.0, 1.0], [0.0, alone])
    assert ta == pytest.approx(alone, rel=1e-12)
    assert tb - alone == pytest.approx(alone, rel=1e-9)


def test_other_engines_have_no_contention():
    settings, topo = SimSettings(engine="analytic"), load_system("a100", nodes=4)
    analytic = Simulator(topo, settings)
    assert slowdowns(analytic, [_load(((0, 16),)), _load(((1, 17),))]) == (1.0, 1.0)


def test_many_groups_lay_out_as_the_simulator_does(sim):
    # above the few-groups threshold the flows are built per class of moved groups: one run alone is the step
    groups = tuple((i, 16 + i) for i in range(16)) + tuple((32 + i, 48 + i) for i in range(16))
    step = LoweredStep(Op.ALL_TO_ALL, groups)
    built = step_flows(sim, step, (2.0**26,) * len(groups))
    assert run_built(sim, [built], [1.0])[0] == pytest.approx(sim.step(step, (2.0**26,) * len(groups)).seconds,
                                                              rel=1e-12)
    assert math.isfinite(slowdowns(sim, [Load(step, 2.0**26), _load(((0, 16),))])[1])
