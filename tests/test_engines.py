"""p2sim.sim.engines: the simulation engines a run chooses among, and the check of a given name."""

from __future__ import annotations

import pytest

from p2sim.sim import SimSettings, Simulator
from p2sim.sim.engines import ENGINES, check_engine
from p2sim.topology import load_system
from p2sim.util.errors import InputError


def test_each_engine_is_accepted_and_named_as_given():
    assert ENGINES == ("des", "analytic", "baseline")
    assert [check_engine(e) for e in ENGINES] == list(ENGINES)


@pytest.mark.parametrize("bad", ["fluid", "DES", "", "model"])
def test_another_name_is_one_input_error_naming_the_engine_field(bad):
    with pytest.raises(InputError, match=f"^engine: {bad!r} is not one of des, analytic, baseline$"):
        check_engine(bad)


def test_the_simulator_checks_its_engine():
    with pytest.raises(InputError, match="^engine: 'fluid'"):
        Simulator(load_system("a100", 2), SimSettings(engine="fluid"))
