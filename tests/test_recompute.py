"""Activation recomputation by Megatron-Core's modules (p2sim.workload.recompute), its memory and its time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p2sim.studies.step_time import run_step
from p2sim.util.errors import InputError
from p2sim.workload import load_model
from p2sim.workload.compute import layer_ops
from p2sim.workload.memory import activation_bytes_per_layer
from p2sim.workload.recompute import MODULES, check_recompute, ladder, modules_of, parse_recompute, recomputed_op_names


def test_the_text_is_written_one_way():
    assert parse_recompute(" Selective ") == "selective" and parse_recompute("core_attn") == "selective"
    assert parse_recompute("mla_up_proj+layernorm+layernorm") == "layernorm+mla_up_proj"
    for bad in ("some", "layernorm+", "mlp"):
        with pytest.raises(InputError, match="should be none, selective, full or modules joined by"):
            parse_recompute(bad)


@given(st.sets(st.sampled_from(sorted(MODULES)), min_size=1))
def test_modules_read_back_from_their_text(mods):
    assert modules_of(parse_recompute("+".join(mods))) == frozenset(mods)


def test_each_models_ladder_runs_from_none_to_full():
    assert ladder(load_model("llama3-70b")) == ("none", "full")  # its norms are fused into the GEMMs after them
    assert ladder(load_model("qwen3-30b-a3b")) == ("none", "layernorm+moe_act", "full")
    assert ladder(load_model("deepseek-v3")) == ("none", "layernorm+moe_act", "layernorm+mla_up_proj+moe_act", "full")


def test_a_module_the_model_lacks_is_refused():
    with pytest.raises(InputError, match="layernorm frees nothing in llama3-8b: Megatron-Core fuses its norms"):
        check_recompute(load_model("llama3-8b"), "layernorm")
    with pytest.raises(InputError, match="mla_up_proj is MLA's up projection; llama3-8b has no MLA"):
        check_recompute(load_model("llama3-8b"), "mla_up_proj")
    with pytest.raises(InputError, match="moe_act is a MoE layer's; llama3-8b has no experts"):
        check_recompute(load_model("llama3-8b"), "moe_act")


def test_each_module_frees_what_it_recomputes():
    """By hand, per token of one layer, BF16 (2 bytes an element), no tensor split: ``layernorm`` frees the outputs of
    the norms that are modules of their own (Megatron-Core's TransformerEngine spec: MLA's input norm, the norm
    before MoE experts; h elements each); ``moe_act`` each routed copy's activation output (k x w); ``mla_up_proj``
    MLA's Q and K/V (heads x (qk + qk + v))."""
    llama = load_model("llama3-8b")
    per = lambda model, kind, rc: activation_bytes_per_layer(model, kind, tokens=1, tensor=1, sp=False, recompute=rc)  # noqa: E731
    assert per(llama, "dense", "none") == per(llama, "dense", "selective")  # FlashAttention keeps nothing more
    qwen = load_model("qwen3-30b-a3b")  # no MLA: only the norm before the experts is its own module
    assert per(qwen, "moe", "none") - per(qwen, "moe", "layernorm") == 2 * qwen.hidden_size
    ds = load_model("deepseek-v3")
    assert per(ds, "moe", "none") - per(ds, "moe", "layernorm") == 2 * 2 * ds.hidden_size  # both norms
    assert per(ds, "dense", "none") - per(ds, "dense", "layernorm") == 2 * ds.hidden_size  # MLA's input norm
    assert per(ds, "moe", "none") - per(ds, "moe", "moe_act") == 2 * ds.experts_per_token * ds.expert_width
    qk = ds.qk_nope_head_dim + ds.qk_rope_head_dim
    assert per(ds, "moe", "none") - per(ds, "moe", "mla_up_proj") == 2 * ds.num_attention_heads * (qk + qk + ds.v_head_dim)


def test_the_modules_operations_run_again_in_the_backward():
    ds = load_model("deepseek-v3")
    moe = layer_ops(ds, "moe", tokens=4096, seq_length=4096)
    names = {op.name for op in moe}
    assert recomputed_op_names("layernorm+mla_up_proj+moe_act", ds, "moe") <= names
    assert "activation" not in recomputed_op_names("moe_act", ds, "dense")  # a dense layer's MLP is not a MoE module
    assert recomputed_op_names("layernorm", ds, "dense") == {"input norm"}
    # the step: recomputing the modules costs between nothing and a full recompute
    job = dict(model="deepseek-v3", system="dgx-b200", nodes=32, axes={"pipeline": 8, "expert": 32})
    train = "seq=4096,micro_batch=1,global_batch=1024,dtype=fp8,vp=4,zero=1,grad_dtype=bf16"
    times = [run_step(**job, train=f"{train},recompute={rc}").compute_seconds
             for rc in ("none", "layernorm+moe_act", "layernorm+mla_up_proj+moe_act", "full")]
    assert times == sorted(times) and times[0] < times[-1]
