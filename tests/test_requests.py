"""p2sim.studies.requests: the settings value every study's simulations share, checked once and passed whole."""

from __future__ import annotations

import dataclasses

import pytest

from p2sim.formalism.hierarchy import Order
from p2sim.formalism.synthesis import DEFAULT_MAX_SIZE, Profile
from p2sim.studies import rank as rank_module
from p2sim.studies.plan import PlanRequest
from p2sim.studies.rank import RankRequest, run_rank
from p2sim.studies.requests import Rules, Settings
from p2sim.studies.simulate import SimulateRequest
from p2sim.studies.config_task import ConfigTask
from p2sim.studies.whatif import WhatifRequest
from p2sim.util.errors import InputError

LOOSE = {"algo", "proto", "engine", "rules", "order", "profile", "max_size"}


@pytest.mark.parametrize("kwargs,message", [
    ({"algo": "rings"}, "algo: 'rings'"), ({"proto": "LL64"}, "proto: 'LL64'"), ({"engine": "fluid"}, "engine: 'fluid'"),
    ({"profile": "short"}, "profile: 'short'"), ({"max_size": "0"}, "max-size"), ({"order": "zigzag"}, "order: 'zigzag'"),
])
def test_settings_refuse_a_bad_value_with_its_field(kwargs, message):
    with pytest.raises(InputError, match=message):
        Settings.of(**kwargs)


def test_settings_are_typed_once_built():
    s = Settings.of(algo="both", proto="ll128", profile="FULL", max_size="4", order="P2")
    assert (s.proto, s.rules, s.order) == ("LL128", Rules(Profile.FULL, 4), Order.P2)
    assert [t.algo for t in s.each()] == ["ring", "tree"]
    assert Settings() == Settings.of() and Settings().rules.max_size == DEFAULT_MAX_SIZE
    assert (s.sim.algo, s.sim.proto, s.sim.engine) == ("both", "LL128", "des")


@pytest.mark.parametrize("request_type", [RankRequest, PlanRequest, WhatifRequest, SimulateRequest])
def test_a_request_holds_one_settings_value_not_loose_fields(request_type):
    names = {f.name for f in dataclasses.fields(request_type)}
    assert "settings" in names and not names & LOOSE


def test_the_request_settings_are_what_was_asked():
    req = RankRequest.build(system="a100", axes="data=4,tensor=8", reduce="data", algo="ring", max_size=4, order="p2")
    assert req.settings == Settings("ring", "auto", "des", Rules(Profile.PAPER, 4), Order.P2)


def test_a_sweep_task_is_built_by_keyword():
    s = RankRequest.build(system="a100").job.spec
    with pytest.raises(TypeError):
        ConfigTask(s, 2, (32,), (0,), 2.0**30)  # type: ignore[misc]  # positional arguments are refused
    assert ConfigTask(spec=s, nodes=2, axes=(32,), reduce_axes=(0,), bytes_per_gpu=2.0**30).settings == Settings()


def test_rank_hands_its_tasks_the_typed_settings(monkeypatch):
    """The tasks carry the Profile and Order values themselves (not their text, parsed again below)."""
    seen = []

    def capture(tasks, *args, **kwargs):
        seen.extend(tasks)
        raise RuntimeError("stop")

    monkeypatch.setattr(rank_module, "run_search", capture)
    req = RankRequest.build(system="a100", axes="data=4,tensor=8", reduce="data", algo="both", order="p2",
                            workers=1)
    with pytest.raises(RuntimeError, match="stop"):
        run_rank(req)
    assert {t.settings.algo for t in seen} == {"ring", "tree"}
    assert all(t.settings.order is Order.P2 and t.settings.rules.profile is Profile.PAPER for t in seen)


def test_a_bounded_search_is_limited_by_its_cost_not_its_program_count():
    """A bounded search simulates only what can still win: 60,000 programs pass the default limits (the
    estimated cost decides), unless --max-simulations is given; an exhaustive or analytic job is still
    refused by its count."""
    from p2sim.studies.jobsize import Limits
    from p2sim.studies.requests import SearchOptions, job_size_text
    from p2sim.util.errors import InputError

    assert "up to 60000 simulations" in job_size_text(Limits.of(), SearchOptions(), "des", 60_000, "x")
    with pytest.raises(InputError, match="limit of 50000"):
        job_size_text(Limits.of(), SearchOptions(exhaustive=True), "des", 60_000, "x")
    with pytest.raises(InputError, match="limit of 50000"):
        job_size_text(Limits.of(), SearchOptions(), "analytic", 60_000, "x")
    with pytest.raises(InputError, match="limit of 70000"):
        job_size_text(Limits.of(max_simulations=70_000), SearchOptions(), "des", 80_000, "x")


def test_every_program_is_one_default():
    import inspect

    from p2sim import options
    from p2sim.studies.requests import EVERY_PROGRAM
    assert options.PROGRAM is EVERY_PROGRAM
    for build in (WhatifRequest.build, SimulateRequest.build):
        assert inspect.signature(build).parameters["program"].default is EVERY_PROGRAM
