"""p2sim's public Python API: one function per command, keyword arguments in, a typed result out.

Each function builds its request (every input checked once, with the messages the command
line prints: a bad value raises :class:`~p2sim.util.errors.InputError` naming the field),
runs it and returns a frozen result with ``to_json()`` -- the document ``--json`` prints.
Values may be given as the command line takes them (``axes="data=4,tensor=8"``,
``bytes="2GiB"``) or as Python values (``axes={"data": 4, "tensor": 8}``,
``reduce=["data"]``, ``bytes=2**31``).  Nothing is printed: job sizes and warnings go to
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
from collections.abc import Callable
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
from .topology import Topology, load_system
from .util.errors import InputError

__all__ = ["rank", "plan", "whatif", "simulate", "sweep", "validate", "calibrate", "check", "synthesize", "placements",
           "emit", "load_system", "Topology", "RankResult", "PlanResult", "WhatifResult", "SimulateResult",
           "SweepResult", "ValidateResult", "CalibrateResult", "CheckResult", "SynthResult", "PlacementsResult"]


def _command(name: str, build: Callable[..., Any], run: Callable[[Any], Any], result: type, what: str
             ) -> Callable[..., Any]:
    """An API function: ``build`` the request from keyword arguments, ``run`` it; its signature is ``build``'s."""
    def command(**options: Any) -> Any:
        return run(build(**options))

    params = list(inspect.signature(build).parameters.values())
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params], return_annotation=result)
    command.__name__ = command.__qualname__ = name
    command.__doc__ = (f"{what}\n\nKeyword arguments as :meth:`{build.__qualname__}` takes them (the command line's "
                       f"options, with ``-`` as ``_``); returns a :class:`{result.__name__}`.")
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
