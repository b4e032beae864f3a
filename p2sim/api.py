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
import os
from dataclasses import replace
from collections.abc import Mapping, Sequence

from . import options as o
from .boundary import boundary as _boundary
from .boundary import checked_value as _checked

from .measurements.calibration import CalibrateRequest, CalibrateResult, run_calibrate
from .measurements.check import CheckRequest, CheckResult, run_check
from .measurements.validation import ValidateRequest, ValidateResult, run_validate
from .studies.plan import PlanRequest, PlanResult, Reduction, run_plan
from .studies.step_plan import run_step_plan
from .studies.step_placements import placement_steps, step_timer
from .studies.step_time import StepResult, run_step
from .studies.step_workload import training_for
from .studies.config_search import DEFAULT_TOP, SearchResult, run_search
from .studies.jobsize import Limits
from .util.parsing import positive_int
from .studies.rank import RankRequest, RankResult, run_rank
from .studies.simulate import SimulateRequest, SimulateResult, run_simulate
from .studies.size_sweep import SweepRequest, SweepResult, run_sweep
from .studies.synth import PlacementsRequest, PlacementsResult, SynthRequest, SynthResult, run_placements, run_synth
from .studies.whatif import WhatifRequest, WhatifResult, run_whatif
from .studies.requests import DEFAULT_SETTINGS, Settings, topology_of
from .collectives.choice import check_algo
from .studies.topology_summary import TopologySummary, summarise
from .topology import Topology, find_spec, system_paths
from .topology.spec import SystemSpec
from .util.errors import InputError
from .workload import ModelSpec, TrainingSpec, axis_sizes, load_model, render_step, step_collectives

__all__ = ["Settings", "step", "rank", "plan", "whatif", "simulate", "sweep", "validate", "calibrate", "check", "synthesize", "placements",
           "emit", "load_system", "topo", "systems", "step_table", "Topology", "TopologySummary", "RankResult", "PlanResult", "WhatifResult", "SimulateResult",
           "SweepResult", "ValidateResult", "CalibrateResult", "CheckResult", "SynthResult", "PlacementsResult"]


# the types of values each function takes (Python's, or the command line's text)
Count = int | str  # a whole number, or its text ("4")
Number = float | str  # a number, or its text ("1.5")
Size = float | str  # bytes, or a size text ("2GiB", "8")
System = str | os.PathLike[str] | SystemSpec
Axes = str | Mapping[str, int] | Sequence[int]
Axis = int | str
AxisSet = str | int | Sequence[Axis]  # axes by index or name
MatrixLike = str | Sequence[Sequence[int]]
Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
File = str | os.PathLike[str]
ModelLike = str | os.PathLike[str] | ModelSpec  # a preset's name, a config.json or TOML file, or a ModelSpec
Training = str | Mapping[str, object] | TrainingSpec  # --train's KEY=VALUE text, a mapping of its keys, a TrainingSpec


def _settings(settings: Settings | None, algo: str, proto: str, engine: str, profile: str, max_size: Count,
              order: str) -> dict[str, object]:
    """The simulation settings as the requests take them: the flat options, or ``settings`` given whole (one
    form of one input, normalised here once); beside a Settings each flat option is left at its default."""
    flat = {"algo": algo, "proto": proto, "engine": engine, "profile": profile, "max_size": max_size, "order": order}
    if settings is None:
        return flat
    if not isinstance(settings, Settings):
        raise InputError(f"settings: {settings!r} is not a Settings (p2sim.Settings)")
    if settings.config is not None:
        raise InputError("settings: a Settings with its own rates (config) is calibration's; give the rates in the "
                         "system file ([model])")
    for name, value in flat.items():
        if str(value) != str(o.DEFAULTS[name]):
            raise InputError(f"{name.replace('_', '-')}: given twice, as {name} and in settings; give one")
    return settings.options()


@_boundary
def rank(*, system: System = o.SYSTEM, nodes: Count | None = None, axes: Axes | None = None,
         reduce: AxisSet = o.REDUCE, matrix: MatrixLike | None = None, bytes: Size | None = None,  # noqa: A002
         top: Count = o.TOP, algo: str = o.ALGO, proto: str = o.PROTO, engine: str = o.ENGINE, profile: str = o.PROFILE,
         max_size: Count = o.MAX_SIZE, order: str = o.ORDER, compare_orders: bool = False, exhaustive: bool = False,
         budget: Number | None = None, top_matrices: Count | None = None, workers: Count | None = None,
         scheduler: str | None = None, scheduler_file: File | None = None, max_matrices: Count | None = None,
         max_simulations: Count | None = None, yes: bool = False, model: ModelLike | None = None,
         train: Training | None = None, compute_per_layer: Number | None = None,
         settings: Settings | None = None) -> RankResult:
    """Rank every (matrix, program, algorithm) of a job's one reduction, fastest first (``p2sim rank``).  A model's
    whole step is :func:`plan`'s question: ``model`` is refused here, pointing to it.

    Returns
    -------
    RankResult
        The ranking, the search's statistics, the default placement and the gain over it; ``to_json()`` is
        what ``--json`` prints.

    """
    return run_rank(RankRequest.build(
        system=system, nodes=nodes, axes=axes, reduce=reduce, matrix=matrix, bytes=bytes, top=top,
        **_settings(settings, algo, proto, engine, profile, max_size, order), compare_orders=compare_orders,
        exhaustive=exhaustive, budget=budget, top_matrices=top_matrices, workers=workers, scheduler=scheduler,
        scheduler_file=scheduler_file, max_matrices=max_matrices, max_simulations=max_simulations, yes=yes,
        model=model, train=train, compute_per_layer=compute_per_layer))


@_boundary
def plan(*, system: System = o.SYSTEM, nodes: Count | None = None, axes: Axes | None = None,
         reduction: str | Reduction | Sequence[str | Reduction] = (), data_axis: Axis | None = None,
         algo: str = o.ALGO, proto: str = o.PROTO, engine: str = o.ENGINE, profile: str = o.PROFILE,
         max_size: Count = o.MAX_SIZE, order: str = o.ORDER, exhaustive: bool = False, budget: Number | None = None,
         top_matrices: Count | None = None, workers: Count | None = None, scheduler: str | None = None,
         scheduler_file: File | None = None, max_matrices: Count | None = None,
         max_simulations: Count | None = None, yes: bool = False, model: ModelLike | None = None,
         train: Training | None = None, compute_per_layer: Number | None = None, top: Count | None = None,
         compare: str | None = None, settings: Settings | None = None) -> PlanResult | SearchResult:
    """Rank placements by a whole training step's communication (``p2sim plan``): the reductions given, or
    with ``model`` every collective of the model's step; with ``model`` and no ``axes``, the configuration
    search (:mod:`p2sim.studies.config_search`): every configuration that divides and fits, ranked by step
    time, the ``top`` (default 5) returned, ``compare`` (``"tensor=8,pipeline=16,data=64,vp=8"``) beside them.

    Returns
    -------
    PlanResult | SearchResult
        Every matrix's plan, fastest first, beside the default placement's; or the search's top configurations.
    """
    chosen = _settings(settings, algo, proto, engine, profile, max_size, order)
    if model is not None and axes is None:
        # the configuration search; the placement options (--reduction, --data-axis, ..) are for given axes
        for name, value in (("reduction", reduction), ("data_axis", data_axis), ("compute_per_layer", compute_per_layer)):
            if value not in (None, (), []):
                raise InputError(f"{name.replace('_', '-')}: --{name.replace('_', '-')} is for a plan of given --axes; "
                                 "the configuration search (--model without --axes) times every collective itself")
        # the search takes NCCL's own choice of every collective under Megatron-LM's rank orders: a forced
        # algorithm or protocol, or the synthesis' rules, would be silently ignored
        given = Settings.of(**chosen).options()  # each value checked and normalised as a request's are
        given["algo"] = check_algo(str(given["algo"]))
        for name in ("algo", "proto", "profile", "max_size", "order"):
            if given[name] != DEFAULT_SETTINGS.options()[name]:
                raise InputError(f"{name.replace('_', '-')}: {chosen[name]!r} is for a plan of given --axes; the "
                                 "configuration search (--model without --axes) times NCCL's own choice of each "
                                 "collective")
        return run_search(model=model, system=system, nodes=None if nodes is None else positive_int(str(nodes), "nodes"),
                          train=None if train is None else str(train),
                          top=DEFAULT_TOP if top is None else positive_int(str(top), "top"), compare=compare,
                          engine=chosen["engine"], limits=Limits.of(yes=yes))
    if top is not None or compare is not None:
        raise InputError("top: --top and --compare are the configuration search's: give --model without --axes")
    if model is not None and reduction not in (None, (), []):
        # plan --model --axes ranks placements by the step's time (p2sim step's), which times the model's own
        # collectives: an added reduction would be in the communication column only, never in the ranking
        raise InputError("reduction: with --model the placements are ranked by the model's step as p2sim step "
                         "times it, which an added --reduction is not part of; leave it out (or plan the "
                         "reductions without --model)")
    req = PlanRequest.build(
        system=system, nodes=nodes, axes=axes, reductions=reduction, data_axis=data_axis,
        **chosen, exhaustive=exhaustive, budget=budget,
        top_matrices=top_matrices, workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
        max_matrices=max_matrices, max_simulations=max_simulations, yes=yes, model=model, train=train,
        compute_per_layer=compute_per_layer)
    if not req.demand.whole_step:  # the reductions given: their best programs on each placement
        return run_plan(req)
    result = run_step_plan(req, timer=step_timer(req))  # ranked and cut by the step's time (p2sim step's)
    return replace(result, step_times=placement_steps(result))


@_boundary
def step(*, model: ModelLike, system: System = o.SYSTEM, nodes: Count | None = None, gpus: Count | None = None,
         axes: str | Mapping[str, int] | None = None, train: str | None = None, engine: str = o.ENGINE) -> StepResult:
    """One training configuration's step (``p2sim step``): its time by part, tokens/s and model TFLOP/s per GPU,
    MFU and memory per GPU (:mod:`p2sim.studies.step_time`).

    ``axes``: the sizes of tensor, pipeline, context, expert and data (``"tensor=4,pipeline=8,data=2"``; their
    product the job's GPUs; data is Megatron-LM's data-parallel size over expert).  ``train``: ``--train``'s
    text, with ``dtype=fp8``, ``recompute=none|selective|full``, ``zero=0..3|fsdp`` and ``tp_overlap=on``.

    Returns
    -------
    StepResult
        ``to_json()`` is what ``--json`` prints: step_seconds, tokens_per_s_per_gpu, model_tflops_per_gpu, mfu,
        memory_gib_per_gpu, compute_seconds, bubble_seconds, exposed_comm_seconds (by axis).
    """
    sizes = axis_sizes(axes) if axes is not None else {"data": 0}
    return run_step(model=model, system=system, nodes=None if nodes is None else int(nodes),
                    gpus=None if gpus is None else int(gpus), axes=sizes if axes is not None else {},
                    train=train, engine=engine)


@_boundary
def whatif(*, system: System = o.SYSTEM, nodes: Count | None = None, axes: Axes | None = None,
           reduce: AxisSet = o.REDUCE, vary: str | Sequence[str] = (), bytes: Size | None = None,  # noqa: A002
           algo: str = o.ALGO, proto: str = o.PROTO, engine: str = o.ENGINE, profile: str = o.PROFILE,
           max_size: Count = o.MAX_SIZE, order: str = o.ORDER, exhaustive: bool = False, workers: Count | None = None,
           scheduler: str | None = None, scheduler_file: File | None = None, max_matrices: Count | None = None,
           max_simulations: Count | None = None, yes: bool = False, matrix: MatrixLike | None = None,
           program: str = o.PROGRAM, model: ModelLike | None = None, train: Training | None = None,
           compute_per_layer: Number | None = None, settings: Settings | None = None) -> WhatifResult:
    """The best placement and program at every point of varied systems (``p2sim whatif``); with ``matrix``
    (and ``program``) that placement's best program (that program); with ``model`` its whole step's.

    Returns
    -------
    WhatifResult
        One row per point, marking where the winner changes.

    """
    return run_whatif(WhatifRequest.build(
        system=system, nodes=nodes, axes=axes, reduce=reduce, vary=vary, bytes=bytes,
        **_settings(settings, algo, proto, engine, profile, max_size, order), exhaustive=exhaustive, workers=workers,
        scheduler=scheduler, scheduler_file=scheduler_file, max_matrices=max_matrices,
        max_simulations=max_simulations, yes=yes, matrix=matrix, program=program, model=model, train=train,
        compute_per_layer=compute_per_layer))


@_boundary
def simulate(*, system: System = o.SYSTEM, nodes: Count | None = None, axes: Axes | None = None,
             reduce: AxisSet = o.REDUCE, matrix: MatrixLike | None = None, program: str = o.PROGRAM,
             algo: str = o.ALGO, proto: str = o.PROTO, bytes: Size | None = None, engine: str = o.ENGINE,  # noqa: A002
             profile: str = o.PROFILE, max_size: Count = o.MAX_SIZE, order: str = o.ORDER, trace: bool = False,
             max_matrices: Count | None = None, max_simulations: Count | None = None, yes: bool = False,
             settings: Settings | None = None) -> SimulateResult:
    """Simulate one program, or every program, of a job (``p2sim simulate``).

    Returns
    -------
    SimulateResult
        Every simulated (matrix, program, result).

    """
    return run_simulate(SimulateRequest.build(
        system=system, nodes=nodes, axes=axes, reduce=reduce, matrix=matrix, program=program, bytes=bytes,
        **_settings(settings, algo, proto, engine, profile, max_size, order), trace=trace, max_matrices=max_matrices,
        max_simulations=max_simulations, yes=yes))


@_boundary
def sweep(*, system: System = o.SYSTEM, nodes: Count | None = None, gpus_per_node: Count | None = None,
          collective: str = o.COLLECTIVE, minbytes: Size = o.MINBYTES, maxbytes: Size = o.MAXBYTES,
          stepfactor: Count = o.STEPFACTOR, algo: str = o.ALGO, proto: str = o.PROTO, engine: str = o.ENGINE,
          yes: bool = False) -> SweepResult:
    """One collective over a range of sizes, as nccl-tests runs it (``p2sim sweep``).

    Returns
    -------
    SweepResult
        One row per size, with the algorithm and protocol NCCL would pick.

    """
    return run_sweep(SweepRequest.build(
        system=system, nodes=nodes, gpus_per_node=gpus_per_node, collective=collective, minbytes=minbytes,
        maxbytes=maxbytes, stepfactor=stepfactor, algo=algo, proto=proto, engine=engine, yes=yes))


@_boundary
def validate(*, measurements: Paths, calibrate_on: Paths | None = None, system: str | None = None,
             folds: Count | None = o.FOLDS, split: str = o.SPLIT, engine: str = o.ENGINE, allow_emulated: bool = False,
             workers: Count | None = None, scheduler: str | None = None, scheduler_file: File | None = None,
             max_matrices: Count | None = None, max_simulations: Count | None = None, yes: bool = False
             ) -> ValidateResult:
    """Score the model's predictions of measurements beside the baseline's (``p2sim validate``).

    Returns
    -------
    ValidateResult
        The scores, per program and per collective.

    """
    return run_validate(ValidateRequest.build(
        measurements=measurements, calibrate_on=calibrate_on, system=system, folds=folds, split=split, engine=engine,
        allow_emulated=allow_emulated, workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
        max_matrices=max_matrices, max_simulations=max_simulations, yes=yes))


@_boundary
def calibrate(*, measurements: Paths, system: System, engine: str = o.ENGINE, allow_emulated: bool = False,
              workers: Count | None = None, scheduler: str | None = None, scheduler_file: File | None = None
              ) -> CalibrateResult:
    """Fit one system's link classes and per-channel rates to measurements (``p2sim calibrate``).

    Returns
    -------
    CalibrateResult
        The fit; ``toml`` is the calibrated system file.

    """
    return run_calibrate(CalibrateRequest.build(
        measurements=measurements, system=system, engine=engine, allow_emulated=allow_emulated, workers=workers,
        scheduler=scheduler, scheduler_file=scheduler_file))


@_boundary
def check(*, system: System = o.SYSTEM, nodes: Count | None = None, axes: Axes | None = None,
          reduce: AxisSet = o.REDUCE, matrix: MatrixLike | None = None, program: str | None = None,
          bytes: Size | None = None, algo: str = o.ALGO, proto: str = o.PROTO, workers: Count | None = None,  # noqa: A002
          logs: Paths = (), tolerance: Number = o.TOLERANCE, model: ModelLike | None = None,
          train: Training | None = None, compute_per_layer: Number | None = None) -> CheckResult:
    """nccl-tests commands for a placement's steps (``model``: its step's collectives), and verdicts on nccl-tests
    logs (``p2sim check``).

    Returns
    -------
    CheckResult
        Each step's command and prediction, and a verdict per log row.

    """
    return run_check(CheckRequest.build(
        system=system, nodes=nodes, axes=axes, reduce=reduce, matrix=matrix, program=program, bytes=bytes, algo=algo,
        proto=proto, workers=workers, logs=logs, tolerance=tolerance, model=model, train=train,
        compute_per_layer=compute_per_layer))


@_boundary
def synthesize(*, hierarchy: str | Sequence[int] | None = None, system: System | None = None,
               nodes: Count | None = None, axes: Axes | None = None, reduce: AxisSet = o.REDUCE,
               matrix: MatrixLike | None = None, profile: str = o.PROFILE, max_size: Count = o.MAX_SIZE,
               order: str = o.ORDER, max_matrices: Count | None = None, yes: bool = False) -> SynthResult:
    """Every valid reduction program of every matrix (``p2sim synth``).

    Returns
    -------
    SynthResult
        The programs of each matrix, shortest first.

    """
    return run_synth(SynthRequest.build(
        hierarchy=hierarchy, system=system, nodes=nodes, axes=axes, reduce=reduce, matrix=matrix, profile=profile,
        max_size=max_size, order=order, max_matrices=max_matrices, yes=yes))


@_boundary
def placements(*, hierarchy: str | Sequence[int] | None = None, system: System | None = None,
               nodes: Count | None = None, axes: Axes | None = None, max_matrices: Count | None = None,
               yes: bool = False) -> PlacementsResult:
    """Every parallelism matrix of axes over a hierarchy (``p2sim placements``).

    Returns
    -------
    PlacementsResult
        The matrices.


    Examples
    --------
    >>> placements(hierarchy="2,4", axes={"data": 2, "tensor": 4}).matrices
    (((1, 2), (2, 2)), ((2, 1), (1, 4)))
    """
    return run_placements(PlacementsRequest.build(hierarchy=hierarchy, system=system, nodes=nodes, axes=axes,
                                                  max_matrices=max_matrices, yes=yes))


def emit(result: RankResult | PlanResult | SweepResult, form: str = "jax") -> str:
    """What ``--emit form`` prints for a result: ``jax`` or ``torch`` code, ``json``, a ``megatron`` launch
    script, or ``nccl-tuner`` rules.

    Parameters
    ----------
    result : RankResult | PlanResult | SweepResult
        A rank or plan result takes every form; a sweep result ``nccl-tuner`` only.
    form : str, default 'jax'
        jax, torch, json, megatron or nccl-tuner.

    Returns
    -------
    str
        The text ``--emit`` prints: the best placement's mesh and program as code or JSON, Megatron-LM's
        arguments and launch for it, or tuner rules.

    Raises
    ------
    InputError
        A form the result has not; for ``megatron``, an axis that is no Megatron-LM dimension (named).
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


def load_system(system: System, nodes: Count | None = None) -> Topology:
    """Build the topology of a system for a node count, with the API's checks of both values (``p2sim topo``).

    Parameters
    ----------
    system : str | os.PathLike[str] | SystemSpec
        A system name (``p2sim systems``), a path to a .toml file, or a SystemSpec.
    nodes : int | str | None
        Node count (default: the system file's).

    Returns
    -------
    Topology
        The system's graph of devices and links.

    Raises
    ------
    InputError
        A bad value (TopologyError: a system file that does not hold), naming it.
    """
    return topology_of(_checked("system", system, inspect.Parameter.empty), _checked("nodes", nodes, None))


@_boundary
def topo(*, system: System, nodes: Count | None = None) -> TopologySummary:
    """What ``p2sim topo`` answers of a system: its components, link classes, fabric, bisection bandwidths,
    stated assumptions and what NCCL would build on it (:mod:`p2sim.studies.topology_summary`).

    Returns
    -------
    TopologySummary
        The summary; ``p2sim topo`` words it, ``--json`` prints it as a document.

    """
    return summarise(load_system(system, nodes))


def systems() -> list[dict[str, object]]:
    """The systems p2sim knows (``topologies/`` and ``$P2SIM_TOPOLOGIES``), as ``p2sim systems --json`` lists them.

    Returns
    -------
    list of dict
        Per system: ``name``, ``file``, ``levels`` (in words), ``default_nodes``, ``classes`` (its link classes)
        and ``description``.

    Raises
    ------
    TopologyError
        A system file that does not hold, naming it.
    """
    rows: list[dict[str, object]] = []
    for name, path in system_paths().items():
        spec = find_spec(str(path))
        levels = ", ".join(f"{lv.name} {lv.cardinality or 'N'}" for lv in spec.levels)
        rows.append({"name": name, "file": str(path), "levels": levels, "default_nodes": spec.default_nodes,
                     "classes": sorted(spec.classes), "description": spec.description})
    return rows


def step_table(*, model: str | os.PathLike[str] | ModelSpec, axes: str | Mapping[str, int],
               training: TrainingSpec | str | Mapping[str, object] | None = None) -> str:
    """Every collective of one training step, per rank, as a table (:mod:`p2sim.workload`).

    Parameters
    ----------
    model : str | os.PathLike[str] | ModelSpec
        A preset's name (``llama3-8b`` ...), a Hugging Face ``config.json`` or a TOML of ModelSpec's fields.
    axes : str | Mapping[str, int]
        The sizes of tensor, context, pipeline, data and expert: ``"data=8,tensor=8"`` or a mapping.
    training : TrainingSpec | str | Mapping[str, object] | None
        Sequence, batches, dtypes and how each axis is used, in the forms ``plan``'s ``train`` takes: a
        TrainingSpec, ``--train``'s text (``"seq=8192,global_batch=64"``) or a mapping of its keys; a preset's
        published sequence length and global batch where these do not give them (as ``plan``), then
        ``TrainingSpec()``'s defaults (None: all of them).

    Returns
    -------
    str
        A line per kind of call (axis, op, phase, size, count, bytes per step, formula), then bytes by axis.

    Raises
    ------
    InputError
        A model that cannot be read, or an axis or setting that does not fit it: one line naming it.
    """
    return render_step(step_collectives(load_model(model), training_for(model, training)[0], axis_sizes(axes)))
