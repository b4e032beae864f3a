"""The compute of one training step: every operation of a layer with its shape, FLOPs and bytes, and the model FLOPs.

Two counts, for two uses:

* :func:`model_flops` is the step's *model* FLOPs as Megatron-LM counts them for its "TFLOP/s per GPU"
  (``num_floating_point_operations`` in ``megatron/training/training.py``; the 12 = 3 x 2 x 2 of Narayanan
  et al. 2021, appendix: forward, weight-gradient and data-gradient GEMMs, two FLOPs per multiply-add):
  per token and layer ``6 x`` every weight matrix's size (attention's Q/K/V/O -- or MLA's down and up
  projections --, the MLP's, the routed top-k and shared experts'), ``6 x`` the causal attention's
  ``heads x d x seq`` (QK^T and AV, each half of the square), and ``6 x h x vocab`` for the logits; the
  MTP modules of DeepSeek-V3 as one more layer each plus their projection.  Recompute is not counted
  (model FLOPs, Chowdhery et al. 2022, appendix B).
* :func:`layer_ops` lists the operations one GPU runs for one layer and one micro-batch: each matrix
  multiply as ``(m, n, k)`` after the tensor, context and expert splits, the attention core as
  FlashAttention computes it (Dao 2023: forward QK^T and AV; backward 2.5 x the forward, the recomputed
  QK^T and four more products), and the memory-bound operations (norms, activation, residual adds,
  rotary, the MoE permutation) with the bytes they move.  :mod:`p2sim.workload.op_time` times them.

Examples
--------
>>> from p2sim.workload.model_files import load_model
>>> round(model_flops_per_token(load_model("llama3-8b"), 8192) / 1e9, 2)   # about 6 x 8B + attention
51.47
"""

from __future__ import annotations

from dataclasses import dataclass

from .model_spec import ModelSpec

__all__ = ["Op", "model_flops_per_token", "model_flops", "layer_ops", "head_ops", "LayerKind", "layer_kinds",
           "BACKWARD_MATMUL", "BACKWARD_ATTENTION"]

# backward of a matrix multiply: the data gradient and the weight gradient, each as costly as the forward
BACKWARD_MATMUL = 2.0
# FlashAttention-2's backward (Dao 2023, section 3.1.2 / algorithm 2): recomputes S = QK^T and computes
# dV, dP, dQ, dK -- five products against the forward's two
BACKWARD_ATTENTION = 2.5

# model types whose gated MLP Megatron-LM counts as ungated: its FLOP count applies the 3/2 only under
# --swiglu, and GPT-OSS runs a clamped gated GeLU (Megatron-Bridge's GPT-OSS provider: quick_gelu with
# gated_linear_unit, not swiglu) -- the published TFLOP/s of gpt-oss are 6 x that count (dev rows D07, D16)
_COUNTED_UNGATED = frozenset({"gpt_oss"})

LayerKind = str  # "dense" (dense MLP) or "moe"


@dataclass(frozen=True)
class Op:
    """One operation of a layer's forward pass on one GPU for one micro-batch.

    ``kind`` is ``matmul`` (``flops = 2 m n k x count``, operands read and result written once),
    ``attention`` (FlashAttention's fused kernel: ``flops`` of its products, ``bytes`` of Q, K, V, O) or
    ``memory`` (bandwidth-bound: ``bytes`` read and written).  ``count`` repeats a matmul (one per local
    expert, grouped).
    """

    name: str
    kind: str
    flops: float
    bytes: float
    m: int = 0
    n: int = 0
    k: int = 0
    count: int = 1


def _mm(name: str, m: int, n: int, k: int, dtype_bytes: float, count: int = 1) -> Op:
    """A matrix multiply ``(m x k) @ (k x n)``, ``count`` times (operands and result moved once each)."""
    return Op(name, "matmul", 2.0 * m * n * k * count, dtype_bytes * (m * k + k * n + m * n) * count, m, n, k, count)


def _mem(name: str, elements: float, dtype_bytes: float) -> Op:
    return Op(name, "memory", 0.0, elements * dtype_bytes)


def layer_kinds(model: ModelSpec) -> tuple[LayerKind, ...]:
    """Each layer's kind in order: DeepSeek's first ``first_dense_layers`` dense, the rest MoE in a MoE model."""
    return tuple("moe" if model.is_moe and i >= model.first_dense_layers else "dense" for i in range(model.num_layers))


def _attention_widths(model: ModelSpec) -> tuple[int, int]:
    """(QK^T's per-head width, AV's per-head width)."""
    if model.is_mla:
        return model.qk_nope_head_dim + model.qk_rope_head_dim, model.v_head_dim
    return model.head_size, model.head_size


def model_flops_per_token(model: ModelSpec, seq_length: int, vocab_multiple: int = 128) -> float:
    """Megatron-LM's model FLOPs of one token's forward and backward (``num_floating_point_operations``
    divided by ``batch x seq``), with the vocabulary padded to ``vocab_multiple`` as Megatron-LM pads it
    (``--make-vocab-size-divisible-by`` 128; the tensor size's multiple is left out)."""
    m, h, s = model, model.hidden_size, seq_length
    heads = m.num_attention_heads
    # Megatron's gated_linear_multiplier: SwiGLU's three matrices for two
    glu = 1.5 if m.gated_mlp and m.model_type not in _COUNTED_UNGATED else 1.0
    moe = m.moe_layers
    mtp = m.mtp_layers
    dense = m.num_layers - moe
    # Megatron-LM counts each MTP module as one more layer of the last layer's kind
    if mtp:
        if moe:
            moe += mtp
        else:
            dense += mtp
    layers = dense + moe
    mlp = (dense * m.intermediate_size * glu
           + moe * m.expert_width * (m.experts_per_token + m.shared_experts) * glu)
    mlp_flops = 12 * h * mlp
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q_term = (m.q_lora_rank * (h + heads * qk + 1) if m.q_lora_rank else h * heads * qk)
        per_layer = (q_term + m.kv_lora_rank * (h + heads * (m.qk_nope_head_dim + m.v_head_dim) + 1)
                     + h * m.qk_rope_head_dim + heads * m.v_head_dim * h
                     + s * heads * qk / 2 + s * heads * m.v_head_dim / 2)
    else:
        q = heads * m.head_size
        kv = m.num_key_value_heads * m.head_size
        per_layer = h * (q + 2 * kv) + q * s / 2 * 2 + q * h
    attention = 6 * layers * per_layer
    vocab = -(-m.vocab_size // vocab_multiple) * vocab_multiple
    mtp_extra = 6 * mtp * (3 * h + 2 * h * h)
    logits = 6 * h * vocab * (mtp + 1)
    return mlp_flops + attention + mtp_extra + logits


def model_flops(model: ModelSpec, seq_length: int, sequences: int) -> float:
    """Megatron-LM's model FLOPs of a step of ``sequences`` sequences of ``seq_length`` tokens."""
    return model_flops_per_token(model, seq_length) * seq_length * sequences


def layer_ops(model: ModelSpec, kind: LayerKind, *, tokens: int, seq_length: int, tensor: int = 1, context: int = 1,
              expert: int = 1, sequence_parallel: bool = False, dtype_bytes: float = 2.0,
              sliding: bool = False) -> tuple[Op, ...]:
    """The forward operations of one layer on one GPU for one micro-batch.

    Parameters
    ----------
    tokens : int
        The micro-batch's tokens on this GPU's context rank (``micro_batch x seq_length / context``).
    seq_length : int
        The whole sequence (the causal attention's span before the context split).
    tensor, context, expert : int
        The axes' sizes: weights and heads split over ``tensor`` (Megatron's column- and row-parallel
        linears); the sequence over ``context`` (load-balanced, each rank a causal share of ``1 / context``);
        routed experts over ``expert``, each GPU receiving its experts' share of the routed tokens.
    sequence_parallel : bool
        Norms and residual adds run on ``tokens / tensor`` (Korthikanti et al. 2022), else on all tokens.
    dtype_bytes : float
        Bytes of an activation or weight element as the GEMMs read them (2 for BF16, 1 for FP8).
    sliding : bool
        A sliding-window layer: each query attends to ``sliding_window`` keys at most.
    """
    m, h, t = model, model.hidden_size, tensor
    b = tokens
    act = 2.0  # activations between kernels stay BF16 (FP8 recipes cast at each GEMM's input)
    norm_tokens = b // t if sequence_parallel else b
    ops: list[Op] = [_mem("input norm", 2 * norm_tokens * h, act)]
    heads = m.num_attention_heads // t
    qk, vd = _attention_widths(m)
    if m.is_mla:
        if m.q_lora_rank:
            ops.append(_mm("q down", b, m.q_lora_rank, h, dtype_bytes))
            ops.append(_mm("q up", b, heads * qk, m.q_lora_rank, dtype_bytes))
        else:
            ops.append(_mm("q", b, heads * qk, h, dtype_bytes))
        ops.append(_mm("kv down", b, m.kv_lora_rank + m.qk_rope_head_dim, h, dtype_bytes))
        ops.append(_mm("kv up", b, heads * (m.qk_nope_head_dim + vd), m.kv_lora_rank, dtype_bytes))
        kv_width = heads * (qk + vd)
    else:
        kv_heads = max(1, m.num_key_value_heads // t)
        ops.append(_mm("qkv", b, (heads + 2 * kv_heads) * m.head_size, h, dtype_bytes))
        kv_width = 2 * kv_heads * m.head_size
    ops.append(_mem("rotary", 2 * b * (heads * qk + kv_width // 2), act))
    # causal attention: each of the sequence's queries sees its prefix, seq/2 keys on average; a context
    # rank holds 1/context of the queries, balanced (two chunks each)
    span = min(m.sliding_window, seq_length) if sliding and m.sliding_window else seq_length / 2
    att_flops = 2.0 * b * span * heads * (qk + vd)
    ops.append(Op("attention", "attention", att_flops, act * b * (heads * (qk + vd) + kv_width + heads * vd)))
    ops.append(_mm("out", b, h, heads * vd, dtype_bytes))
    ops.append(_mem("residual", 3 * norm_tokens * h, act))
    ops.append(_mem("post norm", 2 * norm_tokens * h, act))
    glu = 2 if m.gated_mlp else 1
    if kind == "moe":
        ops.append(_mm("router", b if not sequence_parallel else norm_tokens, m.experts, h, 4.0))
        routed = b * m.experts_per_token  # token-expert pairs of this rank's tokens, spread over the expert axis
        local = max(1, m.experts // expert)
        per_expert = max(1, routed // m.experts)  # tokens each expert gets, balanced, from one rank's tokens
        # each GPU's experts receive from the whole expert group: expert x per_expert tokens each
        rows = per_expert * expert
        w = m.expert_width // t
        ops.append(_mem("permute", 2 * 2 * routed * h, act))  # dispatch and combine: read and write
        ops.append(_mm("experts up", rows, glu * w, h, dtype_bytes, local))
        ops.append(_mem("activation", (glu + 1) * rows * local * w, act))
        ops.append(_mm("experts down", rows, h, w, dtype_bytes, local))
        if m.shared_experts:
            ws = m.shared_experts * m.expert_width // t
            ops.append(_mm("shared up", b, glu * ws, h, dtype_bytes))
            ops.append(_mem("shared activation", (glu + 1) * b * ws, act))
            ops.append(_mm("shared down", b, h, ws, dtype_bytes))
    else:
        f = m.intermediate_size // t
        ops.append(_mm("mlp up", b, glu * f, h, dtype_bytes))
        ops.append(_mem("activation", (glu + 1) * b * f, act))
        ops.append(_mm("mlp down", b, h, f, dtype_bytes))
    ops.append(_mem("residual", 3 * norm_tokens * h, act))
    return tuple(ops)


def head_ops(model: ModelSpec, *, tokens: int, tensor: int = 1, dtype_bytes: float = 2.0) -> tuple[Op, ...]:
    """The output layer and the loss of one micro-batch on the last stage (the logits' GEMM runs in BF16
    in Megatron-LM's FP8 recipes: TransformerEngine keeps the output layer out of FP8), with the
    cross-entropy's read and write of the logits in FP32 (its fused kernel)."""
    v = -(-model.vocab_size // 128) * 128 // tensor
    return (_mem("final norm", 2 * tokens * model.hidden_size, 2.0),
            _mm("logits", tokens, v, model.hidden_size, 2.0),
            _mem("cross entropy", 2 * tokens * v, 4.0))
