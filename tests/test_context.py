"""The simulation context: what simulators of one topology share, and the two ways to drop it."""

from __future__ import annotations

import pytest

from p2sim.collectives import Expander
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program
from p2sim.sim import SimSettings, SimulationContext, Simulator
from p2sim.topology import load_system

PROGRAM = parse_program("ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)")


def _run(sim: Simulator) -> float:
    lw = Lowering.of(Placement.of(sim.topo.hierarchy, [4, 8], [[2, 2], [1, 8]]), [0])
    return sim.simulate(lw, PROGRAM, 2**30).total_seconds


def test_simulators_share_what_their_context_keeps_and_only_that():
    topo = load_system("a100", 2)
    ctx = SimulationContext(topo)
    t = _run(Simulator(topo, SimSettings("auto"), context=ctx))
    kept = ctx.step_results()
    assert kept > 0 and ctx.rings and ctx.gpu_classes is not None and ctx.row_counts  # the buffer fractions too
    again = Simulator(topo, SimSettings("auto"), context=ctx)
    assert again.expander.caches is ctx and _run(again) == t and ctx.step_results() == kept  # reused, not rebuilt
    alone = Simulator(topo, SimSettings("auto"))
    assert alone.context is not ctx and _run(alone) == t and ctx.step_results() == kept


def test_forget_order_drops_the_per_shape_decisions_and_clear_drops_everything():
    topo = load_system("a100", 2)
    ctx = SimulationContext(topo)
    t = _run(Simulator(topo, SimSettings("auto"), context=ctx))
    (exp,) = ctx._expansions.values()
    assert exp.choice and exp.cache and any(k[0] == "channels" for k in exp.by_shape)
    ctx.forget_order()
    assert ctx.step_results() == 0 and not exp.choice and not exp.settings
    assert not any(k[0] == "channels" for k in exp.by_shape) and exp.cache and ctx.rings  # exact caches stay
    assert _run(Simulator(topo, SimSettings("auto"), context=ctx)) == t
    ctx.clear()
    assert ctx.step_results() == 0 and not exp.cache and not ctx.rings and exp.held_bytes == [0]
    assert ctx.gpu_classes is None and not exp.held and not ctx.row_counts
    assert _run(Simulator(topo, SimSettings("auto"), context=ctx)) == t


def test_a_context_belongs_to_one_topology():
    ctx = SimulationContext(load_system("a100", 2))
    other = load_system("a100", 2)
    with pytest.raises(ValueError, match="another topology"):
        Simulator(other, SimSettings("ring"), context=ctx)
    with pytest.raises(ValueError, match="another topology"):
        Expander(other, caches=ctx)
