"""The compute of a step: Megatron-LM's model FLOPs by hand, and the layer operations agreeing with them."""

import pytest

from p2sim.workload.compute import head_ops, layer_kinds, layer_ops, model_flops, model_flops_per_token
from p2sim.workload.model_files import load_model
from p2sim.workload.model_spec import ModelSpec

TINY = ModelSpec(name="tiny", source="test", hidden_size=64, num_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, intermediate_size=128, vocab_size=1000)


def test_tiny_dense_model_flops_by_hand():
    # per token, s = 32: MLP 12 h (1.5 f) L = 12 x 64 x 192 x 2; attention 6 L (h (q + 2 kv) + q s + q h)
    # = 6 x 2 x (64 x 128 + 64 x 32 + 64 x 64); logits 6 h V with V padded to 1024
    mlp = 12 * 64 * 192 * 2
    attention = 6 * 2 * (64 * 128 + 64 * 32 + 64 * 64)
    logits = 6 * 64 * 1024
    assert model_flops_per_token(TINY, 32) == mlp + attention + logits == 860160
    assert model_flops(TINY, 32, 3) == 860160 * 32 * 3


def test_llama3_8b_is_six_n_plus_attention():
    m = load_model("llama3-8b")
    s = 8192
    # 6 x (parameters less the input embedding) + 6 x L x q x s (causal QK^T and AV)
    approx = 6 * (m.parameter_count - m.vocab_size * m.hidden_size) + 6 * 32 * 4096 * s
    assert model_flops_per_token(m, s) == pytest.approx(approx, rel=0.002)
    assert model_flops_per_token(m, s) / 1e9 == pytest.approx(51.47, abs=0.01)  # dev rows D01-D27: 51.46-51.48


@pytest.mark.parametrize("name, seq, published", [
    # Megatron-Bridge 25.11's TFLOP/s per GPU over tokens/s per GPU (step_times_dev.csv): GFLOP per token
    ("llama3-70b", 8192, 449.1), ("llama3-405b", 8192, 2524.5), ("qwen3-30b-a3b", 4096, 23.02),
    ("qwen3-235b-a22b", 4096, 148.0), ("gpt-oss-120b", 8192, 30.8), ("deepseek-v3", 4096, 260.4)])
def test_model_flops_match_the_published_counts(name, seq, published):
    assert model_flops_per_token(load_model(name), seq) / 1e9 == pytest.approx(published, rel=0.002)


@pytest.mark.parametrize("tensor", [1, 2, 4])
def test_layer_operations_add_up_to_the_model_flops(tensor):
    m = load_model("llama3-8b")
    s = 4096
    fwd = sum(op.flops for kind in layer_kinds(m) for op in layer_ops(m, kind, tokens=s, seq_length=s, tensor=tensor))
    fwd += sum(op.flops for op in head_ops(m, tokens=s, tensor=tensor))
    # forward + backward = 3 x forward in Megatron's count (attention's core too)
    assert 3 * fwd * tensor == pytest.approx(model_flops_per_token(m, s) * s, rel=1e-9)


def test_moe_layer_spreads_routed_tokens_over_the_expert_axis():
    m = load_model("qwen3-30b-a3b")
    one = {op.name: op for op in layer_ops(m, "moe", tokens=4096, seq_length=4096)}
    eight = {op.name: op for op in layer_ops(m, "moe", tokens=4096, seq_length=4096, expert=8)}
    # the same expert FLOPs per GPU: 1/8 of the experts, 8 ranks' tokens
    assert eight["experts up"].flops == one["experts up"].flops
    assert eight["experts up"].count == 16 and one["experts up"].count == 128
    assert one["experts up"].flops == 2 * 4096 * 8 * 2 * 768 * 2048


def test_deepseek_dense_first_layers_and_mla():
    m = load_model("deepseek-v3")
    kinds = layer_kinds(m)
    assert kinds[:3] == ("dense",) * 3 and set(kinds[3:]) == {"moe"}
    ops = {op.name for op in layer_ops(m, "moe", tokens=4096, seq_length=4096)}
    assert {"q down", "q up", "kv down", "kv up", "shared up"} <= ops and "qkv" not in ops


def test_sliding_window_layers_attend_to_the_window():
    m = load_model("gpt-oss-120b")
    full = next(op for op in layer_ops(m, "moe", tokens=8192, seq_length=8192) if op.kind == "attention")
    window = next(op for op in layer_ops(m, "moe", tokens=8192, seq_length=8192, sliding=True) if op.kind == "attention")
    assert full.flops / window.flops == pytest.approx(4096 / 128)


TINY_MOE = ModelSpec(name="tiny-moe", source="test", hidden_size=64, num_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, intermediate_size=128, vocab_size=1000, moe_intermediate_size=32,
                     experts=8, experts_per_token=2)


def test_moe_dispatcher_bytes_and_kernels_by_hand():
    """Megatron-LM's alltoall dispatcher around the experts: 100 tokens, h 64, 8 experts top-2, expert axis 2
    (4 local experts): 200 routed rows each way."""
    ops = {op.name: op for op in layer_ops(TINY_MOE, "moe", tokens=100, seq_length=100, expert=2)}
    # router GEMM in FP32: 2 x 100 x 8 x 64 FLOPs, (100 x 64 + 64 x 8 + 100 x 8) x 4 bytes
    assert ops["router"].flops == 2 * 100 * 8 * 64 and ops["router"].bytes == (6400 + 512 + 800) * 4
    # fused top-k: FP32 logits read, FP32 probabilities and the 1-byte routing map written: 9 x 100 x 8
    assert ops["router top-k"].bytes == 7200 and ops["router top-k"].kernels == 1
    # the auxiliary loss: logits read, FP32 scores written: 8 x 100 x 8; 3 kernels
    assert ops["aux loss"].bytes == 6400 and ops["aux loss"].kernels == 3
    # bookkeeping: the routing map read (800 bytes), 8 kernels, 5 copies to the host and the host's wait; no gradient
    assert ops["dispatch metadata"].bytes == 800 and ops["dispatch metadata"].kernels == 14
    assert not ops["dispatch metadata"].backward
    # permutation: each of the 200 routed rows read and written in BF16: 2 x 200 x 64 x 2; its 2 kernels and the
    # 2 all-to-alls (tokens, probabilities)
    assert ops["permute"].bytes == 51200 and ops["permute"].kernels == 4
    # 4 local experts: the received rows sorted by expert and unsorted after: 51200 each
    assert ops["sort by expert"].bytes == ops["unsort"].bytes == 51200
    # unpermutation: 200 rows read, 100 tokens written: (200 + 100) x 64 x 2; with the combine's all-to-all
    assert ops["unpermute"].bytes == 38400 and ops["unpermute"].kernels == 2
    names = [op.name for op in layer_ops(TINY_MOE, "moe", tokens=100, seq_length=100, expert=2)]
    assert names.index("sort by expert") < names.index("experts up") < names.index("unsort") < names.index("unpermute")


def test_one_local_expert_needs_no_sort():
    names = {op.name for op in layer_ops(TINY_MOE, "moe", tokens=100, seq_length=100, expert=8)}
    assert "permute" in names and "unpermute" in names
    assert "sort by expert" not in names and "unsort" not in names


def test_router_runs_on_the_sequence_parallel_share():
    ops = {op.name: op for op in layer_ops(TINY_MOE, "moe", tokens=100, seq_length=100, tensor=4,
                                          sequence_parallel=True)}
    assert ops["router top-k"].bytes == 9 * 25 * 8 and ops["aux loss"].bytes == 8 * 25 * 8


def test_flex_dispatcher_fuses_the_permutation_into_its_communication():
    """DeepEP and HybridEP write the received tokens in expert order and sum a token's copies in their
    dispatch and combine kernels: no permutation of the layer's own; the router and the bookkeeping stay."""
    alltoall = {op.name for op in layer_ops(TINY_MOE, "moe", tokens=100, seq_length=100, expert=2)}
    flex = {op.name for op in layer_ops(TINY_MOE, "moe", tokens=100, seq_length=100, expert=2, fused_permute=True)}
    assert alltoall - flex == {"permute", "sort by expert", "unsort", "unpermute"}
    assert {"router", "router top-k", "aux loss", "dispatch metadata", "experts up", "experts down"} <= flex
