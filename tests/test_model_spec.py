"""Models from Hugging Face config.json, TOML and the shipped presets; their parameter counts; bad fields.

Covers :mod:`p2sim.workload.model_spec` and :mod:`p2sim.workload.model_files`.  Every problem with a
model file is one InputError line naming the file, the key and the value (never a KeyError or a
TypeError from inside).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from p2sim.util.errors import InputError
from p2sim.workload.model_files import (PRESETS, load_model, model_from_config, preset_path, preset_training,
                                        read_model_file)
from p2sim.workload.model_spec import ModelSpec

PRESET_DIR = Path(__file__).resolve().parents[1] / "p2sim" / "workload" / "presets"

# the published sizes (presets/SOURCES.md): GPT-3 Table 2.1; Llama 3.1's model cards; Mixtral's announcement;
# the DeepSeek-V3 report's abstract; gpt-oss's model card (116.8 B); the Qwen3 report's Table 2
PUBLISHED = {"gpt3-175b": 175.0e9, "llama3-8b": 8.03e9, "llama3-70b": 70.6e9, "llama3-405b": 405e9,
             "mixtral-8x7b": 46.7e9, "deepseek-v3": 671e9, "gpt-oss-120b": 116.8e9, "qwen3-30b-a3b": 30.5e9,
             "qwen3-235b-a22b": 235e9}


def test_every_preset_file_ships_and_is_a_preset():
    assert sorted(p.stem for p in PRESET_DIR.glob("*.json")) == sorted(PRESETS) == sorted(PUBLISHED)
    sources = (PRESET_DIR / "SOURCES.md").read_text()
    for name in PRESETS:
        assert f"`{name}`" in sources
        assert preset_path(name).is_file()


@pytest.mark.parametrize("name", PRESETS)
def test_each_preset_config_reads_and_counts_its_published_size(name):
    m = load_model(name)
    assert m.name == name
    assert json.loads(preset_path(name).read_text())["_source"] == m.source  # the model card, not a path
    # within 1 %: biases and DeepSeek's low-rank attention are left out (model_spec's docstring)
    assert m.parameter_count == pytest.approx(PUBLISHED[name], rel=0.01)


def test_exact_counts_of_llama3_8b_and_mixtral_by_hand():
    # Llama 3.1 8B: embeddings 2 x 128256 x 4096; per layer Q 4096^2, K and V 4096 x 1024 each, O 4096^2,
    # MLP 3 x 4096 x 14336, norms 2 x 4096; 32 layers; final norm 4096 (transformers reports 8,030,261,248)
    llama = 2 * 128256 * 4096 + 32 * (16777216 + 2 * 4194304 + 16777216 + 176160768 + 8192) + 4096
    assert llama == 8_030_261_248 == load_model("llama3-8b").parameter_count
    mixtral = load_model("mixtral-8x7b")
    # 8 experts of 176,160,768 in 32 layers are the routed weights
    assert mixtral.expert_parameters == 32 * 8 * 176_160_768 == 45_097_156_608
    assert mixtral.parameter_count == 46_702_792_704
    assert mixtral.active_parameters == pytest.approx(12.9e9, rel=0.01)  # "12.9B per token"


def test_the_key_spellings_of_the_common_architectures(tmp_path):
    gpt = load_model("gpt3-175b")  # GPT-2's keys: n_embd, n_layer, n_head, n_inner null, tied, learned positions
    assert (gpt.hidden_size, gpt.num_layers, gpt.num_attention_heads, gpt.intermediate_size) == (12288, 96, 96, 49152)
    assert gpt.tie_word_embeddings and not gpt.gated_mlp and gpt.position_embeddings == 2048
    ds = load_model("deepseek-v3")  # n_routed_experts, n_shared_experts, moe_intermediate_size, first_k_dense_replace
    assert (ds.experts, ds.shared_experts, ds.experts_per_token, ds.expert_width, ds.first_dense_layers,
            ds.moe_layers) == (256, 1, 8, 2048, 3, 58)
    assert not ds.tie_word_embeddings
    # Qwen2-MoE (Qwen1.5-MoE-A2.7B's config.json): num_experts, and its shared expert as a width
    qwen = model_from_config({"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
                              "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
                              "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                              "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1,
                              "mlp_only_layers": [], "vocab_size": 151936}, "qwen.json")
    assert (qwen.experts, qwen.shared_experts, qwen.expert_width, qwen.tie_word_embeddings) == (60, 4, 1408, False)
    assert qwen.parameter_count == pytest.approx(14.3e9, rel=0.02)  # its model card: 14.3B in total
    # a model type transformers does not untie keeps PretrainedConfig's default: tied
    other = model_from_config({"hidden_size": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100}, "x.json")
    assert other.tie_word_embeddings and other.num_key_value_heads == 4 and other.intermediate_size == 256


def test_a_toml_of_the_fields_reads_as_the_same_model(tmp_path):
    llama = load_model("llama3-8b")
    f = tmp_path / "mine.toml"
    f.write_text("hidden_size = 4096\nnum_layers = 32\nnum_attention_heads = 32\nnum_key_value_heads = 8\n"
                 "intermediate_size = 14336\nvocab_size = 128256\nsource = 'my notes'\n")
    m = load_model(str(f))
    assert m == replace(llama, name="mine", source="my notes", model_type="")  # a TOML names no model type
    # a config.json by path: named after the file, sourced by it when it has no _source
    j = tmp_path / "config.json"
    j.write_text(json.dumps({k: v for k, v in json.loads(preset_path("llama3-8b").read_text()).items()
                             if k != "_source"}))
    assert load_model(j) == replace(llama, name="config", source=str(j))
    assert load_model(llama) is llama


def _config(**changes: object) -> dict[str, object]:
    doc = json.loads(preset_path("mixtral-8x7b").read_text())
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not ...}


@pytest.mark.parametrize("changes, says", [
    ({"hidden_size": ...}, "bad.json: hidden_size: missing (spelled hidden_size or n_embd)"),
    ({"num_hidden_layers": ...}, "bad.json: num_hidden_layers: missing (spelled num_hidden_layers or n_layer)"),
    ({"vocab_size": ...}, "bad.json: vocab_size: missing"),
    ({"hidden_size": "4096"}, "bad.json: hidden_size: '4096' should be a positive integer"),
    ({"hidden_size": 0}, "bad.json: hidden_size: 0 should be a positive integer"),
    ({"num_hidden_layers": 3.5}, "bad.json: num_hidden_layers: 3.5 should be a positive integer"),
    ({"num_local_experts": -8}, "bad.json: num_local_experts: -8 should be a non-negative integer"),
    ({"num_key_value_heads": 0}, "bad.json: num_key_value_heads: 0 should be a positive integer"),
    ({"intermediate_size": 0}, "bad.json: intermediate_size: 0 should be a positive integer"),
    ({"num_key_value_heads": 5}, "bad.json: num_key_value_heads: 5 should be a divisor of num_attention_heads (32)"),
    ({"num_experts_per_tok": 9}, "bad.json: num_experts_per_tok: 9 should be 1 to experts (8)"),
    ({"num_experts_per_tok": ...}, "bad.json: num_experts_per_tok: 0 should be 1 to experts (8)"),
    ({"tie_word_embeddings": "no"}, "bad.json: tie_word_embeddings: 'no' should be true or false"),
    ({"hidden_size": 4100}, "bad.json: num_attention_heads: 32 should be a divisor of hidden_size (4100)"),
    ({"moe_layer_freq": 2}, "bad.json: moe_layer_freq: 2 is not modelled"),
    ({"first_k_dense_replace": 32}, "bad.json: first_k_dense_replace: 32 should be fewer than num_layers (32)"),
    # sizes no model has: refused, not ranked (a 401-digit one was an OverflowError in plan)
    ({"vocab_size": 10**400}, "bad.json: vocab_size: a 401-digit number is more than 2^50: no model is that large"),
    ({"num_hidden_layers": 10**12}, "bad.json: parameters: hidden_size 4096, num_hidden_layers 1000000000000,"),
    ({"vocab_size": 10**15}, "vocab_size 1000000000000000, num_local_experts 8, num_experts_per_tok 2 give 8.19e+18 parameters, more than"),
    # a width given as 0 is no width; a routed count without experts is no dense model
    ({"head_dim": 0}, "bad.json: head_dim: 0 should be a positive integer"),
    ({"moe_intermediate_size": 0}, "bad.json: moe_intermediate_size: 0 should be a positive integer"),
    ({"num_local_experts": 0}, "bad.json: num_experts_per_tok: 2 with num_local_experts is 0: a dense model routes no"),
    ({"num_local_experts": ...}, "bad.json: num_experts_per_tok: 2 with no expert count (num_local_experts or"),
    # two spellings of one field that disagree
    ({"n_routed_experts": 16}, "bad.json: num_local_experts 8 and n_routed_experts 16 are one field spelled twice"),
    ({"n_embd": 2048}, "bad.json: hidden_size 4096 and n_embd 2048 are one field spelled twice"),
    # a model's own inference config (DeepSeek's configs/config_671B.json, Meta's params.json)
    ({"hidden_size": ..., "dim": 4096, "n_layers": 32},
     "bad.json: dim, n_layers: the keys of a model's own inference code (its params.json or configs/*.json), not of "
     "a Hugging Face config.json"),
])
def test_a_bad_or_missing_field_is_one_line_naming_file_field_and_value(tmp_path, changes, says):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(_config(**changes)))
    with pytest.raises(InputError) as e:
        load_model(str(f))
    text = str(e.value)
    assert "\n" not in text and text.startswith(str(tmp_path)) and says in text, text


@pytest.mark.parametrize("content, says", [
    ("{", "bad.json:1: not JSON: Expecting property name"),
    ("[1, 2]", "bad.json: a model configuration is a JSON object of keys, not list"),
    # a key twice: a reader keeps the last one silently (it was refused as a divisibility error)
    ('{"hidden_size": 64, "num_key_value_heads": 8, "num_key_value_heads": 5}',
     "bad.json: num_key_value_heads: given twice (8 and 5): each key once"),
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "bad.json: nested too deeply to be a model configuration"),
    ('{"hidden_size": ' + "9" * 5000 + "}", "bad.json: a number in it is too long to be read"),
])
def test_a_file_that_is_not_a_config_is_one_line(tmp_path, content, says):
    f = tmp_path / "bad.json"
    f.write_text(content)
    with pytest.raises(InputError, match="^" + str(tmp_path)) as e:
        load_model(f)
    assert says in str(e.value)


@pytest.mark.parametrize("content, says", [
    ("hidden_size = 64\n", "bad.toml: num_layers: missing"),
    ("hidden_sise = 64\n", "bad.toml: hidden_sise: not a model field"),
    ("hidden_size = 64\nnum_layers = 2\nnum_attention_heads = 4\nnum_key_value_heads = 4\nintermediate_size = 1\n"
     "vocab_size = 10\ngated_mlp = 1\n", "bad.toml: gated_mlp: 1 should be true or false"),
    ("hidden_size = ", "bad.toml: not TOML"),
])
def test_a_bad_toml_is_one_line(tmp_path, content, says):
    f = tmp_path / "bad.toml"
    f.write_text(content)
    with pytest.raises(InputError) as e:
        load_model(f)
    assert "\n" not in str(e.value) and says in str(e.value), str(e.value)


def test_a_name_that_is_neither_preset_nor_file_lists_the_presets(tmp_path):
    with pytest.raises(InputError, match="model: 'llama-3-8b' is neither a preset .*llama3-8b.* nor a file"):
        load_model("llama-3-8b")
    with pytest.raises(InputError, match="no such model configuration"):
        load_model(str(tmp_path / "missing.json"))
    with pytest.raises(InputError, match="not a preset"):
        preset_path("llama3")


def test_two_spellings_that_agree_read_as_one(tmp_path):
    f = tmp_path / "ok.json"
    f.write_text(json.dumps(_config(n_routed_experts=8, n_embd=4096)))
    assert replace(load_model(f), source="") == replace(load_model("mixtral-8x7b"), name="ok", source="")


def test_a_dense_model_with_expert_fields_is_refused():
    with pytest.raises(InputError, match="example: experts_per_token: 2 should be 0 in a dense model"):
        ModelSpec(name="x", source="example", hidden_size=64, num_layers=2, num_attention_heads=4,
                  num_key_value_heads=4, intermediate_size=64, vocab_size=10, experts_per_token=2)


@pytest.mark.parametrize("name, seq, batch", [
    ("gpt3-175b", 2048, 1536), ("llama3-8b", 8192, 2048), ("llama3-70b", 8192, 2048), ("llama3-405b", 8192, 2048),
    ("mixtral-8x7b", 32768, None), ("deepseek-v3", 4096, 15360), ("gpt-oss-120b", 4096, None),
    ("qwen3-30b-a3b", 4096, None), ("qwen3-235b-a22b", 4096, None)])
def test_each_preset_has_its_published_training_with_a_source(name, seq, batch):
    t = preset_training(name)
    assert (t.seq_length, t.global_batch) == (seq, batch)
    assert "20" in t.source and len(t.source) > 40  # a paper with its year and section
    assert preset_training(str(preset_path(name))) is None  # by path it is the user's file: no assumption


def test_mla_sliding_window_and_mtp_fields_are_read_from_the_config():
    ds = load_model("deepseek-v3")
    assert (ds.q_lora_rank, ds.kv_lora_rank, ds.qk_nope_head_dim, ds.qk_rope_head_dim, ds.v_head_dim) == (1536, 512, 128, 64, 128)
    assert ds.is_mla and ds.mtp_layers == 1
    oss = load_model("gpt-oss-120b")
    assert (oss.sliding_window, oss.sliding_window_layers, oss.is_mla) == (128, 18, False)
    assert load_model("llama3-8b").sliding_window == 0
