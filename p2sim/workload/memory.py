"""Memory per GPU of a training step: weights, gradients, optimizer states, activations, and what does not fit.

The GPU holding the most is the first pipeline stage's (the most micro-batches in flight) or the last's
(the logits); both are counted and the larger is the step's figure.  Per GPU:

* **weights** ``2 B`` per parameter it holds (BF16; FP8 recipes keep BF16 weights, Micikevicius et al. 2022):
  its stage's dense weights over ``tensor``, its routed experts over ``expert`` (expert tensor size 1);
* **gradients** ``G`` bytes each (FP32 main gradients, Megatron-LM's ``accumulate_allreduce_grads_in_fp32``,
  or BF16), over the data ranks from ZeRO-2 on;
* **optimizer** Adam's FP32 master weight, momentum and variance, 12 bytes per parameter (Rajbhandari
  et al. 2020, ZeRO, section 3: ``K = 12``), over the data ranks under the distributed optimizer / ZeRO-1
  and up; FSDP and ZeRO-3 shard the weights too.  Dense weights shard over data x context x expert, routed
  experts over data x context (p2sim's axes: ``p2sim.workload.training``);
* **activations** per layer and micro-batch as Korthikanti et al. 2022 (section 4) count them, for
  FlashAttention (no ``a s^2`` scores) and the model's real widths: every tensor a layer keeps for its
  backward, ``2 B`` per element -- the norms' inputs, Q/K/V, the attention output and its statistics, the
  MLP's inputs and its gate and up outputs -- over ``tensor`` (the ``h``-wide ones only with sequence
  parallelism) and ``context``; selective recompute keeps all but what its modules recompute
  (:mod:`.recompute`: the attention core's nothing more, FlashAttention already recomputes it; ``layernorm``
  the outputs of the norms that are modules of their own, ``moe_act`` the experts' activation outputs,
  ``mla_up_proj`` MLA's Q and K/V), full recompute keeps each layer's input only.  The first stage holds
  ``p`` micro-batches in flight under 1F1B, ``p + (p - 1) / v`` under the interleaved schedule (Megatron-LM's
  warm-up micro-batches, ``get_pipeline_model_parallel_schedule``), at most the step's ``m``;
* the last stage's logits in FP32 for the loss (``4 s b V / t``), and a fixed :data:`RESERVED` for the
  CUDA context, NCCL's buffers and the caching allocator's slack.

Examples
--------
>>> from p2sim.workload.model_files import load_model
>>> m = load_model("llama3-8b")
>>> round(activation_bytes_per_layer(m, "dense", tokens=1, tensor=1, sp=False) )   # bytes per token, one layer
139392
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..util.errors import InputError
from .compute import layer_kinds
from .model_spec import ModelSpec
from .recompute import modules_of, parse_recompute, separate_norms
from .schedule import chunk_layers

__all__ = ["MemoryUse", "activation_bytes_per_layer", "offloaded_bytes", "memory_per_gpu", "in_flight", "RESERVED",
           "GIB", "check_fits", "held_micro_batches"]

GIB = 2**30
# the CUDA context, cuBLAS workspaces, NCCL's channel buffers and the caching allocator's fragmentation:
# 3-5 GiB on an 80 GB GPU as PyTorch's memory snapshots show them (PyTorch docs, "Understanding CUDA memory
# usage"); taken as 4 GiB
RESERVED = 4 * GIB


@dataclass(frozen=True)
class MemoryUse:
    """Bytes per GPU by part, on the stage that holds the most."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    reserved: float
    stage: int

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.logits + self.reserved

    def parts(self) -> dict[str, float]:
        return {"weights": self.weights, "gradients": self.gradients, "optimizer": self.optimizer,
                "activations": self.activations, "logits": self.logits, "reserved": self.reserved}


def activation_bytes_per_layer(model: ModelSpec, kind: str, *, tokens: int, tensor: int, sp: bool,
                               recompute: str = "none", expert: int = 1, fp8: bool = False) -> float:
    """Bytes one layer keeps for its backward, for ``tokens`` tokens of one micro-batch on one GPU (BF16).

    ``fp8``: the GEMMs' inputs kept as their FP8 casts, one byte each (TransformerEngine's linear layers save
    the FP8 input for the weight gradient): the norms' outputs, the attention output, the activation's output.
    """
    gemm_in = 0.5 if fp8 else 1.0  # of a BF16 element's 2 bytes
    m, h, t = model, model.hidden_size, tensor
    hw = h / t if sp else h  # the h-wide tensors: split over tensor only with sequence parallelism
    if recompute == "full":
        return 2.0 * tokens * hw  # the layer's input (Korthikanti et al. 2022, section 5: 2 s b h)
    again = modules_of(recompute)  # selective recompute's modules (recompute.py): what they keep no more
    heads = m.num_attention_heads / t
    if m.is_mla:
        q = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        kv = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
        out = heads * m.v_head_dim
        low = (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim)  # the compressed latents, not split
    else:
        q = heads * m.head_size
        kv = 2 * max(1.0, m.num_key_value_heads / t) * m.head_size
        out = q
        low = 0
    # input norm's input and output, Q K V, attention output (+ its row statistics, 4 B per head), the
    # out projection's input is the attention output; post norm's input and output
    attention = hw + gemm_in * hw + low + q + kv + gemm_in * out + 2 * heads + hw + gemm_in * hw
    if "layernorm" in again:  # the outputs of the norms that are modules of their own (recompute.separate_norms)
        attention -= len(separate_norms(m, kind)) * gemm_in * hw
    if "mla_up_proj" in again and m.is_mla:  # the up projections' Q and K/V, recomputed from the latents
        attention -= q + kv
    glu = 2 if m.gated_mlp else 1
    if kind == "moe":
        w = m.expert_width / t
        # each routed copy: its input, gate/up output, activation output
        # moe_act recomputes the activation's output from the up projection's
        routed = m.experts_per_token * (gemm_in * h + glu * w + (0.0 if "moe_act" in again else gemm_in * w))
        shared = m.shared_experts * (glu * w + gemm_in * w)
        mlp = routed + shared + m.experts / t
    else:
        f = m.intermediate_size / t
        mlp = glu * f + gemm_in * f
    return 2.0 * tokens * (attention + mlp)


def offloaded_bytes(model: ModelSpec, layers: Iterable[int], *, tokens: int, tensor: int, sp: bool, expert: int = 1,
                    fp8: bool = False) -> float:
    """Bytes of saved activations the ``layers`` (their indices) send to host memory for one micro-batch and fetch
    back for its backward (activation offloading keeps no recompute: each layer's whole saved set)."""
    kinds = layer_kinds(model)
    return sum(activation_bytes_per_layer(model, kinds[i], tokens=tokens, tensor=tensor, sp=sp, expert=expert,
                                          fp8=fp8) for i in layers)


def in_flight(pipeline: int, micro_batches: int, virtual: int = 1) -> float:
    """Micro-batches whose activations the first stage holds at once: ``p`` (1F1B), ``p + (p - 1) / v``
    (interleaved), at most ``m``.

    >>> in_flight(8, 64), in_flight(8, 64, 2), in_flight(8, 4)
    (8.0, 11.5, 4.0)
    """
    held = pipeline if virtual == 1 else pipeline + (pipeline - 1) / virtual
    return min(float(held), float(micro_batches))


def held_micro_batches(pipeline: int, micro_batches: int, virtual: int, stage: int) -> float:
    """Micro-batches (each through all of the stage's chunks) whose activations ``stage`` holds at its peak:
    the first stage :func:`in_flight`; the last ``((v - 1) p + 1) / v`` (its warm-up chunks, Megatron-LM's
    interleaved schedule; one under 1F1B); without a pipeline, one (gradient accumulation)."""
    if pipeline == 1:
        return 1.0
    if stage == 0:
        return in_flight(pipeline, micro_batches, virtual)
    return min(float(micro_batches), ((virtual - 1) * pipeline + 1) / virtual)


def _stage_params(model: ModelSpec, pipeline: int, virtual: int, stage: int) -> tuple[float, float]:
    """(dense, routed-expert) parameters of pipeline stage ``stage`` (all its chunks), before any split."""
    m = model
    kinds = layer_kinds(m)
    sizes = chunk_layers(m.num_layers, pipeline, virtual)
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    norms = 2 * m.hidden_size
    dense_layer = m.attention_parameters + m.mlp_parameters(m.intermediate_size) + norms
    moe_other = (m.attention_parameters + norms + m.shared_experts * m.mlp_parameters(m.expert_width)
                 + m.experts * m.hidden_size)
    experts = m.experts * m.mlp_parameters(m.expert_width)
    dense = routed = 0.0
    for j in range(virtual):
        c = j * pipeline + stage
        for layer in range(starts[c], starts[c] + sizes[c]):
            if kinds[layer] == "moe":
                dense += moe_other
                routed += experts
            else:
                dense += dense_layer
    if stage == 0:
        dense += (m.vocab_size + m.position_embeddings) * m.hidden_size
    if stage == pipeline - 1:
        dense += m.hidden_size + (0 if m.tie_word_embeddings and pipeline == 1 else m.vocab_size * m.hidden_size)
    return dense, routed


def memory_per_gpu(model: ModelSpec, *, seq_length: int, micro_batch: int, micro_batches: int, tensor: int = 1,
                   context: int = 1, pipeline: int = 1, data: int = 1, expert: int = 1, virtual: int = 1,
                   sp: bool = False, recompute: str = "none", data_parallel: str = "zero1",
                   grad_bytes: int = 4, fp8: bool = False, offload: int = 0) -> MemoryUse:
    """The step's memory on the GPU that holds the most (first or last stage).

    ``data_parallel``: ddp, zero1 (Megatron-LM's distributed optimizer), zero2, zero3 or fsdp.  ``offload``: the
    first layers of each stage whose saved activations wait in host memory instead (activation offloading,
    :func:`offloaded_bytes`), less one of them: the layer whose copy is in flight.
    """
    recompute = parse_recompute(recompute)
    dense_shards = data * context * expert  # the ranks that hold a copy of a dense weight
    expert_shards = data * context
    tokens = micro_batch * seq_length // context
    kinds = layer_kinds(model)
    sizes = chunk_layers(model.num_layers, pipeline, virtual)
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    best: MemoryUse | None = None
    for stage in sorted({0, pipeline - 1}):
        dense, routed = _stage_params(model, pipeline, virtual, stage)
        dense_local, expert_local = dense / tensor, routed / expert
        params = dense_local + expert_local
        sharded = dense_local / dense_shards + expert_local / expert_shards
        weights = 2.0 * (sharded if data_parallel in ("zero3", "fsdp") else params)
        gradients = grad_bytes * (sharded if data_parallel in ("zero2", "zero3", "fsdp") else params)
        optimizer = 12.0 * (params if data_parallel == "ddp" else sharded)
        if data_parallel in ("zero3", "fsdp"):
            # the layer being computed gathered in full (and the next one prefetched)
            weights += 2 * 2.0 * params / max(1, model.num_layers // pipeline)
        per_mb = gone = 0.0
        away = min(offload, sizes[stage])  # the stage's first layers offloaded (its first chunk's)
        for j in range(virtual):
            c = j * pipeline + stage
            for layer in range(starts[c], starts[c] + sizes[c]):
                kept = activation_bytes_per_layer(model, kinds[layer], tokens=tokens, tensor=tensor, sp=sp,
                                                  recompute=recompute, expert=expert, fp8=fp8)
                per_mb += kept
                if j == 0 and layer < starts[c] + away:
                    gone += kept
        if away:
            per_mb -= gone * (1 - 1 / away)
        activations = per_mb * held_micro_batches(pipeline, micro_batches, virtual, stage)
        logits = 0.0
        if stage == pipeline - 1:
            vocab = -(-model.vocab_size // 128) * 128
            logits = 4.0 * tokens * vocab / tensor
        use = MemoryUse(weights, gradients, optimizer, activations, logits, float(RESERVED), stage)
        if best is None or use.total > best.total:
            best = use
    assert best is not None
    return best


def check_fits(use: MemoryUse, capacity_gib: float | None, what: str) -> None:
    """Refuse a step that does not fit the GPU's memory, with its figure and its largest parts."""
    if capacity_gib is None:
        return
    if use.total > capacity_gib * GIB:
        parts = ", ".join(f"{k} {v / GIB:.1f}" for k, v in sorted(use.parts().items(), key=lambda kv: -kv[1]))
        raise InputError(f"{what}: needs {use.total / GIB:.1f} GiB per GPU on pipeline stage {use.stage}, more than "
                         f"the GPU's {capacity_gib:.1f} GiB ({parts} GiB): shard more (zero, tensor, pipeline, "
                         "expert), recompute, or a smaller micro_batch")
