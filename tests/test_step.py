"""One training step's collectives against hand computation, for a dense and a MoE model; invariants; the table.

The hand computations are written out as numbers (not by calling the formulas under test): each line
says what it multiplies.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import p2sim
from p2sim.util.errors import InputError
from p2sim.workload.model_files import load_model
from p2sim.workload.step import OPS, PHASES, step_collectives
from p2sim.workload.step_table import bytes_by_axis, step_table
from p2sim.workload.training import TrainingSpec


def _rows(steps):
    return [(c.axes, c.op, c.phase, c.size, c.count) for c in steps]


def test_llama3_8b_at_tensor_8_pipeline_4_data_8_by_hand():
    steps = step_collectives(load_model("llama3-8b"), TrainingSpec(seq_length=8192, micro_batch=1, global_batch=64),
                             {"tensor": 8, "pipeline": 4, "data": 8})
    # micro-batches per step: 64 / (1 x 8) = 8; layers per stage: 32 / 4 = 8
    activation = 1 * 8192 * 4096 * 2  # b x s x h x bf16 = 67,108,864
    # the weights a rank holds: 8,030,261,248 / (8 x 4) = 250,945,664, reduced in fp32
    assert _rows(steps) == [
        (("tensor",), "AllReduce", "forward", 67_108_864, 128),  # 2 per layer x 8 layers x 8 micro-batches
        (("tensor",), "AllReduce", "backward", 67_108_864, 128),
        (("pipeline",), "SendRecv", "forward", 67_108_864, 8),  # activations, once per micro-batch
        (("pipeline",), "SendRecv", "backward", 67_108_864, 8),  # their gradients
        (("data",), "AllReduce", "backward", 1_003_782_656, 1),  # 250,945,664 x 4 bytes
    ]
    assert activation == 67_108_864
    assert sum(c.total_bytes for c in steps) == 2 * 128 * 67_108_864 + 2 * 8 * 67_108_864 + 1_003_782_656


def test_mixtral_8x7b_with_expert_parallel_8_by_hand():
    training = TrainingSpec(seq_length=4096, micro_batch=1, global_batch=64, sequence_parallel=True)
    steps = step_collectives(load_model("mixtral-8x7b"), training, {"tensor": 2, "pipeline": 2, "data": 2, "expert": 8})
    # micro-batches: 64 / (1 x 2 x 8) = 4; layers per stage 32 / 2 = 16, all MoE
    # sequence parallel: AllGather and ReduceScatter of the gathered 1 x 4096 x 4096 x 2 = 33,554,432 bytes,
    # 2 each per layer: 2 x 16 x 4 = 128
    # pipeline: the activation split over tensor, 33,554,432 / 2 = 16,777,216, once per micro-batch
    # AllToAll: 4096 / 2 = 2048 tokens per rank x top-2 x 4096 x 2 bytes = 33,554,432; dispatch and combine
    # per MoE layer: 2 x 16 x 4 = 128
    # dense weights: 46,702,792,704 - 45,097,156,608 (experts) = 1,605,636,096, / (2 x 2) = 401,409,024 per rank,
    # x 4 bytes = 1,605,636,096 over data x expert; routed experts: 45,097,156,608 / (2 x 2 x 8) = 1,409,286,144
    # per rank, x 4 = 5,637,144,576 over data only
    assert _rows(steps) == [
        (("tensor",), "AllGather", "forward", 33_554_432, 128),
        (("tensor",), "ReduceScatter", "forward", 33_554_432, 128),
        (("tensor",), "AllGather", "backward", 33_554_432, 128),
        (("tensor",), "ReduceScatter", "backward", 33_554_432, 128),
        (("pipeline",), "SendRecv", "forward", 16_777_216, 4),
        (("pipeline",), "SendRecv", "backward", 16_777_216, 4),
        (("expert",), "AllToAll", "forward", 33_554_432, 128),
        (("expert",), "AllToAll", "backward", 33_554_432, 128),
        (("data", "expert"), "AllReduce", "backward", 1_605_636_096, 1),
        (("data",), "AllReduce", "backward", 5_637_144_576, 1),
    ]


def test_context_zero3_interleaved_and_tied_embeddings_by_hand():
    training = TrainingSpec(seq_length=8192, global_batch=32, virtual_stages=2, schedule="interleaved",
                            data_parallel="zero3")
    steps = step_collectives(load_model("llama3-8b"), training, {"tensor": 8, "context": 2, "pipeline": 4, "data": 4})
    rows = _rows(steps)
    # micro-batches 32 / 4 = 8; each context rank holds 8192 / 2 = 4096 tokens
    # K and V: 4096 tokens x (8 kv heads x 128 / 8 tensor) x 2 bytes = 1,048,576 each; c - 1 = 1 ring step
    # per layer: 8 layers x 8 micro-batches = 64
    assert (("context",), "SendRecv", "forward", 2 * 1_048_576, 64) in rows
    assert (("context",), "SendRecv", "backward", 4 * 1_048_576, 64) in rows  # K, V, dK, dV
    # interleaved: 8 micro-batches x 2 virtual stages cross each boundary; 4096 x 4096 x 2 bytes
    assert (("pipeline",), "SendRecv", "forward", 33_554_432, 16) in rows
    # ZeRO-3 over data x context: 250,945,664 weights per rank, 8 layers: 31,368,208 per layer,
    # gathered in bf16 before forward and backward, gradients scattered in fp32; 8 layers x 8 micro-batches
    assert rows[-3:] == [(("data", "context"), "AllGather", "forward", 62_736_416, 64),
                         (("data", "context"), "AllGather", "backward", 62_736_416, 64),
                         (("data", "context"), "ReduceScatter", "backward", 125_472_832, 64)]
    # GPT-3 ties its embeddings: with pipeline > 1 the first and last stage reduce them, 50257 x 12288 / 8 x 4 bytes
    gpt = step_collectives(load_model("gpt3-175b"), TrainingSpec(seq_length=2048, data_parallel="zero1"),
                           {"tensor": 8, "pipeline": 8, "data": 2})
    assert (("pipeline",), "AllReduce", "optimizer", 308_779_008, 1) in _rows(gpt)
    assert [(c.op, c.phase) for c in gpt if c.axes == ("data",)] == [("ReduceScatter", "backward"),
                                                                      ("AllGather", "optimizer")]


def test_every_collective_is_an_op_and_phase_and_cites_its_source():
    training = TrainingSpec(seq_length=4096, global_batch=256, sequence_parallel=True, data_parallel="fsdp")
    for name in ("mixtral-8x7b", "llama3-70b"):
        model = load_model(name)
        axes = {"tensor": 2, "context": 2, "pipeline": 2, "data": 2} | ({"expert": 2} if model.is_moe else {})
        for c in step_collectives(model, training, axes):
            assert c.op in OPS and c.phase in PHASES and c.size > 0 and c.count > 0
            assert "et al." in c.source and c.formula
            assert c.to_json()["total_bytes"] == c.size * c.count
    assert step_collectives(load_model("llama3-8b"), TrainingSpec(), {}) == ()  # one device: nothing to say


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["llama3-8b", "llama3-70b", "mixtral-8x7b", "gpt3-175b"]),
       tensor=st.sampled_from([1, 2, 4, 8]), pipeline=st.sampled_from([1, 2, 4, 8]),
       data=st.integers(2, 6), expert=st.sampled_from([1, 2, 4, 8]))
def test_data_gradients_over_every_model_parallel_rank_are_all_the_weights(name, tensor, pipeline, data, expert):
    model = load_model(name)
    if not model.is_moe:
        expert = 1
    training = TrainingSpec(seq_length=2048, sequence_parallel=True, grad_dtype="fp32")
    steps = step_collectives(model, training, {"tensor": tensor, "pipeline": pipeline, "data": data, "expert": expert})
    dense = sum(c.size for c in steps if c.axes == ("data", "expert") or (c.axes == ("data",) and expert == 1))
    experts = sum(c.size for c in steps if c.axes == ("data",) and expert > 1)
    # a rank holds 1/(t x p) of the dense weights, 1/(t x p x e) of the experts; the largest shard when uneven
    dense_all, expert_all = dense * tensor * pipeline, experts * tensor * pipeline * expert
    if expert == 1:
        assert 0 <= dense_all - 4 * model.parameter_count < 2 * 4 * tensor * pipeline  # two shards, each rounded up
    else:
        assert 0 <= dense_all - 4 * model.dense_parameters < 4 * tensor * pipeline
        assert 0 <= expert_all - 4 * model.expert_parameters < 4 * tensor * pipeline * expert


@settings(max_examples=30, deadline=None)
@given(micro_batches=st.integers(1, 16), tensor=st.sampled_from([2, 4, 8]), seq=st.sampled_from([2048, 4096, 8192]),
       sp=st.booleans(), expert=st.sampled_from([2, 4, 8]))
def test_doubling_micro_batches_doubles_every_per_micro_batch_volume(micro_batches, tensor, seq, sp, expert):
    model = load_model("mixtral-8x7b") if sp else load_model("llama3-70b")
    axes = {"tensor": tensor, "pipeline": 2, "data": 2} | ({"expert": expert} if sp else {})
    per_step = 2 * (expert if sp else 1)

    def volumes(m: int) -> dict[str, int]:
        t = TrainingSpec(seq_length=seq, global_batch=m * per_step, sequence_parallel=sp)
        return bytes_by_axis(step_collectives(model, t, axes))

    one, two = volumes(micro_batches), volumes(2 * micro_batches)
    for axis in ("tensor", "pipeline") + (("expert",) if sp else ()):
        assert two[axis] == 2 * one[axis]
    for axis in [a for a in one if a.startswith("data")]:
        assert two[axis] == one[axis]  # the gradients are reduced once per step


def test_the_table_and_the_api():
    text = p2sim.step_table(model="mixtral-8x7b", axes="data=4,expert=8")
    lines = text.splitlines()
    assert lines[0].split() == ["axis", "op", "phase", "size", "count", "per", "step", "formula"]
    # Mixtral's published 32k context (its preset), as plan --model takes it
    assert lines[1].split()[:6] == ["expert", "AllToAll", "forward", "512", "MiB", "64"]
    assert lines[-1] == "per step: expert 64 GiB, data+expert 5.981 GiB, data 21 GiB"
    assert step_table(()).endswith("no communication (every axis has size 1)")
    with pytest.raises(InputError, match="axes: tensor=3 should divide"):
        p2sim.step_table(model="llama3-8b", axes={"tensor": 3})
    with pytest.raises(InputError, match="should name each axis"):
        p2sim.step_table(model="llama3-8b", axes="8,4")


@pytest.mark.parametrize("train, says", [
    # a buffer above 1 PiB, as --bytes refuses one
    (TrainingSpec(seq_length=10**15), "llama3-8b: the step's AllReduce over tensor (forward; b*s/c*h*B; 2*L/p*m) is "
                                      "7.28e+03 PiB per call, more than 1 PiB"),
    # buffers each below it, a step's count of them above it
    (TrainingSpec(global_batch=10**15), "llama3-8b: the step's AllReduce over tensor (forward; b*s/c*h*B; 2*L/p*m) is "
                                        "16000000000000000 calls of 32 MiB, 4.77e+08 PiB per step"),
])
def test_a_derived_size_above_a_pebibyte_is_refused_naming_the_settings(train, says):
    with pytest.raises(InputError) as e:
        step_collectives(load_model("llama3-8b"), train, {"tensor": 8, "data": 2, "pipeline": 2})
    assert says in str(e.value) and "seq_length=" in str(e.value) and "global_batch=" in str(e.value), str(e.value)


def test_the_table_counts_a_presets_step_as_plan_does_and_takes_plans_training_forms():
    """Issue 43: step_table ignored a preset's published sequence length and batch (its counts 1,000x below
    plan's for the same model) and refused --train's text form, which plan takes."""
    from p2sim.studies.step_workload import step_workload
    from p2sim.workload import render_step

    work = step_workload("llama3-405b", None, ["tensor", "pipeline", "data"], [8, 2, 16])
    assert p2sim.step_table(model="llama3-405b", axes="tensor=8,pipeline=2,data=16") == render_step(work.collectives)
    axes = "tensor=8,pipeline=4,data=8"
    assert work.training.seq_length == 8192 and work.training.global_batch == 2048  # the preset's published
    spec = TrainingSpec(seq_length=8192, global_batch=64)
    table = p2sim.step_table(model="llama3-8b", axes=axes, training=spec)
    assert p2sim.step_table(model="llama3-8b", axes=axes, training="seq=8192,global_batch=64") == table
    assert p2sim.step_table(model="llama3-8b", axes=axes, training={"seq": 8192, "global_batch": 64}) == table
    with pytest.raises(InputError, match="train: 'sq' is not a training setting"):
        p2sim.step_table(model="llama3-8b", axes=axes, training="sq=8192")
