"""How one training step runs: sequence, batches, dtypes, and how each parallelism axis is used.

:class:`TrainingSpec` holds the settings a step's communication depends on, each checked on
construction; :func:`fit` checks them against a model and the axes' sizes (Megatron-LM's rules) and
returns the :class:`Fit`, the derived counts the step's formulas read.  The axes are named as p2sim's
``--axes`` names them: ``tensor``, ``context``, ``pipeline``, ``data`` and ``expert``; one not given
has size 1.  The expert axis is one more batch-splitting axis for the dense weights, as in GShard
(Lepikhin et al. 2021) and DeepSpeed-MoE (Rajbhandari et al. 2022): a dense weight is replicated over
data x context x expert, a routed expert's over data x context.

Examples
--------
>>> from p2sim.workload.model_files import load_model
>>> t = TrainingSpec(seq_length=8192, micro_batch=1, global_batch=64)
>>> f = fit(load_model("llama3-8b"), t, {"tensor": 8, "pipeline": 4, "data": 8})
>>> f.micro_batches, f.layers_per_stage, f.tokens
(8, 8, 8192)
>>> fit(load_model("llama3-8b"), t, {"tensor": 3})
Traceback (most recent call last):
...
p2sim.util.errors.InputError: axes: tensor=3 should divide num_attention_heads (32) of llama3-8b
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..util.errors import InputError
from ..util.parsing import axes_spec
from .model_spec import MAX_SIZE_FIELD, ModelSpec
from .schedule import chunk_layers, stage_split

__all__ = ["TrainingSpec", "Fit", "fit", "axis_sizes", "AXES", "DTYPE_BYTES", "DATA_MODES", "SCHEDULES"]

AXES = ("tensor", "context", "pipeline", "data", "expert")
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
DATA_MODES = ("ddp", "zero1", "zero2", "zero3", "fsdp")
SCHEDULES = ("1f1b", "interleaved")


@dataclass(frozen=True)
class TrainingSpec:
    """The settings of one training step (every count a positive integer, names from their lists).

    Parameters
    ----------
    seq_length : int
        Tokens per sequence.
    micro_batch : int
        Sequences per micro-batch on one data-parallel rank.
    global_batch : int | None
        Sequences per step over all ranks; None: one micro-batch per data-parallel rank, Megatron-LM's
        default (``--global-batch-size`` unset is ``micro_batch_size x data_parallel_size``).
    param_dtype : str
        bf16, fp16 or fp32: the weights' and activations' type (what tensor, context, pipeline and expert
        traffic and ZeRO's parameter gathers carry).
    grad_dtype : str
        The gradients' reduction type; fp32 by default, as Megatron-LM reduces them with ``--bf16``
        (``accumulate_allreduce_grads_in_fp32``, unless ``--grad-reduce-in-bf16``).
    sequence_parallel : bool
        Tensor parallelism with sequence parallelism (Korthikanti et al. 2022): AllGather and
        ReduceScatter instead of AllReduce, activations split over the tensor axis between them.
    virtual_stages : int
        Model chunks per pipeline stage (Megatron-LM's ``--num-layers-per-virtual-pipeline-stage``).
    schedule : str
        1f1b, or interleaved (needs ``virtual_stages > 1``; Narayanan et al. 2021, section 2.2).
    data_parallel : str
        ddp, zero1, zero2, zero3 or fsdp (Rajbhandari et al. 2020; FSDP shards as ZeRO-3 does).
    """

    seq_length: int = 4096
    micro_batch: int = 1
    global_batch: int | None = None
    param_dtype: str = "bf16"
    grad_dtype: str = "fp32"
    sequence_parallel: bool = False
    virtual_stages: int = 1
    schedule: str = "1f1b"
    data_parallel: str = "ddp"

    def __post_init__(self) -> None:
        for name in ("seq_length", "micro_batch", "global_batch", "virtual_stages"):
            value = getattr(self, name)
            if value is None and name == "global_batch":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"training: {name}: {value!r} should be a positive integer")
            if value > MAX_SIZE_FIELD:  # a count, or tokens, that no step has; it would reach float() as garbage
                raise InputError(f"training: {name}: {value} is more than 2^50: no training step is that large")
        for name, allowed in (("param_dtype", tuple(DTYPE_BYTES)), ("grad_dtype", tuple(DTYPE_BYTES)),
                              ("schedule", SCHEDULES), ("data_parallel", DATA_MODES)):
            if getattr(self, name) not in allowed:
                raise InputError(f"training: {name}: {getattr(self, name)!r} should be one of {', '.join(allowed)}")
        if not isinstance(self.sequence_parallel, bool):
            raise InputError(f"training: sequence_parallel: {self.sequence_parallel!r} should be true or false")
        # Megatron-LM runs the interleaved schedule exactly when virtual stages are given
        if (self.schedule == "interleaved") != (self.virtual_stages > 1):
            raise InputError(f"training: schedule: {self.schedule} with virtual_stages={self.virtual_stages} "
                             "(interleaved needs virtual_stages > 1, and 1f1b needs 1)")

    @property
    def param_bytes(self) -> int:
        """Bytes of one weight or activation element."""
        return DTYPE_BYTES[self.param_dtype]

    @property
    def grad_bytes(self) -> int:
        """Bytes of one gradient element as it is reduced."""
        return DTYPE_BYTES[self.grad_dtype]


@dataclass(frozen=True)
class Fit:
    """A model, its training settings and the axes' sizes, checked to fit, with the counts the formulas read."""

    model: ModelSpec
    training: TrainingSpec
    tensor: int
    context: int
    pipeline: int
    data: int
    expert: int
    micro_batches: int  # per step, on each data-parallel rank: global / (micro x data x expert)

    @property
    def layers_per_stage(self) -> int:
        """Layers the fullest pipeline stage holds (all its virtual chunks together; every stage's
        ``num_layers / pipeline`` when they divide evenly)."""
        return max(sum(chunks) for chunks in stage_split(self.model.num_layers, self.pipeline,
                                                         self.training.virtual_stages))

    @property
    def tokens(self) -> int:
        """Tokens of one micro-batch on one rank of the context axis: ``micro_batch x seq_length / context``."""
        return self.training.micro_batch * self.training.seq_length // self.context

    @property
    def moe_layers_per_stage(self) -> int:
        """MoE layers of the stage holding the most (the step waits for its slowest stage): stage ``r``
        holds chunks ``j x pipeline + r`` of ``num_layers / (pipeline x virtual_stages)`` layers each, and the
        model's first ``first_dense_layers`` layers are dense."""
        if not self.model.is_moe:
            return 0
        p, v = self.pipeline, self.training.virtual_stages
        sizes = chunk_layers(self.model.num_layers, p, v)
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        first = self.model.first_dense_layers
        # counted per chunk, not listed (a model's layers may be many): chunk i holds layers
        # [starts[i], starts[i] + sizes[i]), the MoE ones those from first_dense_layers on; stage r holds chunks j x p + r
        return max(sum(max(0, starts[k] + sizes[k] - max(starts[k], first)) for k in range(r, p * v, p))
                   for r in range(p))


def axis_sizes(axes: str | Mapping[str, int]) -> dict[str, int]:
    """The axes' sizes from ``--axes``' text (``"data=8,tensor=8"``, every axis named) or a mapping.

    Examples
    --------
    >>> axis_sizes("data=8,tensor=4")
    {'data': 8, 'tensor': 4}
    """
    if isinstance(axes, str):
        sizes, names = axes_spec(axes)
        if names is None:
            raise InputError(f"axes: {axes!r} should name each axis (tensor=8,data=4): the step's formulas differ by axis")
        return dict(zip(names, sizes))
    if not isinstance(axes, Mapping):
        raise InputError(f"axes: {axes!r} is not a text or a mapping of axis names to sizes")
    return dict(axes)


def fit(model: ModelSpec, training: TrainingSpec, axes: Mapping[str, int]) -> Fit:
    """Check that ``training`` on ``axes`` fits ``model`` (Megatron-LM's rules) and derive the step's counts.

    Raises
    ------
    InputError
        An axis name the step does not know or a size that is not a positive integer, or a rule broken:
        one line naming the axis or setting, its value and what it should divide.
    """
    # named by what it is, never by its repr: a ModelSpec's is hundreds of characters
    if not isinstance(model, ModelSpec):
        raise InputError(f"model: a {type(model).__name__} is no ModelSpec (load_model reads a preset's name or a file)")
    if not isinstance(training, TrainingSpec):
        shown = repr(training) if len(repr(training)) <= 60 else f"a {type(training).__name__}"
        raise InputError(f"training: {shown} is no TrainingSpec (for {model.name}; training_of reads --train's "
                         "KEY=VALUE text)")
    sizes = {name: 1 for name in AXES}
    for name, size in axes.items():
        if name not in AXES:
            raise InputError(f"axes: {name!r} is not an axis a training step uses (one of {', '.join(AXES)})")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InputError(f"axes: {name}={size!r} should be a positive integer")
        sizes[name] = size
    t, c, p, d, e = (sizes[n] for n in AXES)
    m = model
    # Megatron-LM (megatron/training/arguments.py): heads and query groups split over the tensor axis
    for what, count in (("num_attention_heads", m.num_attention_heads), ("num_key_value_heads", m.num_key_value_heads)):
        if count % t:
            raise InputError(f"axes: tensor={t} should divide {what} ({count}) of {m.name}")
    # uneven stages as Megatron-LM splits them (p2sim.workload.schedule): refused only where no split exists
    try:
        stage_split(m.num_layers, p, training.virtual_stages)
    except InputError as e:
        raise InputError(f"{m.name}: num_layers: {m.num_layers} on pipeline x virtual_stages = {p} x "
                         f"{training.virtual_stages}: {str(e).removeprefix('pipeline: ')}") from None
    # context parallelism splits each sequence in 2 x context chunks, for the causal mask's balance
    # (Megatron-Core's context parallel; TransformerEngine's attention with CP)
    if c > 1 and training.seq_length % (2 * c):
        raise InputError(f"training: seq_length: {training.seq_length} should be a multiple of 2 x context = {2 * c}")
    if training.sequence_parallel and (training.seq_length // c) % t:
        raise InputError(f"training: seq_length: {training.seq_length} / context {c} should be a multiple of "
                         f"tensor={t} with sequence parallelism")
    if e > 1 and (not m.is_moe or m.experts % e):
        raise InputError(f"axes: expert={e} should divide the routed experts ({m.experts}) of {m.name}")
    if m.is_moe and t > 1 and not training.sequence_parallel:
        # Megatron-LM: "When using MoE and tensor parallelism, sequence parallelism must be used."
        raise InputError(f"training: sequence_parallel: false with tensor={t} and experts: Megatron-LM needs "
                         "sequence parallelism for a MoE model split over the tensor axis")
    per_step = training.micro_batch * d * e
    global_batch = per_step if training.global_batch is None else training.global_batch
    if global_batch % per_step:
        raise InputError(f"training: global_batch: {global_batch} should be a multiple of micro_batch x data x expert "
                         f"= {training.micro_batch} x {d} x {e} = {per_step}")
    micro_batches = global_batch // per_step
    # Narayanan et al. 2021, section 2.2.2: the interleaved schedule needs micro-batches in multiples of the stages
    if training.schedule == "interleaved" and micro_batches % p:
        raise InputError(f"training: global_batch: {global_batch} gives {micro_batches} micro-batches per step, "
                         f"not a multiple of pipeline={p} as the interleaved schedule needs")
    return Fit(model, training, t, c, p, d, e, micro_batches)
