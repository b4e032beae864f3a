"""p2sim.sim.sim_settings: the simulator's part of the settings, handed to the simulator whole."""

from __future__ import annotations

from p2sim.sim import SimulationContext
from p2sim.sim.sim_settings import SimSettings
from p2sim.topology import load_system


def test_the_simulator_runs_with_the_settings_it_was_handed():
    ctx = SimulationContext(load_system("a100", 2))
    sim = SimSettings(algo="tree", proto="Simple", engine="analytic").simulator(ctx.topo, ctx)
    assert (sim.algo, sim.proto, sim.engine, sim.context) == ("tree", "Simple", "analytic", ctx)


def test_the_default_settings_are_nccls_choice_in_the_event_driven_model():
    sim = SimSettings().simulator(load_system("a100", 2))
    assert (sim.algo, sim.proto, sim.engine) == ("auto", "auto", "des")
