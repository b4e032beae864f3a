from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from p2sim.workload.configurations import candidates, divisors
from p2sim.workload.model_files import load_model
from p2sim.workload.model_spec import ModelSpec
from p2sim.workload.training import TrainingSpec, fit
from p2sim.util.errors import InputError

TINY = ModelSpec(name="tiny", source="test", hidden_size=64, num_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, intermediate_size=128, vocab_size=1000)


def test_a_tiny_model_on_four_gpus_by_hand():
    """4 GPUs, 2 query groups (tensor 1 or 2), 4 layers, global batch 4, sequence 8 (context 1, 2 or 4).

    tensor 1: context 1 -> pipeline 1 (data 4: mbs 1), 2 (data 2: mbs 1 with vp 1 or 2, mbs 2 with vp 1 --
    vp 2 needs the micro-batches to be a multiple of the 2 stages), 4 (data 1: mbs 1, 2, 4; one layer a
    stage leaves no virtual stages); context 2 -> pipeline 1 (data 2: mbs 1, 2), 2 (data 1: mbs 1, 2 with
    vp 1 or 2, mbs 4 with vp 1); context 4 -> data 1: mbs 1, 2, 4.  tensor 2 (with sequence parallelism):
    context 1 -> pipeline 1 (data 2: mbs 1, 2), 2 (as tensor 1's: 5); context 2 -> data 1: mbs 1, 2, 4."""
    t = TrainingSpec(seq_length=8, global_batch=4)
    cs = candidates(TINY, 4, t, tensor_limit=2, max_micro_batch=4)
    count = {}
    for c in cs:
        key = (c.axes["tensor"], c.axes["context"], c.axes["pipeline"])
        count[key] = count.get(key, 0) + 1
    assert count == {(1, 1, 1): 1, (1, 1, 2): 3, (1, 1, 4): 3, (1, 2, 1): 2, (1, 2, 2): 5, (1, 4, 1): 3,
                     (2, 1, 1): 2, (2, 1, 2): 5, (2, 2, 1): 3}
    assert len(cs) == 27


def test_every_candidate_fits_and_fills_the_gpus_and_the_order_is_fixed():
    t = TrainingSpec(seq_length=8192, global_batch=128)
    model = load_model("llama3-70b")
    cs = candidates(model, 64, t, tensor_limit=8)
    assert cs == candidates(model, 64, t, tensor_limit=8)
    for c in cs:
        assert math.prod(c.axes.values()) == 64 and c.axes["tensor"] <= 8
        assert c.training.sequence_parallel == (c.axes["tensor"] > 1)
        fit(model, c.training, c.axes)  # raises if Megatron-LM's rules refuse it
    keys = [(c.axes["tensor"], c.axes["context"], c.axes["pipeline"], c.axes["expert"], c.virtual_stages,
             c.micro_batch) for c in cs]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_the_expert_axis_splits_only_a_moe_models_experts():
    t = TrainingSpec(seq_length=4096, global_batch=64)
    dense = candidates(load_model("llama3-8b"), 8, t, tensor_limit=8)
    assert {c.axes["expert"] for c in dense} == {1}
    moe = candidates(load_model("mixtral-8x7b"), 8, t, tensor_limit=8)
    assert {c.axes["expert"] for c in moe} == {1, 2, 4, 8}


def test_a_search_needs_a_global_batch_and_something_that_fits():
    with pytest.raises(InputError, match="give the global batch"):
        candidates(TINY, 4, TrainingSpec(seq_length=8), tensor_limit=2)
    with pytest.raises(InputError, match="no configuration of tiny fits 7 GPUs"):
        candidates(TINY, 7, TrainingSpec(seq_length=8, global_batch=4), tensor_limit=2)
    with pytest.raises(InputError, match="search: gpus: 0 should be a positive integer"):
        candidates(TINY, 0, TrainingSpec(seq_length=8, global_batch=4), tensor_limit=2)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3000))
def test_divisors_are_every_divisor_ascending(n):
    assert divisors(n) == [d for d in range(1, n + 1) if n % d == 0]


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([4, 8, 16, 32]), st.sampled_from([8, 16, 32, 64]))
def test_a_larger_batch_never_removes_a_configuration(gpus, batch):
    """Every configuration that divides a global batch also divides twice that batch (only the micro-batch
    count doubles, and with it its multiples of the stages)."""
    t = TrainingSpec(seq_length=64, global_batch=batch)
    small = {c.label for c in candidates(TINY, gpus, t, tensor_limit=4)}
    large = {c.label for c in candidates(TINY, gpus, TrainingSpec(seq_length=64, global_batch=2 * batch),
                                         tensor_limit=4)}
    assert small <= large


@pytest.mark.parametrize("model,gpus,seq,batch,axes,vp", [
    # Megatron-Bridge 25.11 (validation/step_times/): Llama 3.1 405B on 1,024 H100 (row D29), TP 8, PP 8, CP 2, VP 8
    ("llama3-405b", 1024, 8192, 512, {"tensor": 8, "context": 2, "pipeline": 8, "data": 8}, 8),
    # DeepSeek-V3 on 256 B200 (row D23): PP 16 over 61 layers (uneven), EP 8 out of the data-parallel 16
    ("deepseek-v3", 256, 4096, 2048, {"tensor": 1, "context": 1, "pipeline": 16, "expert": 8, "data": 2}, 1),
])
def test_the_published_configurations_are_candidates(model, gpus, seq, batch, axes, vp):
    cs = candidates(load_model(model), gpus, TrainingSpec(seq_length=seq, global_batch=batch), tensor_limit=8)
    want = {"tensor": 1, "context": 1, "pipeline": 1, "expert": 1, "data": 1} | axes
    assert any(dict(c.axes) == want and c.virtual_stages == vp and c.micro_batch == 1 for c in cs)
