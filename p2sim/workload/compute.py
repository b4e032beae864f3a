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
  rotary, the MoE token dispatcher's router top-k, auxiliary loss, permutations and bookkeeping) with the bytes
  they move and the kernels they take.  :mod:`p2sim.workload.op_time` times them.

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
    kernels: int = 1  # kernels (and host-side calls) a memory-bound op issues: a fused kernel 1, a chain of small ones more
    backward: bool = True  # False: no gradient (the dispatcher's token counts and splits), nothing in the backward


def _mm(name: str, m: int, n: int, k: int, dtype_bytes: float, count: int = 1) -> Op:
    """A matrix multiply ``(m x k) @ (k x n)``, ``count`` times (operands and result moved once each)."""
    return Op(name, "matmul", 2.0 * m * n * k * count, dtype_bytes * (m * k + k * n + m * n) * count, m, n, k, count)


def _mem(name: str, elements: float, dtype_bytes: float, kernels: int = 1, backward: bool = True) -> Op:
    return Op(name, "memory", 0.0, elements * dtype_bytes, kernels=kernels, backward=backward)


# The MoE token dispatcher's kernels and host calls per layer forward, as Megatron-LM's alltoall dispatcher
# (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher, and moe_utils.py / router.py
# at NVIDIA/Megatron-LM d98e8a64) runs them with --moe-router-fusion and --moe-permute-fusion:
# the router's fused top-k with its score function (fused_topk_with_score_function): 1 kernel
ROUTER_TOPK_KERNELS = 1
# the auxiliary load-balancing loss: its scores (fused_compute_score_for_moe_aux_loss), the tokens per expert
# and the loss (fused_moe_aux_loss): 3 kernels
AUX_LOSS_KERNELS = 3
# preprocess(): routing_map.sum and .long(), the input splits' sum, the all-gather of the token counts over
# the tensor x expert group, the slice, three sums, then five device-to-host copies of the splits and counts
# (_maybe_dtoh_and_synchronize) and the host's wait on their event before the all-to-all: 8 + 5 + 1
DISPATCH_METADATA_KERNELS = 14
# permute() fused with the probabilities: the row-id map and the gather (fused_permute_with_probs)
PERMUTE_KERNELS = 2
# the all-to-alls of the tokens and of their probabilities (dispatch: 2) and of the expert outputs (combine: 1):
# NCCL calls the host issues, counted with the permutation beside them; their transfer is the expert axis's
# communication (p2sim.workload.step), not the layer's
DISPATCH_ALLTOALLS, COMBINE_ALLTOALLS = 2, 1


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
              sliding: bool = False, fused_permute: bool = False) -> tuple[Op, ...]:
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
    fused_permute : bool
        A MoE layer's token permutation fused into the dispatch and combine kernels (Megatron-LM's flex
        dispatcher with DeepEP or HybridEP): no permutation of its own; else the alltoall dispatcher's.
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
        ops.extend(_moe_dispatch_ops(m, b, norm_tokens if sequence_parallel else b, expert, act, "dispatch",
                                     fused_permute))
        routed = b * m.experts_per_token  # token-expert pairs of this rank's tokens, spread over the expert axis
        local = max(1, m.experts // expert)
        per_expert = max(1, routed // m.experts)  # tokens each expert gets, balanced, from one rank's tokens
        # each GPU's experts receive from the whole expert group: expert x per_expert tokens each
        rows = per_expert * expert
        w = m.expert_width // t
        ops.append(_mm("experts up", rows, glu * w, h, dtype_bytes, local))
        ops.append(_mem("activation", (glu + 1) * rows * local * w, act))
        ops.append(_mm("experts down", rows, h, w, dtype_bytes, local))
        ops.extend(_moe_dispatch_ops(m, b, norm_tokens if sequence_parallel else b, expert, act, "combine",
                                     fused_permute))
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


def _moe_dispatch_ops(model: ModelSpec, tokens: int, router_tokens: int, expert: int, act: float,
                      side: str, fused_permute: bool = False) -> tuple[Op, ...]:
    """The MoE token dispatcher's operations around the experts, as Megatron-LM's alltoall dispatcher runs them
    (the kernel counts above; balanced routing, ``--moe-router-force-load-balancing`` as the benchmarks run).

    ``side`` ``dispatch``: the router's GEMM (FP32, ``--moe-router-dtype fp32``) over the ``router_tokens`` this
    rank routes, its fused top-k (reads the FP32 logits, writes the FP32 probabilities and the one-byte routing
    map: ``9 x tokens x experts`` bytes), the auxiliary loss (reads the logits, writes its FP32 scores:
    ``8 x tokens x experts``), the dispatch's bookkeeping (reads the routing map; no gradient), the first
    permutation (each routed copy of a token read and written: ``2 x tokens x k x h`` elements) and, with more
    than one local expert, the sort of the received tokens by local expert (``sort_chunks_by_idxs``: the same
    rows read and written).  ``combine``: the unsort and the unpermutation, which reads each routed copy and
    writes the weighted sum of a token's copies (``(k + 1) x tokens x h`` elements).  The rows are this rank's
    ``tokens x k`` both ways: balanced routing sends as many to the expert group as it receives.

    ``fused_permute``: the flex dispatcher (DeepEP, HybridEP) writes the received tokens in expert order and
    reduces a token's copies inside its dispatch and combine kernels -- the expert axis's communication --: no
    permutation, sort, unsort or unpermutation of its own; the router and the bookkeeping stay.
    """
    m, h, e = model, model.hidden_size, model.experts
    routed = tokens * m.experts_per_token
    local = max(1, e // expert)
    ops: list[Op] = []
    if side == "dispatch":
        ops.append(_mm("router", router_tokens, e, h, 4.0))
        ops.append(_mem("router top-k", 9 * router_tokens * e, 1.0, ROUTER_TOPK_KERNELS))
        ops.append(_mem("aux loss", 8 * router_tokens * e, 1.0, AUX_LOSS_KERNELS))
        ops.append(_mem("dispatch metadata", router_tokens * e, 1.0, DISPATCH_METADATA_KERNELS, backward=False))
        if fused_permute:
            return tuple(ops)
        ops.append(_mem("permute", 2 * routed * h, act, PERMUTE_KERNELS + DISPATCH_ALLTOALLS))
        if local > 1:
            ops.append(_mem("sort by expert", 2 * routed * h, act))
    elif not fused_permute:
        if local > 1:
            ops.append(_mem("unsort", 2 * routed * h, act))
        ops.append(_mem("unpermute", (routed + tokens) * h, act, 1 + COMBINE_ALLTOALLS))
    return tuple(ops)


def head_ops(model: ModelSpec, *, tokens: int, tensor: int = 1, dtype_bytes: float = 2.0) -> tuple[Op, ...]:
    """The output layer and the loss of one micro-batch on the last stage (the logits' GEMM runs in BF16
    in Megatron-LM's FP8 recipes: TransformerEngine keeps the output layer out of FP8), with the
    cross-entropy's read and write of the logits in FP32 (its fused kernel)."""
    v = -(-model.vocab_size // 128) * 128 // tensor
    return (_mem("final norm", 2 * tokens * model.hidden_size, 2.0),
            _mm("logits", tokens, v, model.hidden_size, 2.0),
            _mem("cross entropy", 2 * tokens * v, 4.0))
