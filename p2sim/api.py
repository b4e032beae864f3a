"""p2sim's public Python API: one function per command, keyword arguments in, a typed result out.

Each function builds its request (every input checked once, with the messages the command
line prints: a bad value raises :class:`~p2sim.util.errors.InputError` naming the field),
runs it and returns a frozen result with ``to_json()`` -- the document ``--json`` prints.
Values may be given as the command line takes them (``axes="data=4,tensor=8"``,
``bytes="2GiB"``) or as Python values (``axes={"data": 4, "tensor": 8}``,
``reduce=["data"]``, ``bytes=2**31``, numpy's numbers and arrays too), named as the command line's options
with ``-`` as ``_`` (``plan(reduction=[...])``); a value of the wrong type is one InputError naming it, checked
here before the request is built.  A result's ``repr`` is one line and a notebook shows a table of its first
rows.  Nothing is printed: job sizes and warnings go to
the ``p2sim`` logger (silent unless configured; warnings are also in the results), and
progress bars show only when that logger listens at INFO.

Examples
--------
>>> import p2sim
>>> r = p2sim.rank(system="a100", axes={"data": 4, "tensor": 8}, reduce=["data"], workers=1)
>>> r.best.matrix, r.best.timing.text
(((1, 4), (2, 4)), 'AllReduce(slice=0, Inside)')
>>> s = p2sim.simulate(system="a100", axes="data=2,tensor=16", reduce="tensor", matrix="[[1 2] [2 8]]",
...                    program="AllReduce(slice=0, Inside)")
>>> round(s.rows[0][2].total_seconds, 3)
1.074
>>> p2sim.rank(system="a100", axes="3,4")
Traceback (most recent call last):
...
p2sim.util.errors.PlacementError: axes: the product of 3,4 is 12, but the hierarchy 2,16 has 32 devices
"""

from __future__ import annotations

import inspect
import numbers
import os
from collections.abc import Callable, Mapping
from typing import Any

from .measurements.calibration import CalibrateRequest, CalibrateResult, run_calibrate
from .measurements.check import CheckRequest, CheckResult, run_check
from .measurements.validation import ValidateRequest, ValidateResult, run_validate
from .studies.plan import PlanRequest, PlanResult, run_plan
from .studies.rank import RankRequest, RankResult, run_rank
from .studies.simulate import SimulateRequest, SimulateResult, run_simulate
from .studies.size_sweep import SweepRequest, SweepResult, run_sweep
from .studies.synth import PlacementsRequest, PlacementsResult, SynthRequest, SynthResult, run_placements, run_synth
from .studies.whatif import WhatifRequest, WhatifResult, run_whatif
from .studies.requests import topology_of
from .topology import Topology
from .util.errors import InputError

__all__ = ["rank", "plan", "whatif", "simulate", "sweep", "validate", "calibrate", "check", "synthesize", "placements",
           "emit", "load_system", "Topology", "RankResult", "PlanResult", "WhatifResult", "SimulateResult",
           "SweepResult", "ValidateResult", "CalibrateResult", "CheckResult", "SynthResult", "PlacementsResult"]


# parameters by what they take (the same name means the same thing in every function); any other takes a
# number, a text, a list or a mapping of them, as the command line's text would say it
_TEXT = frozenset({"algo", "proto", "model", "profile", "order", "collective", "scheduler", "program"})
_PATHS = frozenset({"measurements", "calibrate_on", "logs"})  # a file or directory, or a list of them
_PATH = frozenset({"scheduler_file"})
# the command line's spelling of a parameter named otherwise (docs/api.md: "the options, with - as _")
_CLI_NAMES = {"reductions": "reduction"}


def _plain(value: Any) -> Any:
    """``value`` with numpy's scalars and arrays as Python's numbers and lists (``np.int64(4)`` is 4), nested
    lists and mappings too; numpy is not imported: its types are known by their module."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value) if type(value) in (list, tuple) else [_plain(v) for v in value]
    return value


def _ours(value: Any) -> bool:
    """A value of p2sim's own types (a SystemSpec, a Reduction, a Profile): the request knows it."""
    return type(value).__module__.startswith("p2sim.")


def _is_value(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (str, numbers.Real)) or _ours(value):
        return True
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_value(v) for k, v in value.items())
    return isinstance(value, (list, tuple, set, frozenset, range)) and all(_is_value(v) for v in value)


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _checked(name: str, value: Any, default: Any) -> Any:
    """``value`` of parameter ``name`` in the form its request takes, or one InputError naming both."""
    field = _CLI_NAMES.get(name, name).replace("_", "-")  # as the command line's messages name it
    value = _plain(value)
    if value is None:
        if default is None:
            return None
        given = "it is required" if default is inspect.Parameter.empty else f"leave it out for {default!r}"
        raise InputError(f"{field}: None is not a value ({given})")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise InputError(f"{field}: {value!r} is not True or False")
        return value
    if name == "system":
        if not (_is_path(value) or _ours(value)):
            raise InputError(f"{field}: {value!r} is not a system name, a path to a .toml file or a SystemSpec")
        return os.fspath(value) if isinstance(value, os.PathLike) else value
    if name in _TEXT:
        if not (isinstance(value, str) or _ours(value)):
            raise InputError(f"{field}: {value!r} is not a text (the command line's --{field} value)")
        return value
    if name in _PATH or name in _PATHS:
        many = name in _PATHS and isinstance(value, (list, tuple))
        if not (all(_is_path(v) for v in value) if many else _is_path(value)):
            raise InputError(f"{field}: {value!r} is not a path{' or a list of paths' if name in _PATHS else ''}")
        return [os.fspath(v) for v in value] if many else os.fspath(value)
    if not _is_value(value):
        raise InputError(f"{field}: {value!r} is not a number, a text, or a list or mapping of them")
    return value


def _command(name: str, build: Callable[..., Any], run: Callable[[Any], Any], result: type, what: str
             ) -> Callable[..., Any]:
    """An API function: ``build`` the request from keyword arguments, ``run`` it; its signature is ``build``'s,
    with the command line's spellings; every value is checked here first, so that a wrong type is one
    InputError naming the parameter, never an AttributeError from deep inside."""
    params = list(inspect.signature(build).parameters.values())
    defaults = {p.name: p.default for p in params}
    spelled = {_CLI_NAMES.get(p.name, p.name): p.name for p in params}  # CLI spelling -> parameter
    spelled.update({p.name: p.name for p in params})  # the parameter's own name stays accepted

    def command(**options: Any) -> Any:
        given: dict[str, Any] = {}
        for key, value in options.items():
            if key not in spelled:
                raise InputError(f"{key.replace('_', '-')}: not an option of p2sim.{name} (its options: "
                                 f"{', '.join(_CLI_NAMES.get(p.name, p.name) for p in params)})")
            param = spelled[key]
            if param in given:
                raise InputError(f"{key.replace('_', '-')}: given twice (as {param} and as {key}); give one")
            given[param] = _checked(param, value, defaults[param])
        missing = [p.name for p in params if p.default is inspect.Parameter.empty and p.name not in given]
        if missing:
            raise InputError(f"{missing[0].replace('_', '-')}: required by p2sim.{name}")
        return run(build(**given))

    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(name=_CLI_NAMES.get(p.name, p.name), kind=inspect.Parameter.KEYWORD_ONLY) for p in params],
        return_annotation=result)
    command.__name__ = command.__qualname__ = name
    command.__doc__ = (f"{what}\n\nKeyword arguments as :meth:`{build.__qualname__}` takes them, spelled as the "
                       f"command line's options with ``-`` as ``_``; returns a :class:`{result.__name__}`.")
    return command


rank = _command("rank", RankRequest.build, run_rank, RankResult,
                "Rank every (matrix, program, algorithm) of a job, fastest first (``p2sim rank``).")
plan = _command("plan", PlanRequest.build, run_plan, PlanResult,
                "Rank placements by a whole training step's reductions (``p2sim plan``).")
whatif = _command("whatif", WhatifRequest.build, run_whatif, WhatifResult,
                  "The best placement and program at every point of varied systems (``p2sim whatif``).")
simulate = _command("simulate", SimulateRequest.build, run_simulate, SimulateResult,
                    "Simulate one program, or every program, of a job (``p2sim simulate``).")
sweep = _command("sweep", SweepRequest.build, run_sweep, SweepResult,
                 "One collective over a range of sizes, as nccl-tests runs it (``p2sim sweep``).")
validate = _command("validate", ValidateRequest.build, run_validate, ValidateResult,
                    "Score the model's predictions of measurements beside the baseline's (``p2sim validate``).")
calibrate = _command("calibrate", CalibrateRequest.build, run_calibrate, CalibrateResult,
                     "Fit one system's link classes and per-channel rates to measurements (``p2sim calibrate``).")
check = _command("check", CheckRequest.build, run_check, CheckResult,
                 "nccl-tests commands for a placement's steps, and verdicts on nccl-tests logs (``p2sim check``).")
synthesize = _command("synthesize", SynthRequest.build, run_synth, SynthResult,
                      "Every valid reduction program of every matrix (``p2sim synth``).")
placements = _command("placements", PlacementsRequest.build, run_placements, PlacementsResult,
                      "Every parallelism matrix of axes over a hierarchy (``p2sim placements``).")


def emit(result: RankResult | PlanResult | SweepResult, form: str = "jax") -> str:
    """What ``--emit form`` prints for a result: ``jax`` or ``torch`` code, ``json``, or ``nccl-tuner`` rules.

    A rank or plan result takes every form; a sweep result ``nccl-tuner`` only.
    """
    from .report.mesh import EMIT_FORMS, emit_mesh, plan_mesh_choice, rank_mesh_choice
    from .report.tuner import plan_tuner, rank_tuner, sweep_tuner

    if form not in EMIT_FORMS:
        raise InputError(f"emit: {form!r} is not one of {', '.join(EMIT_FORMS)}")
    if isinstance(result, SweepResult):
        if form != "nccl-tuner":
            raise InputError(f"emit: a sweep emits nccl-tuner rules only, not {form!r}")
        return sweep_tuner(result)
    if isinstance(result, RankResult):
        return rank_tuner(result) if form == "nccl-tuner" else emit_mesh(form, rank_mesh_choice(result, form))
    if isinstance(result, PlanResult):
        return plan_tuner(result) if form == "nccl-tuner" else emit_mesh(form, plan_mesh_choice(result, form))
    raise InputError(f"emit: a {type(result).__name__} has no emitted form (rank, plan or sweep results do)")


def load_system(system: Any, nodes: Any = None) -> Topology:
    """Build the topology of a system (name, path or :class:`~p2sim.topology.SystemSpec`) for a node count
    (default: the file's), with the API's checks of both values (``p2sim topo``)."""
    return topology_of(_checked("system", system, inspect.Parameter.empty), _checked("nodes", nodes, None))
