"""A training model's step as a plan's inputs: its AllReduces as reductions, its other collectives as parts.

``plan --model`` (and ``rank``, ``whatif``, ``check`` with a model) derives every collective of one step
(:func:`p2sim.workload.step_collectives`) from the model, the training settings and the job's axes.
The job's axes are named as frameworks name them: the workload's ``tensor``, ``context``, ``pipeline``,
``data`` and ``expert``, or Megatron-LM's short names (``tp``, ``cp``, ``pp``, ``dp``, ``ep``, as
:mod:`p2sim.formalism.mesh` reads them); a workload axis with no job axis has size 1, and a job axis of
another name is refused.  Equal collectives are grouped so that each is simulated once per matrix:

* **reductions**: the AllReduces over whole axes (the data-parallel gradients, tensor parallelism's
  AllReduces), as :class:`~p2sim.studies.plan.Reduction` values ``(axes, bytes, count)``: plan
  synthesizes and searches their programs as it does for ``--reduction``;
* **parts**: everything else, each simulated as ONE lowered step of its collective over all the groups
  of its axes at once (they contend), with NCCL's choice, times its count: AllGather / ReduceScatter
  (sequence parallelism, ZeRO), AllToAll (expert), SendRecv around the context ring, the pipeline's
  boundary exchanges (:data:`PAIRS`) and the tied embeddings' AllReduce of the first and last stage
  (:data:`ENDS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Megatron-LM's dimension names as the default placement reads them (one table for both)
from ..formalism.mesh import _MEGATRON_NAMES as MEGATRON_AXIS_NAMES
from ..util.errors import InputError
from ..workload import ModelSpec, StepCollective, TrainingSpec, load_model, step_collectives
from ..workload.model_files import preset_training
from ..workload.train_text import StepSettings, given_fields, split_step_settings, training_of
from ..workload.training import fit
from ..util.parsing import default_axis_names, positive_float
from ..util.units import format_seconds

__all__ = ["GROUPS", "PAIRS", "ENDS", "StepPart", "StepWorkload", "PartTiming", "Overlap", "workload_axes", "training_for", "step_workload",
           "axes_label", "tier_of", "overlap_text", "axis_rows",
           "BACKWARD_SHARE"]

GROUPS = "groups"  # every group of the part's axes
# the pipeline's boundary pairs (stage i, stage i+1), not wrapping: a SendRecv of two ranks goes both ways
# (p2sim.collectives.p2p), one micro-batch's activations forward and another's gradients back, as 1F1B's
# steady state exchanges them (Megatron-LM's send_forward_recv_backward / send_backward_recv_forward)
PAIRS = "pairs"
ENDS = "ends"  # the first and the last stage of each pipeline group (the tied embeddings' AllReduce)

# the backward pass of a layer is two thirds of its forward and backward compute: twice the forward's
# matrix multiplications (Narayanan et al. 2021, Efficient Large-Scale Training, section 5.1, the 3x
# of forward + backward; Kaplan et al. 2020, section 2.1)
BACKWARD_SHARE = 2 / 3

# a layer's compute time at most 10^6 s, the bound of a measured time (docs/reliability.md); a larger one would
# be a typo (or a number in other units) ranked as an answer
MAX_LAYER_SECONDS = 1e6

_WORKLOAD_AXIS = {"tp": "tensor", "cp": "context", "ep": "expert", "dp": "data", "pp": "pipeline"}


def workload_axes(names: Sequence[str]) -> dict[str, int]:
    """Each workload axis's job axis index, from the job's axis names (Megatron-LM's aliases read).

    Examples
    --------
    >>> workload_axes(("dp", "pipeline", "tp"))
    {'data': 0, 'pipeline': 1, 'tensor': 2}
    """
    out: dict[str, int] = {}
    for i, name in enumerate(names):
        meg = next((m for m, spelled in MEGATRON_AXIS_NAMES.items() if name.lower() in spelled), None)
        if meg is None:
            raise InputError(f"axes: {name!r} is not an axis a training step uses with --model (name each axis "
                             "tensor, context, pipeline, data or expert, or tp, cp, pp, dp, ep)")
        axis = _WORKLOAD_AXIS[meg]
        if axis in out:
            raise InputError(f"axes: {names[out[axis]]} and {name} are both the {axis} axis")
        out[axis] = i
    return out


@dataclass(frozen=True)
class StepPart:
    """Equal non-AllReduce collectives of a step (or a pair's or the ends' AllReduce), simulated once per matrix.

    ``size`` is per rank as nccl-tests counts it for ``op``; ``count`` the calls per step; ``pattern``
    which groups of ``axes`` take part (:data:`GROUPS`, :data:`PAIRS`, :data:`ENDS`).
    """

    axes: tuple[int, ...]  # job axis indices
    op: str
    size: int
    count: int
    pattern: str
    phases: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"axes": list(self.axes), "op": self.op, "bytes": self.size, "count": self.count,
                "pattern": self.pattern, "phases": list(self.phases)}


@dataclass(frozen=True)
class StepWorkload:
    """A model's step on a job's axes: what plan searches (``reductions``) and what it adds (``parts``)."""

    model: ModelSpec
    training: TrainingSpec
    collectives: tuple[StepCollective, ...]
    reductions: tuple[tuple[tuple[int, ...], int, int], ...]  # (job axes, bytes, count) of the AllReduces
    parts: tuple[StepPart, ...]
    overlapped: frozenset[tuple[str, tuple[int, ...], int]]  # (op, axes, bytes) of the data gradient reduction
    layers_per_stage: int
    compute_per_layer: float | None = None  # seconds of one layer's forward and backward, one micro-batch
    assumed: str = ""  # the preset's published settings --train did not give, with their source ("": none)
    extra: StepSettings = StepSettings()  # --train's dtype=fp8, recompute=, tp_overlap= (p2sim step's own settings)

    @property
    def backward_seconds(self) -> float | None:
        """The last micro-batch's backward compute on one stage, which DDP's gradient buckets overlap with
        the data reduction (Li et al. 2020, PyTorch Distributed, section 3.2.3): ``L/p x 2/3 x compute per
        layer``; None without a compute time (no overlap)."""
        if self.compute_per_layer is None:
            return None
        return self.layers_per_stage * BACKWARD_SHARE * self.compute_per_layer

    def to_json(self) -> dict[str, Any]:
        training = _training_json(self.training)
        if self.extra != StepSettings():  # p2sim step's own settings, where --train gave them
            training.update(fp8=self.extra.fp8, recompute=self.extra.recompute, tp_overlap=self.extra.tp_overlap,
                            dispatcher=self.extra.dispatcher, offload=self.extra.offload)
        return {"model": self.model.name, "training": training,
                "collectives": [c.to_json() for c in self.collectives],
                "compute_per_layer_seconds": self.compute_per_layer, "assumed": self.assumed}


def _training_json(t: TrainingSpec) -> dict[str, Any]:
    return {"seq_length": t.seq_length, "micro_batch": t.micro_batch, "global_batch": t.global_batch,
            "param_dtype": t.param_dtype, "grad_dtype": t.grad_dtype, "sequence_parallel": t.sequence_parallel,
            "virtual_stages": t.virtual_stages, "schedule": t.schedule, "data_parallel": t.data_parallel}


def _is_data_reduction(c: StepCollective) -> bool:
    """The gradient reduction after the last backward (DDP's AllReduce, ZeRO-1/2's ReduceScatter)."""
    return (c.op in ("AllReduce", "ReduceScatter") and c.count == 1 and c.phase == "backward"
            and set(c.axes) <= {"data", "context", "expert"})


def training_for(model: Any, train: Any) -> tuple[TrainingSpec, dict[str, int]]:
    """The training settings of ``model``'s step as ``plan --model`` takes them: ``train`` as ``--train``'s text,
    a mapping of its keys or a TrainingSpec (None: the defaults), a preset's published sequence length and global
    batch where ``train`` does not give them (SOURCES.md); and those published values used.

    Examples
    --------
    >>> t, used = training_for("llama3-405b", "global_batch=64")
    >>> t.seq_length, t.global_batch, used
    (8192, 64, {'seq_length': 8192})
    """
    published = preset_training(model)
    defaults = {} if published is None else {k: v for k, v in published.settings().items()
                                             if k not in given_fields(train)}
    return training_of(train, defaults), defaults


def _source(model: Any) -> str:
    """Where a preset's published training settings are read from ("" for a file or a ModelSpec)."""
    published = preset_training(model)
    return "" if published is None else published.source


def step_workload(model: Any, train: Any, names: Sequence[str], sizes: Sequence[int],
                  compute_per_layer: Any = None) -> StepWorkload:
    """The step of ``model`` trained as ``train`` says on the job's axes (``names``, ``sizes``), grouped.

    Raises
    ------
    InputError
        An axis a step does not use, a model that cannot be read, settings that do not fit, or a compute
        time that is not a positive number.
    """
    spec = load_model(model)
    if tuple(names) == default_axis_names(len(names)):
        raise InputError(_unnamed_axes(sizes))
    # the step's own settings (FP8 GEMMs, recompute, tensor-parallel overlap) change no collective: they time the
    # step (step_placements) and go on to --emit megatron
    train, extra = split_step_settings(train)
    extra = extra.for_model(spec.name, spec.is_moe)
    training, defaults = training_for(model, train)
    index = workload_axes(names)
    axis_sizes = {a: int(sizes[i]) for a, i in index.items()}
    extra = extra.for_axes(axis_sizes.get("tensor", 1), training.sequence_parallel)
    extra = extra.for_offload(axis_sizes.get("pipeline", 1), spec.num_layers)
    if extra.offload == "auto":  # the placements' answer names its layers (and --emit megatron passes them on)
        raise InputError("train: offload: auto is p2sim step's (it finds the fewest layers that fit); here give the "
                         "number of layers, as Megatron-LM's --cpu-offloading-num-layers takes it")
    try:
        collectives = step_collectives(spec, training, axis_sizes)
    except InputError as e:  # the fit's rules name the settings as --train does
        text = str(e)
        if text.startswith("training: "):
            text = f"train: {text.removeprefix('training: ')}"
            if any(text.startswith(f"train: {k}:") for k in defaults):
                text += f" ({spec.name}'s published value, not given in --train: give it there)"
        raise InputError(text) from None
    compute = None
    if compute_per_layer is not None:
        compute = (float(compute_per_layer) if isinstance(compute_per_layer, (int, float))
                   and not isinstance(compute_per_layer, bool) and compute_per_layer > 0
                   else positive_float(str(compute_per_layer), "compute-per-layer"))
        if compute > MAX_LAYER_SECONDS:
            raise InputError(f"compute-per-layer: {compute:g} s is more than 10^6 s (the longest time a measurement "
                             "may be): one layer's compute for a micro-batch takes milliseconds")
    reductions: dict[tuple[tuple[int, ...], int], int] = {}
    parts: dict[tuple[tuple[int, ...], str, int, str], tuple[int, tuple[str, ...]]] = {}
    overlapped = set()
    pipeline_sends: dict[tuple[int, ...], dict[str, int]] = {}
    for c in collectives:
        axes = tuple(sorted(index[a] for a in c.axes))
        if _is_data_reduction(c):
            overlapped.add((c.op, axes, c.size))
        if c.op == "AllReduce" and c.axes == ("pipeline",) and c.phase == "optimizer":
            key = (axes, c.op, c.size, ENDS)  # the tied embeddings: first and last stage only
        elif c.op == "AllReduce":
            reductions[(axes, c.size)] = reductions.get((axes, c.size), 0) + c.count
            continue
        elif c.op == "SendRecv" and c.axes == ("pipeline",):
            # forward and backward of one size pair up into boundary exchanges (PAIRS): m x v of them
            pipeline_sends.setdefault((axes, c.size), {})[c.phase] = c.count
            continue
        else:
            key = (axes, c.op, c.size, GROUPS)
        count, phases = parts.get(key, (0, ()))
        parts[key] = (count + c.count, phases + ((c.phase,) if c.phase not in phases else ()))
    for (axes, size), by_phase in pipeline_sends.items():
        parts[(axes, "SendRecv", size, PAIRS)] = (max(by_phase.values()), tuple(by_phase))
    return StepWorkload(spec, training, collectives, tuple((a, b, n) for (a, b), n in reductions.items()),
                        tuple(StepPart(a, op, size, n, pattern, ph) for (a, op, size, pattern), (n, ph) in parts.items()),
                        frozenset(overlapped), fit(spec, training, axis_sizes).layers_per_stage, compute,
                        _assumed(spec.name, defaults, _source(model)), extra)


def _unnamed_axes(sizes: Sequence[int]) -> str:
    """What to say when the job's axes have no names (no ``--axes``, or sizes only): a step's collectives differ
    by axis, so each must be named; an example of the form over the job's GPUs."""
    gpus = 1
    for n in sizes:
        gpus *= int(n)
    example = f"data={gpus // 8},tensor=8" if gpus % 8 == 0 and gpus > 8 else f"data={gpus}"
    given = "no --axes was given (one axis over every GPU)" if len(sizes) == 1 else "--axes gave sizes only"
    return (f"axes: --model needs the job's axes named, and {given}: a step's collectives differ by axis; give "
            f"--axes NAME=SIZE,.. with names tensor, context, pipeline, data, expert (or tp, cp, pp, dp, ep) and "
            f"sizes whose product is the {gpus} GPUs, e.g. --axes {example}")


def _assumed(name: str, defaults: dict[str, int], source: str) -> str:
    """``seq 8192, global batch 2048: llama3-70b's published training (source)``, or "" where nothing was assumed."""
    if not defaults:
        return ""
    said = {"seq_length": "seq", "global_batch": "global batch"}
    return f"{' and '.join(said[k] for k in defaults)} as published for {name} ({source})"


@dataclass(frozen=True)
class PartTiming:
    """A part simulated under one matrix: one call's seconds, what NCCL ran and what bounds it."""

    part: StepPart
    seconds: float  # one call: every group of the part at once
    algo: str  # algorithm/protocol the groups ran (p2p/Simple for AllToAll and SendRecv)
    bound: str  # the resource that bounds the step (Simulator.binding's text)

    def to_json(self) -> dict[str, Any]:
        return dict(self.part.to_json(), seconds=self.seconds, algo=self.algo, bound=self.bound)


@dataclass(frozen=True)
class Overlap:
    """DDP's overlap of the data gradient reduction with the last micro-batch's backward compute.

    ``exposed = max(0, data reduction - backward compute)`` (Li et al. 2020, PyTorch Distributed, section
    3.2.3: gradient buckets reduced while the backward pass goes on; Megatron-LM's --overlap-grad-reduce).
    """

    backward_seconds: float
    keys: frozenset[tuple[str, tuple[int, ...], int]]  # (op, job axes, bytes) of the data reduction

    def to_json(self) -> dict[str, Any]:
        return {"backward_seconds": self.backward_seconds,
                "formula": "exposed data reduction = max(0, data reduction - L/p x 2/3 x compute per layer)"}


def axes_label(axes: Sequence[int], names: Sequence[str]) -> str:
    """The job axes a collective spans, by name: ``data+expert``."""
    return "+".join(names[a] for a in axes)


def tier_of(matrix: Sequence[Sequence[int]], axes: Sequence[int], level_names: Sequence[str],
            node_level: int | None) -> str:
    """The tier the groups of ``axes`` cross under ``matrix``: their outermost split level, in words.

    Split below the node level: inside a node (its NVLink or PCIe); at the node level: across nodes inside
    the level above (the leaf switches of a unit); above it: across that level's members (the spine).

    Examples
    --------
    >>> tier_of(((4, 1, 1), (1, 4, 1), (1, 1, 8)), (2,), ("unit", "node", "gpu"), 1)
    'inside a node'
    >>> tier_of(((4, 1, 1), (1, 4, 1), (1, 1, 8)), (1,), ("unit", "node", "gpu"), 1)
    'across nodes inside a unit'
    >>> tier_of(((4, 1, 1), (1, 4, 1), (1, 1, 8)), (0,), ("unit", "node", "gpu"), 1)
    'across units'
    """
    split = [j for j in range(len(level_names)) if any(matrix[a][j] > 1 for a in axes)]
    if not split:
        return "not split"
    j = split[0]
    if node_level is not None and j > node_level:
        return f"inside a {level_names[node_level]}"
    if node_level is not None and j == node_level and j > 0:
        return f"across {level_names[j]}s inside a {level_names[j - 1]}"
    return f"across {level_names[j]}s"


def overlap_text(work: StepWorkload) -> str:
    """The model of overlap, in words, with its formula."""
    if work.backward_seconds is None:
        return ("overlap: none -- the step's communication summed, each collective count x its time "
                "(give --compute-per-layer to overlap the data reduction with backward compute)")
    return (f"overlap: the data reduction with the last micro-batch's backward, as DDP's buckets: exposed = "
            f"max(0, data reduction - L/p x 2/3 x compute per layer) = max(0, data reduction - "
            f"{format_seconds(work.backward_seconds)}); the rest summed")


def axis_rows(plan: Any, names: Sequence[str], levels: Sequence[str], node_level: int | None) -> list[dict[str, Any]]:
    """A :class:`~p2sim.studies.plan.Plan` by axis (the axes a collective spans, by name): its collectives with
    count x time, the tier its groups cross under the plan's matrix, and what bounds its heaviest part that
    names one; heaviest first."""
    rows: dict[tuple[int, ...], dict[str, Any]] = {}

    def row(axes: tuple[int, ...]) -> dict[str, Any]:
        if axes not in rows:
            rows[axes] = {"axis": axes_label(axes, names), "axes": list(axes), "seconds": 0.0,
                          "tier": tier_of(plan.matrix, axes, levels, node_level), "bound": "", "collectives": []}
        return rows[axes]

    for c in plan.choices:
        r, seconds = row(c.reduction.axes), c.seconds * c.reduction.count
        r["seconds"] += seconds
        r["collectives"].append({"op": "AllReduce", "bytes": c.reduction.bytes, "count": c.reduction.count,
                                 "seconds_each": c.seconds, "seconds": seconds, "program": c.program,
                                 "algo": c.algo, "bound": c.bound})
    for pt in plan.parts:
        r, seconds = row(pt.part.axes), pt.seconds * pt.part.count
        r["seconds"] += seconds
        r["collectives"].append({"op": pt.part.op, "bytes": pt.part.size, "count": pt.part.count,
                                 "seconds_each": pt.seconds, "seconds": seconds, "pattern": pt.part.pattern,
                                 "algo": pt.algo, "bound": pt.bound})
    for r in rows.values():
        named = [c for c in sorted(r["collectives"], key=lambda c: -c["seconds"]) if c.get("bound")]
        r["bound"] = named[0]["bound"] if named else f"its groups {r['tier']}"
    return sorted(rows.values(), key=lambda r: (-r["seconds"], r["axis"]))
