"""p2sim.sim.sim_settings: the simulator's part of the settings, handed to the simulator whole."""

from __future__ import annotations

import pytest

from p2sim.sim import SimulationContext, Simulator
from p2sim.sim.sim_settings import DEFAULT_SIM_SETTINGS, SimSettings
from p2sim.studies.requests import DEFAULT_SETTINGS
from p2sim.topology import load_system


def test_the_simulator_runs_with_the_settings_it_was_handed():
    ctx = SimulationContext(load_system("a100", 2))
    sim = Simulator(ctx.topo, SimSettings(algo="tree", proto="Simple", engine="analytic"), context=ctx)
    assert (sim.algo, sim.proto, sim.engine, sim.context) == ("tree", "Simple", "analytic", ctx)


def test_the_default_settings_are_nccls_choice_in_the_event_driven_model():
    sim = Simulator(load_system("a100", 2), SimSettings())
    assert (sim.algo, sim.proto, sim.engine) == ("auto", "auto", "des")


def test_the_simulator_takes_the_value_not_loose_strings():
    """issue 44 item 2: Simulator(topology, settings, context); its default is the one value every command's is."""
    topo = load_system("a100", 2)
    assert Simulator(topo).settings is DEFAULT_SIM_SETTINGS == DEFAULT_SETTINGS.sim
    with pytest.raises(TypeError, match=r"^Simulator: settings is a SimSettings .*not 'ring'$"):
        Simulator(topo, "ring")
