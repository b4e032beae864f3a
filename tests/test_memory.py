"""Memory per GPU: hand-computed weights, gradients, optimizer states and activations; the refusal."""

import pytest

from p2sim.util.errors import InputError
from p2sim.workload.memory import (GIB, RESERVED, activation_bytes_per_layer, check_fits, held_micro_batches,
                                   in_flight, memory_per_gpu)
from p2sim.workload.model_spec import ModelSpec

TINY = ModelSpec(name="tiny", source="test", hidden_size=64, num_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, intermediate_size=128, vocab_size=1000)


def test_tiny_activations_by_hand():
    # per token, one layer, t = 1: norms' inputs and outputs 4h, Q 64, K+V 64, attention output 64, its
    # statistics 2 x 4 heads; MLP gate+up 256 and activation 128: 2 bytes each
    per_token = 4 * 64 + 64 + 64 + 64 + 8 + 256 + 128
    assert activation_bytes_per_layer(TINY, "dense", tokens=1, tensor=1, sp=False) == 2 * per_token
    # full recompute keeps the layer's input only; sequence parallelism splits it over tensor
    assert activation_bytes_per_layer(TINY, "dense", tokens=10, tensor=2, sp=True, recompute="full") == 2 * 10 * 32


def test_tiny_states_by_hand():
    u = memory_per_gpu(TINY, seq_length=16, micro_batch=1, micro_batches=4, data=2, data_parallel="zero1")
    params = TINY.parameter_count
    assert u.weights == 2 * params and u.gradients == 4 * params
    assert u.optimizer == 12 * params / 2  # the distributed optimizer: Adam's 12 bytes over the data ranks
    assert u.reserved == RESERVED
    z3 = memory_per_gpu(TINY, seq_length=16, micro_batch=1, micro_batches=4, data=2, data_parallel="zero3")
    # ZeRO-3: its shard of every weight, and a layer's share gathered in full with the next one prefetched
    assert z3.gradients == 4 * params / 2 and z3.weights == 2 * params / 2 + 2 * 2 * params / 4
    ddp = memory_per_gpu(TINY, seq_length=16, micro_batch=1, micro_batches=4, data=2, data_parallel="ddp")
    assert ddp.optimizer == 12 * params


def test_micro_batches_in_flight():
    assert in_flight(4, 16) == 4 and in_flight(4, 2) == 2
    assert in_flight(4, 16, 2) == 4 + 3 / 2  # Megatron-LM's interleaved warm-up
    assert held_micro_batches(4, 16, 1, 3) == 1 and held_micro_batches(1, 16, 1, 0) == 1


def test_a_step_that_does_not_fit_is_refused_with_its_figure():
    u = memory_per_gpu(TINY, seq_length=16, micro_batch=1, micro_batches=4)
    with pytest.raises(InputError, match=r"tiny: needs 4\.0 GiB per GPU on pipeline stage 0, more than the GPU's 1\.0 GiB"):
        check_fits(u, 1.0, "tiny")
    check_fits(u, 80.0, "tiny")
    assert u.total / GIB == pytest.approx(4.0, abs=0.01)


from hypothesis import given, settings, strategies as st  # noqa: E402

from p2sim.workload.model_files import load_model  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(t=st.sampled_from([1, 2, 4, 8]), p=st.sampled_from([1, 2, 4]), mode=st.sampled_from(["zero1", "zero3"]))
def test_more_tensor_or_pipeline_never_needs_more_memory(t, p, mode):
    m = load_model("llama3-8b")
    def total(tensor, pipeline):
        return memory_per_gpu(m, seq_length=4096, micro_batch=1, micro_batches=16, tensor=tensor, pipeline=pipeline,
                              data=2, sp=True, data_parallel=mode).total
    assert total(2 * t, p) <= total(t, p) if 2 * t <= 8 else True
    assert total(t, 2 * p) <= total(t, p) * 1.0001


def test_offloading_n_layers_keeps_one_of_them_in_flight():
    """Activation offloading: the first N layers' activations wait in host memory, less one in flight; every dense
    layer of a model keeps the same bytes, so N offloaded layers free exactly N - 1 layers' activations."""
    from p2sim.workload.memory import offloaded_bytes
    m = load_model("llama3-8b")
    kw = dict(seq_length=4096, micro_batch=1, micro_batches=4, data=8, data_parallel="fsdp")
    layer = activation_bytes_per_layer(m, "dense", tokens=4096, tensor=1, sp=False)
    base = memory_per_gpu(m, **kw)
    for n in (1, 2, 10):
        got = memory_per_gpu(m, **kw, offload=n)
        assert base.activations - got.activations == pytest.approx((n - 1) * layer)
        assert offloaded_bytes(m, range(n), tokens=4096, tensor=1, sp=False) == pytest.approx(n * layer)
