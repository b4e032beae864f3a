"""The Python API (p2sim/api.py): its boundary checks, the command line's spellings, and results' repr."""

from __future__ import annotations

import argparse
import inspect
import typing
from pathlib import Path

import numpy as np
import pytest

import p2sim
from p2sim import api
from p2sim import options as p2sim_options
from p2sim.studies.rank import RankRequest
from p2sim.studies.simulate import SimulateRequest
from p2sim.studies.size_sweep import SweepRequest
from p2sim.cli.parser import build_parser
from p2sim.util.errors import InputError
from p2sim.util.table import HEAD_ROWS, Result

DATA = Path(__file__).resolve().parents[1] / "validation" / "data" / "measurements_2node.csv"

# the API function of each command, and the command line's options that only say how to print or where to write
FUNCTIONS = {"rank": "rank", "plan": "plan", "whatif": "whatif", "simulate": "simulate", "sweep": "sweep",
             "validate": "validate", "calibrate": "calibrate", "check": "check", "synth": "synthesize",
             "placements": "placements"}
PRINTING = {"help", "json", "csv", "out", "emit", "force", "quiet", "verbose", "lower", "limit"}


@pytest.mark.parametrize(("function", "options", "says"), [
    ("rank", {"system": None}, "system: None is not a value (leave it out for 'a100')"),
    ("rank", {"system": 123}, "system: 123 is not a system name, a path to a .toml file or a SystemSpec"),
    ("rank", {"reduce": None}, "reduce: None is not a value (leave it out for '0')"),
    ("rank", {"yes": "no"}, "yes: 'no' is not True or False"),
    ("rank", {"axes": object()}, "axes: <object object"),
    ("simulate", {"algo": 5}, "algo: 5 is not a text"),
    ("sweep", {"collective": 3}, "collective: 3 is not a text"),
    ("check", {"logs": 5}, "logs: 5 is not a path or a list of paths"),
    ("validate", {"measurements": None}, "measurements: None is not a value (it is required)"),
    ("validate", {}, "measurements: required by p2sim.validate"),
    ("validate", {"measurements": str(DATA), "split": 3}, "split: '3' is not one of none, sizes"),
    ("validate", {"measurements": str(DATA), "split": "halves"}, "split: 'halves' is not one of none, sizes"),
    ("validate", {"measurements": str(DATA), "split": "sizes"}, "split: 'sizes' cross-validates single-collective"),
    ("calibrate", {"measurements": str(DATA), "system": ["a100"]}, "system: ['a100'] is not a system name"),
    ("plan", {"reduction": ["0:1GiB"], "reductions": ["0:1GiB"]}, "given twice"),
    ("rank", {"reduction": "0:1GiB"}, "reduction: not an option of p2sim.rank"),
    ("load_system", {"system": None}, "system: None is not a value (it is required)"),
])
def test_a_wrong_type_is_one_input_error(function, options, says):
    with pytest.raises(InputError) as e:
        getattr(p2sim, function)(**options)
    assert says in str(e.value)


def test_numpy_numbers_are_numbers():
    plain = p2sim.placements(hierarchy=[2, 4], axes={"a": 2, "b": 4})
    mixed = p2sim.placements(hierarchy=np.array([2, 4]), axes={"a": np.int64(2), "b": np.int32(4)})
    assert mixed.to_json() == plain.to_json()
    r = p2sim.rank(system="a100", axes={"data": np.int64(4), "tensor": np.int64(8)}, reduce=["data"],
                   top=np.int64(3), bytes=np.float64(2**30), engine="analytic", workers=1)
    assert r.to_json() == p2sim.rank(system="a100", axes={"data": 4, "tensor": 8}, reduce=["data"], top=3,
                                     bytes=2**30, engine="analytic", workers=1).to_json()
    s = p2sim.sweep(system="a100", minbytes=np.float32(1024), maxbytes=np.int64(4096), stepfactor=np.uint8(2),
                    engine="analytic")
    assert [p["size"] for p in s.table()] == [1024, 2048, 4096]
    c = p2sim.check(system="a100", axes=np.array([32]), matrix=np.array([[2, 16]]),
                    program="AllReduce(slice=0, Inside)", tolerance=np.float64(1.5))
    assert c.request.tolerance == 1.5 and c.matrix == ((2, 16),)


def test_the_command_line_spellings_are_accepted():
    step = ["data:1GiB", "tensor:64MiB x 4"]
    a = p2sim.plan(system="a100", axes={"data": 4, "tensor": 8}, reduction=step, engine="analytic", workers=1)
    b = p2sim.plan(system="a100", axes={"data": 4, "tensor": 8}, reductions=step, engine="analytic", workers=1)
    assert a.to_json() == b.to_json()
    assert "reduction" in inspect.signature(p2sim.plan).parameters
    sub = next(x for x in build_parser()._actions if isinstance(x, argparse._SubParsersAction))
    for command, function in FUNCTIONS.items():
        options = {a.dest for a in sub.choices[command]._actions} - PRINTING
        accepted = set(inspect.signature(getattr(api, function)).parameters)
        assert options <= accepted, f"p2sim.{function} lacks {sorted(options - accepted)} of p2sim {command}"


def test_results_have_a_short_repr_and_an_html_table():
    r = p2sim.rank(system="a100", axes={"data": 4, "tensor": 8}, reduce=["data"], engine="analytic", workers=1)
    text = repr(r)
    assert "\n" not in text and len(text) < 300
    assert text.startswith("<RankResult: rank on a100 (2 nodes, axes data=4,tensor=8): best [[1 4] [2 4]] "
                           "AllReduce(slice=0, Inside)")
    page = r._repr_html_()
    assert page.count("<tr>") == 1 + min(HEAD_ROWS, len(r.table())) and "<table>" in page and len(page) < 8000
    for result in (p2sim.placements(hierarchy="2,4", axes="2,4"),
                   p2sim.synthesize(hierarchy="2,4", axes="2,4", reduce="0"),
                   p2sim.sweep(system="a100", maxbytes="1MiB", engine="analytic"),
                   p2sim.simulate(system="a100", axes="32", matrix="[[2 16]]", program="AllReduce(slice=0, Inside)",
                                  engine="analytic"),
                   p2sim.check(system="a100", axes="32", matrix="[[2 16]]", program="AllReduce(slice=0, Inside)")):
        text = repr(result)
        assert "\n" not in text and len(text) < 300 and ("a100" in text or "hierarchy 2,4" in text), text
        assert "<table>" in result._repr_html_()
    # every result class says its own summary, and the dataclass repr of every field is gone
    for name in api.__all__:
        cls = getattr(api, name)
        if isinstance(cls, type) and name.endswith("Result"):
            assert issubclass(cls, Result) and cls.__repr__ is Result.__repr__ and "summary" in vars(cls), name


PUBLIC = [name for name in api.__all__ if callable(getattr(api, name)) and not isinstance(getattr(api, name), type)]


def _has_any(hint: object) -> bool:
    return hint is typing.Any or any(_has_any(a) for a in typing.get_args(hint))


@pytest.mark.parametrize("name", PUBLIC)
def test_public_functions_have_typed_signatures_and_numpydoc_sections(name):
    function = getattr(api, name)
    hints, doc = typing.get_type_hints(function), inspect.getdoc(function)
    for param in inspect.signature(function).parameters.values():
        assert param.kind is inspect.Parameter.KEYWORD_ONLY or name in ("emit", "load_system"), (name, param)
        assert param.name in hints, f"p2sim.{name}({param.name}) has no type"
        assert not _has_any(hints[param.name]), f"p2sim.{name}({param.name}: {hints[param.name]})"
        assert f"\n{param.name} : " in doc, f"p2sim.{name}'s docstring does not describe {param.name}"
    assert "return" in hints and not _has_any(hints["return"])
    for section in ("Returns\n-------", "Raises\n------", *(("Parameters\n----------",) if hints.keys() - {"return"} else ())):
        assert doc.count(section) == 1, f"p2sim.{name} has not one {section.split()[0]} section"


def test_parameters_are_the_command_options_and_defaults_the_tables():
    """Each API function takes exactly its command's options (but the printing ones) with the same defaults,
    which both read from p2sim.options; the requests' builders agree with it too."""
    sub = next(x for x in build_parser()._actions if isinstance(x, argparse._SubParsersAction))
    builders = {"rank": RankRequest.build, "simulate": SimulateRequest.build, "sweep": SweepRequest.build}
    for command, function in FUNCTIONS.items():
        # an option hidden from --help (none now) would share a shown option's destination
        actions = {a.dest: a for a in sub.choices[command]._actions
                   if a.dest not in PRINTING and a.help != argparse.SUPPRESS}
        # settings: the API's one value for algo, proto, engine, profile, max_size and order (no option of its own)
        params = {k: v for k, v in inspect.signature(getattr(api, function)).parameters.items() if k != "settings"}
        assert set(actions) == set(params), f"p2sim {command} and p2sim.{function} differ"
        for dest, action in actions.items():
            default = params[dest].default
            if default is inspect.Parameter.empty:
                assert action.required or action.nargs == "*", (command, dest)
            elif not isinstance(default, (bool, tuple)):  # flags, and repeatable options ([] in argparse)
                assert action.default == (None if default is None else str(default)), (command, dest)
                assert default is None or default == p2sim_options.DEFAULTS[dest], (command, dest)
        for name, param in inspect.signature(builders.get(command, lambda: None)).parameters.items():
            if name in p2sim_options.DEFAULTS and param.default is not inspect.Parameter.empty:
                assert param.default == p2sim_options.DEFAULTS[name], (command, name)


def test_settings_given_whole_answer_as_the_flat_options():
    """issue 44 item 2: the API takes the simulation settings as one value beside the flat options; the answer
    is the flat options' answer, and one given both ways is refused, naming it."""
    from p2sim.studies.requests import DEFAULT_SETTINGS, Settings

    job = dict(system="a100", axes="data=4,tensor=8", reduce="data", workers=1, top=3)
    whole = p2sim.rank(**job, settings=Settings.of(algo="ring", max_size=3))
    flat = p2sim.rank(**job, algo="ring", max_size=3)
    assert whole.to_json() == flat.to_json()
    assert p2sim.rank(**job, settings=DEFAULT_SETTINGS).to_json() == p2sim.rank(**job).to_json()
    with pytest.raises(InputError, match=r"^algo: given twice, as algo and in settings; give one$"):
        p2sim.rank(**job, settings=Settings(), algo="tree")
    with pytest.raises(InputError, match=r"^settings: 'ring' is not a Settings"):
        p2sim.simulate(system="a100", settings="ring")


def test_the_options_defaults_are_the_values_defaults():
    """Each default written once, beside its type: p2sim.options reads the settings' from DEFAULT_SETTINGS."""
    from p2sim.studies.requests import DEFAULT_SETTINGS, Settings

    assert DEFAULT_SETTINGS == Settings() == Settings.of()
    assert DEFAULT_SETTINGS.options() == {k: p2sim_options.DEFAULTS[k]
                                          for k in ("algo", "proto", "engine", "profile", "max_size", "order")}


def test_the_configuration_search_takes_a_settings_engine_and_refuses_what_it_would_ignore():
    """plan(model=..) without axes is the configuration search: settings=Settings(engine=..) is its engine, as the
    flat engine= is, and a forced algorithm, protocol or synthesis rule (which it would ignore) is refused."""
    kw = dict(model="llama3-8b", system="dgx-h100", nodes=1, train="seq=8192,global_batch=64")
    whole = p2sim.plan(**kw, settings=p2sim.Settings(engine="analytic"))
    flat = p2sim.plan(**kw, engine="analytic")
    assert [r.step.step_seconds for r in whole.ranked] == [r.step.step_seconds for r in flat.ranked]
    for bad, field in ((dict(algo="ring"), "algo"), (dict(proto="LL"), "proto"), (dict(settings="x"), "settings")):
        with pytest.raises(InputError, match=f"^{field}: "):
            p2sim.plan(**kw, **bad)
