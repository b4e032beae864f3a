"""Training settings: each checked on its own, then against a model and the axes' sizes (Megatron-LM's rules)."""

from __future__ import annotations

import pytest

from p2sim.util.errors import InputError
from p2sim.workload.model_files import load_model
from p2sim.workload.training import TrainingSpec, axis_sizes, fit


def test_defaults_are_megatrons():
    t = TrainingSpec()
    assert (t.param_bytes, t.grad_bytes, t.schedule, t.data_parallel, t.sequence_parallel) == (2, 4, "1f1b", "ddp", False)
    # --global-batch-size unset: one micro-batch per data-parallel rank
    f = fit(load_model("llama3-8b"), t, {"data": 16})
    assert f.micro_batches == 1 and f.tokens == 4096


def test_micro_batches_are_global_over_micro_data_and_expert():
    t = TrainingSpec(micro_batch=2, global_batch=1024)
    assert fit(load_model("llama3-8b"), t, {"data": 8, "tensor": 8}).micro_batches == 64  # 1024 / (2 x 8)
    # the expert axis splits the batch as data does (GShard): 1024 / (2 x 4 x 8)
    assert fit(load_model("mixtral-8x7b"), t, {"data": 4, "expert": 8}).micro_batches == 16
    # context splits the sequence, not the batch
    f = fit(load_model("llama3-8b"), TrainingSpec(seq_length=8192, global_batch=16), {"data": 4, "context": 4})
    assert (f.micro_batches, f.tokens) == (4, 2048)


def test_the_stage_with_most_moe_layers_counts():
    ds = load_model("deepseek-v3")  # 61 layers, the first 3 dense
    assert fit(ds, TrainingSpec(), {}).moe_layers_per_stage == 58
    assert fit(ds, TrainingSpec(), {"pipeline": 61}).moe_layers_per_stage == 1
    mixtral = load_model("mixtral-8x7b")
    t = TrainingSpec(virtual_stages=2, schedule="interleaved", global_batch=8)
    assert fit(mixtral, t, {"pipeline": 4}).moe_layers_per_stage == 8
    assert fit(load_model("llama3-8b"), TrainingSpec(), {"pipeline": 4}).moe_layers_per_stage == 0


@pytest.mark.parametrize("settings, says", [
    ({"seq_length": 0}, "training: seq_length: 0 should be a positive integer"),
    ({"micro_batch": 1.5}, "training: micro_batch: 1.5 should be a positive integer"),
    ({"global_batch": True}, "training: global_batch: True should be a positive integer"),
    ({"param_dtype": "fp8"}, "training: param_dtype: 'fp8' should be one of bf16, fp16, fp32"),
    ({"grad_dtype": "int8"}, "training: grad_dtype: 'int8' should be one of bf16, fp16, fp32"),
    ({"data_parallel": "zero4"}, "training: data_parallel: 'zero4' should be one of ddp, zero1, zero2, zero3, fsdp"),
    ({"schedule": "gpipe"}, "training: schedule: 'gpipe' should be one of 1f1b, interleaved"),
    ({"schedule": "interleaved"}, "training: schedule: interleaved with virtual_stages=1"),
    ({"virtual_stages": 2}, "training: schedule: 1f1b with virtual_stages=2"),
    ({"sequence_parallel": "yes"}, "training: sequence_parallel: 'yes' should be true or false"),
])
def test_a_bad_setting_is_one_line_naming_it(settings, says):
    with pytest.raises(InputError) as e:
        TrainingSpec(**settings)
    assert str(e.value).startswith(says) and "\n" not in str(e.value)


@pytest.mark.parametrize("model, settings, axes, says", [
    ("llama3-8b", {"global_batch": 100}, {"data": 8},
     "training: global_batch: 100 should be a multiple of micro_batch x data x expert = 1 x 8 x 1 = 8"),
    ("llama3-8b", {"global_batch": 64}, {"pipeline": 64},
     "llama3-8b: num_layers: 32 on pipeline x virtual_stages = 64 x 1: 32 layers cannot fill 64 pipeline chunks"),
    ("llama3-8b", {}, {"tensor": 3}, "axes: tensor=3 should divide num_attention_heads (32) of llama3-8b"),
    ("llama3-8b", {}, {"tensor": 16}, "axes: tensor=16 should divide num_key_value_heads (8) of llama3-8b"),
    ("mixtral-8x7b", {}, {"expert": 3}, "axes: expert=3 should divide the routed experts (8) of mixtral-8x7b"),
    ("llama3-8b", {}, {"expert": 2}, "axes: expert=2 should divide the routed experts (0) of llama3-8b"),
    ("mixtral-8x7b", {}, {"tensor": 2}, "training: sequence_parallel: false with tensor=2 and experts"),
    ("llama3-8b", {"seq_length": 1000}, {"context": 8}, "training: seq_length: 1000 should be a multiple of 2 x context = 16"),
    ("llama3-8b", {"seq_length": 4100, "sequence_parallel": True}, {"tensor": 8},
     "training: seq_length: 4100 / context 1 should be a multiple of tensor=8"),
    ("llama3-8b", {"virtual_stages": 2, "schedule": "interleaved", "global_batch": 6}, {"pipeline": 4},
     "training: global_batch: 6 gives 6 micro-batches per step, not a multiple of pipeline=4"),
    ("llama3-8b", {}, {"dp": 8}, "axes: 'dp' is not an axis a training step uses (one of tensor, context, pipeline"),
    ("llama3-8b", {}, {"data": 0}, "axes: data=0 should be a positive integer"),
])
def test_a_setting_that_does_not_fit_is_one_line(model, settings, axes, says):
    with pytest.raises(InputError) as e:
        fit(load_model(model), TrainingSpec(**settings), axes)
    assert str(e.value).startswith(says) and "\n" not in str(e.value), str(e.value)


def test_axes_as_text_must_be_named():
    assert axis_sizes("tensor=8,data=4") == {"tensor": 8, "data": 4} == axis_sizes({"tensor": 8, "data": 4})
    with pytest.raises(InputError, match="axes: '8,4' should name each axis"):
        axis_sizes("8,4")
    with pytest.raises(InputError, match="axes: 8 is not a text or a mapping"):
        axis_sizes(8)  # type: ignore[arg-type]


@pytest.mark.parametrize("model, pipeline, virtual, most", [
    ("llama3-405b", 16, 1, 8),     # 126 layers + embedding + loss = 128 = 16 x 8: Meta's and Megatron-Bridge's split
    ("llama3-405b", 8, 8, 16),
    ("deepseek-v3", 16, 1, 4),     # 61 layers on 16 stages: 3, 4 x 14, 2
    ("llama3-8b", 3, 1, 12),       # 32 + 2 over 3: 11 each and one more in the middle: 10, 12, 10
])
def test_uneven_stages_are_accepted_as_megatron_splits_them(model, pipeline, virtual, most):
    settings = {"virtual_stages": virtual, "schedule": "interleaved" if virtual > 1 else "1f1b",
                "global_batch": 8 * pipeline}
    f = fit(load_model(model), TrainingSpec(**settings), {"pipeline": pipeline})
    assert f.layers_per_stage == most


def test_even_stages_keep_their_layer_counts():
    f = fit(load_model("deepseek-v3"), TrainingSpec(global_batch=8), {"pipeline": 1})
    assert (f.layers_per_stage, f.moe_layers_per_stage) == (61, 58)
    f = fit(load_model("llama3-70b"), TrainingSpec(global_batch=64, virtual_stages=5, schedule="interleaved"),
            {"pipeline": 8})
    assert f.layers_per_stage == 10


def test_moe_layers_per_stage_is_counted_as_the_stages_hold_them():
    """The count (not a list of every layer: a model's layers may be many) against the layers listed."""
    from dataclasses import replace

    from p2sim.workload.training import Fit

    base = load_model("mixtral-8x7b")
    for layers in range(1, 25):
        for p in (d for d in range(1, layers + 1) if layers % d == 0):
            for v in (d for d in range(1, layers // p + 1) if layers % (p * d) == 0):
                for dense in range(layers):
                    f = Fit(replace(base, num_layers=layers, first_dense_layers=dense),
                            TrainingSpec(virtual_stages=v, schedule="interleaved" if v > 1 else "1f1b"),
                            1, 1, p, 1, 1, 1)
                    chunk = layers // (p * v)
                    listed = max(sum(layer >= dense for j in range(v)
                                     for layer in range((j * p + r) * chunk, (j * p + r + 1) * chunk))
                                 for r in range(p))
                    assert f.moe_layers_per_stage == listed, (layers, p, v, dense)
    # 2^40 layers of a tiny MoE: counted at once (listing them never ended)
    tiny = replace(base, hidden_size=1, num_attention_heads=1, num_key_value_heads=1, intermediate_size=1,
                   vocab_size=1, num_layers=2**40, first_dense_layers=3, experts=1, experts_per_token=1)
    f = Fit(tiny, TrainingSpec(), 1, 1, 2**10, 1, 1, 1)
    assert f.moe_layers_per_stage == 2**30


@pytest.mark.parametrize("field", ["seq_length", "micro_batch", "global_batch", "virtual_stages"])
def test_a_setting_no_step_has_is_refused(field):
    with pytest.raises(InputError, match=f"training: {field}: {10**20} is more than 2\\^50: no training step"):
        TrainingSpec(**{field: 10**20})


def test_a_wrong_argument_is_named_by_what_it_is_not_its_repr():
    m = load_model("llama3-8b")
    with pytest.raises(InputError) as e:
        fit(m, "seq=8192", {"data": 2})
    assert str(e.value) == ("training: 'seq=8192' is no TrainingSpec (for llama3-8b; training_of reads --train's "
                            "KEY=VALUE text)")
    with pytest.raises(InputError, match="^model: a str is no ModelSpec"):
        fit("llama3-8b", TrainingSpec(), {"data": 2})


def test_split_step_settings_in_every_form():
    from p2sim.workload.train_text import StepSettings, split_step_settings
    assert split_step_settings("seq=4096,recompute=full,dtype=fp8,tp_overlap=on") == (
        "seq=4096,dtype=bf16", StepSettings(fp8=True, recompute="full", tp_overlap=True))
    assert split_step_settings({"seq": 4096, "dtype": "fp8"}) == ("seq=4096,dtype=bf16", StepSettings(fp8=True))
    assert split_step_settings({"seq": 4096}) == ({"seq": 4096}, StepSettings())  # as it was
    assert split_step_settings(None) == (None, StepSettings())
    assert split_step_settings("recompute=full") == (None, StepSettings(recompute="full"))
    with pytest.raises(InputError, match="recompute: 'some'"):
        split_step_settings("recompute=some")


def test_dispatcher_setting():
    from p2sim.workload.train_text import StepSettings, split_step_settings, step_settings
    assert step_settings("dispatcher=hybridep")[1] == StepSettings(dispatcher="hybridep")
    assert split_step_settings({"seq": 4096, "dispatcher": "deepep"})[1].dispatcher == "deepep"
    with pytest.raises(InputError, match="dispatcher: 'nccl' should be one of alltoall, deepep, hybridep"):
        step_settings("dispatcher=nccl")


@pytest.mark.parametrize("text", ["", " , ", ","])
def test_step_settings_leave_an_empty_train_to_be_refused(text):
    """--train ' , ' says nothing: it goes on to training_of, which refuses it (plan took it as the defaults)."""
    from p2sim.workload.train_text import split_step_settings, training_of
    rest, _ = split_step_settings(text)
    with pytest.raises(InputError, match="gives no setting"):
        training_of(rest)


def test_tp_overlap_takes_sps_words_and_the_apis_bools():
    from p2sim.workload.train_text import split_step_settings, step_settings
    assert step_settings("tp_overlap=true")[1].tp_overlap is True
    assert step_settings("tp_overlap=0")[1].tp_overlap is False
    assert split_step_settings({"seq": 4096, "tp_overlap": True})[1].tp_overlap is True


@pytest.mark.parametrize("text", ["recompute=full,recompute=none", "tp_overlap=on,tp_overlap=off",
                                  "dispatcher=deepep,dispatcher=alltoall"])
def test_a_step_setting_given_twice_is_refused(text):
    from p2sim.workload.train_text import step_settings
    with pytest.raises(InputError, match="given twice"):
        step_settings(text)


@pytest.mark.parametrize("tensor, sp", [(8, False), (1, True), (1, False)])
def test_tp_overlap_needs_sequence_parallelism_and_a_tensor_axis(tensor, sp):
    """Megatron-LM asserts --tp-comm-overlap only with sequence parallelism (off where tensor is 1)."""
    from p2sim.workload.train_text import StepSettings
    with pytest.raises(InputError, match="^train: tp_overlap: on needs sequence parallelism"):
        StepSettings(tp_overlap=True).for_axes(tensor, sp)
    assert StepSettings(tp_overlap=True).for_axes(8, True).tp_overlap
    assert StepSettings().for_axes(tensor, sp) == StepSettings()
