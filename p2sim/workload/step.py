"""Every collective of one training step, per rank, with its volume, count and published formula.

:func:`step_collectives` derives them from a model, its training settings and the axes' sizes
(:func:`p2sim.workload.training.fit` checks that they fit).  Each :class:`StepCollective` is what one
rank takes part in: the axes its group spans, the operation, ``size`` as nccl-tests' ``-b``/``-e`` and
its output's ``size`` column count it for that operation (AllReduce: the buffer; AllGather: the
gathered output; ReduceScatter: the input before scattering; AllToAll: all a rank sends, its own share
included; SendRecv: what a rank sends, and receives, per call), how many such calls a step makes, and
in which phase.  The rank's view: a stage with a neighbour on each side (pipeline), the stage with the
most MoE layers (expert), and the model's weights split evenly over tensor x pipeline (data).  The
model of overlap is none: the step's communication is the sum of its collectives, each a separate call;
what overlaps compute, and what runs at the same time on other axes, is for the simulator to charge.

Symbols: ``b`` micro-batch, ``s`` sequence, ``h`` hidden, ``L/p`` layers per stage, ``m`` micro-batches per
step, ``t c p d e`` the tensor, context, pipeline, data and expert sizes, ``B`` the parameter dtype's
bytes (activations travel in it), ``G`` the gradient dtype's.

Examples
--------
>>> from p2sim.workload.model_files import load_model
>>> from p2sim.workload.training import TrainingSpec
>>> steps = step_collectives(load_model("llama3-8b"), TrainingSpec(seq_length=8192, global_batch=64),
...                          {"tensor": 8, "pipeline": 4, "data": 8})
>>> [(c.axis, c.op, c.phase, c.size, c.count) for c in steps]  # doctest: +NORMALIZE_WHITESPACE
[('tensor', 'AllReduce', 'forward', 67108864, 128), ('tensor', 'AllReduce', 'backward', 67108864, 128),
 ('pipeline', 'SendRecv', 'forward', 67108864, 8), ('pipeline', 'SendRecv', 'backward', 67108864, 8),
 ('data', 'AllReduce', 'backward', 1003782656, 1)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..util.errors import InputError
from ..util.parsing import MAX_BYTES
from ..util.units import format_bytes
from .model_spec import ModelSpec
from .training import Fit, TrainingSpec, fit

__all__ = ["StepCollective", "step_collectives", "OPS", "PHASES"]

OPS = ("AllReduce", "AllGather", "ReduceScatter", "AllToAll", "SendRecv")
PHASES = ("forward", "backward", "optimizer")

# the sources the formulas come from, cited in each collective
MEGATRON = "Shoeybi et al. 2019, Megatron-LM, section 3 (f and g: 2 AllReduces forward, 2 backward per layer)"
SEQUENCE = "Korthikanti et al. 2022, Reducing Activation Recomputation, section 4.2.2 (AllGather + ReduceScatter)"
PIPELINE = "Narayanan et al. 2021, Efficient Large-Scale Training, sections 2.2 and 4.1 (x v when interleaved)"
RING = ("Liu et al. 2023, Ring Attention, section 3; Megatron-Core context parallelism "
        "(K and V forward; K, V, dK, dV backward, c-1 ring steps)")
ZERO = "Rajbhandari et al. 2020, ZeRO, section 7.2 (DDP 2x params; ZeRO-1/2 RS + AG; ZeRO-3 per-layer AG fwd+bwd)"
MOE = ("Lepikhin et al. 2021, GShard, section 2.2; Rajbhandari et al. 2022, DeepSpeed-MoE, section 5 "
       "(AllToAll dispatch and combine per MoE layer)")
TIED = "Shoeybi et al. 2019 / Narayanan et al. 2021: Megatron-LM's word-embedding gradient AllReduce, first and last stage"


@dataclass(frozen=True)
class StepCollective:
    """One kind of collective call of a step, from one rank's view.

    Parameters
    ----------
    axes : tuple of str
        The axes the call's group spans (a data reduction spans data, context and expert together).
    op : str
        AllReduce, AllGather, ReduceScatter, AllToAll or SendRecv.
    size : int
        Bytes per call, as nccl-tests counts ``size`` for ``op``.
    count : int
        Calls per step.
    phase : str
        forward, backward, or optimizer (after the last backward, around the update).
    formula : str
        The size and count in symbols.
    source : str
        The paper (and section) the formula comes from.
    """

    axes: tuple[str, ...]
    op: str
    size: int
    count: int
    phase: str
    formula: str
    source: str

    @property
    def axis(self) -> str:
        """The axes as one name: ``data+expert``."""
        return "+".join(self.axes)

    @property
    def total_bytes(self) -> int:
        """``size x count``: what this kind of call moves per step, by nccl-tests' count."""
        return self.size * self.count

    def to_json(self) -> dict[str, object]:
        """The fields as plain values, ``total_bytes`` too."""
        return {"axes": list(self.axes), "op": self.op, "size": self.size, "count": self.count, "phase": self.phase,
                "total_bytes": self.total_bytes, "formula": self.formula, "source": self.source}


def _ceil(a: int, b: int) -> int:
    # a shard of a weight that does not divide: the largest (Megatron-LM pads its buffers to divide)
    return -(-a // b)


def _tensor(f: Fit) -> list[StepCollective]:
    if f.tensor == 1:
        return []
    size = f.tokens * f.model.hidden_size * f.training.param_bytes
    count = 2 * f.layers_per_stage * f.micro_batches
    what = "b*s/c*h*B"
    if not f.training.sequence_parallel:
        return [StepCollective(("tensor",), "AllReduce", size, count, phase, f"{what}; 2*L/p*m", MEGATRON)
                for phase in ("forward", "backward")]
    return [StepCollective(("tensor",), op, size, count, phase, f"{what} gathered; 2*L/p*m", SEQUENCE)
            for phase in ("forward", "backward") for op in ("AllGather", "ReduceScatter")]


def _context(f: Fit) -> list[StepCollective]:
    if f.context == 1:
        return []
    # each rank's K and V blocks: its tokens x its tensor shard of the K/V heads
    block = f.tokens * f.model.kv_size // f.tensor * f.training.param_bytes
    count = (f.context - 1) * f.layers_per_stage * f.micro_batches
    return [StepCollective(("context",), "SendRecv", 2 * block, count, "forward",
                           "2 (K,V) * b*s/c*kv_heads*d/t*B; (c-1)*L/p*m", RING),
            StepCollective(("context",), "SendRecv", 4 * block, count, "backward",
                           "4 (K,V,dK,dV) * b*s/c*kv_heads*d/t*B; (c-1)*L/p*m", RING)]


def _pipeline(f: Fit) -> list[StepCollective]:
    if f.pipeline == 1:
        return []
    split = f.tensor if f.training.sequence_parallel else 1  # the activation stays split over tensor
    size = f.tokens * f.model.hidden_size * f.training.param_bytes // split
    count = f.micro_batches * f.training.virtual_stages
    what = "b*s/c*h*B" + ("/t" if split > 1 else "")
    out = [StepCollective(("pipeline",), "SendRecv", size, count, "forward", f"{what} activations; m*v", PIPELINE),
           StepCollective(("pipeline",), "SendRecv", size, count, "backward", f"{what} gradients; m*v", PIPELINE)]
    if f.model.tie_word_embeddings:
        embedding = _ceil(f.model.vocab_size * f.model.hidden_size, f.tensor) * f.training.grad_bytes
        out.append(StepCollective(("pipeline",), "AllReduce", embedding, 1, "optimizer",
                                  "vocab*h/t*G, first and last stage; 1", TIED))
    return out


def _expert(f: Fit) -> list[StepCollective]:
    if f.expert == 1 or not f.moe_layers_per_stage:
        return []
    split = f.tensor if f.training.sequence_parallel else 1  # each tensor rank routes its sequence shard
    size = (f.tokens // split) * f.model.experts_per_token * f.model.hidden_size * f.training.param_bytes
    count = 2 * f.moe_layers_per_stage * f.micro_batches
    what = "b*s/c/t*k*h*B" if split > 1 else "b*s/c*k*h*B"
    return [StepCollective(("expert",), "AllToAll", size, count, phase,
                           f"{what} (dispatch, combine); 2*MoE layers/p*m", MOE) for phase in ("forward", "backward")]


def _data_group(f: Fit, axes: tuple[str, ...], params: int, shards: int, what: str) -> list[StepCollective]:
    """The reductions of ``params`` weights split over ``shards`` model-parallel ranks, replicated over ``axes``."""
    sizes = {"data": f.data, "context": f.context, "expert": f.expert}
    group = tuple(a for a in axes if sizes[a] > 1)
    if not group or not params:
        return []
    held = _ceil(params, shards)  # weights one rank holds
    grad, param = held * f.training.grad_bytes, held * f.training.param_bytes
    mode = f.training.data_parallel
    if mode == "ddp":
        return [StepCollective(group, "AllReduce", grad, 1, "backward", f"{what}*G; 1", ZERO)]
    if mode in ("zero1", "zero2"):
        return [StepCollective(group, "ReduceScatter", grad, 1, "backward", f"{what}*G; 1", ZERO),
                StepCollective(group, "AllGather", param, 1, "optimizer", f"{what}*B; 1", ZERO)]
    # ZeRO-3 and FSDP: each layer's weights gathered before its forward and its backward, its gradients
    # scattered after its backward, every micro-batch (section 7.2.2); a layer: the stage's share of them
    per_layer, layers = _ceil(held, f.layers_per_stage), f.layers_per_stage * f.micro_batches
    unit = f"{what}/(L/p)"
    return [StepCollective(group, "AllGather", per_layer * f.training.param_bytes, layers, "forward",
                           f"{unit}*B; L/p*m", ZERO),
            StepCollective(group, "AllGather", per_layer * f.training.param_bytes, layers, "backward",
                           f"{unit}*B; L/p*m", ZERO),
            StepCollective(group, "ReduceScatter", per_layer * f.training.grad_bytes, layers, "backward",
                           f"{unit}*G; L/p*m", ZERO)]


def _data(f: Fit) -> list[StepCollective]:
    m = f.model
    model_parallel = f.tensor * f.pipeline
    return (_data_group(f, ("data", "context", "expert"), m.dense_parameters, model_parallel, "params/(t*p)")
            + _data_group(f, ("data", "context"), m.expert_parameters, model_parallel * f.expert,
                          "expert params/(t*p*e)"))


def step_collectives(model: ModelSpec, training: TrainingSpec, axis_sizes: Mapping[str, int]) -> tuple[StepCollective, ...]:
    """Every collective of one training step, as one rank takes part in it.

    Parameters
    ----------
    model : ModelSpec
        The transformer (:func:`p2sim.workload.model_files.load_model`).
    training : TrainingSpec
        Sequence, batches, dtypes and how each axis is used.
    axis_sizes : mapping of str to int
        The sizes of ``tensor``, ``context``, ``pipeline``, ``data``, ``expert`` (absent: 1).

    Returns
    -------
    tuple of StepCollective
        Tensor, context, pipeline, expert, then data collectives; an axis of size 1 has none.

    Raises
    ------
    InputError
        The settings do not fit the model or the axes (:func:`p2sim.workload.training.fit`).
    """
    f = fit(model, training, axis_sizes)
    collectives = tuple(_tensor(f) + _context(f) + _pipeline(f) + _expert(f) + _data(f))
    for c in collectives:
        _bounded(c, f)
    return collectives


def _bounded(c: StepCollective, f: Fit) -> None:
    """Refuse a collective whose buffer, or whose bytes in one step, is above 1 PiB, the bound ``--bytes`` and
    system files have: a model's sizes and ``--train`` derive buffers as the user's ``--bytes`` gives one, and an
    absurd one would be ranked with confident garbage."""
    if c.size <= MAX_BYTES and c.total_bytes <= MAX_BYTES:
        return
    t, m = f.training, f.model
    settings = (f"seq_length={t.seq_length}, micro_batch={t.micro_batch}, global_batch={t.global_batch or 'default'}"
                f" ({f.micro_batches} micro-batches), hidden_size={m.hidden_size}, num_layers={m.num_layers}, "
                f"vocab_size={m.vocab_size}")
    def shown(n: int) -> str:
        return format_bytes(n) if n <= MAX_BYTES else f"{n / 2**50:.3g} PiB"

    what = (f"{shown(c.size)} per call" if c.size > MAX_BYTES
            else f"{c.count} calls of {shown(c.size)}, {shown(c.total_bytes)} per step")
    raise InputError(f"{m.name}: the step's {c.op} over {c.axis} ({c.phase}; {c.formula}) is {what}, more than "
                     f"1 PiB: no GPU buffer, nor step, is that large ({settings}): check --train and the model's sizes")
