"""A model from a Hugging Face ``config.json``, a small TOML of :class:`ModelSpec`'s fields, or a shipped preset.

``--model NAME|FILE`` resolves through :func:`load_model`: a preset's name (:data:`PRESETS`, the
``config.json`` files in ``p2sim/workload/presets/`` with their sources in ``SOURCES.md``), else a path;
``.toml`` is read as ModelSpec's fields, anything else as a Hugging Face ``config.json``.  The key
spellings of the common architectures are read (``transformers``' configuration classes):

==========================  ===================================================================
field                       keys, first found wins
==========================  ===================================================================
hidden_size                 ``hidden_size``, ``n_embd`` (GPT-2)
num_layers                  ``num_hidden_layers``, ``n_layer``
num_attention_heads         ``num_attention_heads``, ``n_head``
num_key_value_heads         ``num_key_value_heads`` (absent: as many as the heads)
intermediate_size           ``intermediate_size``, ``n_inner`` (GPT-2; absent or null: 4 x hidden)
moe_intermediate_size       ``moe_intermediate_size`` (DeepSeek, Qwen2-MoE)
experts                     ``num_local_experts`` (Mixtral), ``n_routed_experts`` (DeepSeek),
                            ``num_experts`` (Qwen2-MoE)
shared_experts              ``n_shared_experts``, or Qwen2-MoE's ``shared_expert_intermediate_size``
                            over the expert width
experts_per_token           ``num_experts_per_tok``
first_dense_layers          ``first_k_dense_replace``
==========================  ===================================================================

Every problem is one :class:`~p2sim.util.errors.InputError` naming the file, the key and its value.

Examples
--------
>>> m = load_model("llama3-8b")
>>> m.name, m.hidden_size, m.num_layers, round(m.parameter_count / 1e9, 2)
('llama3-8b', 4096, 32, 8.03)
>>> model_from_config({"hidden_size": 64, "num_hidden_layers": 2}, "cfg.json")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: cfg.json: num_attention_heads: missing (spelled num_attention_heads or n_head)
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import MISSING, dataclass, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..util.errors import InputError
from ..util.fileio import parse_json, read_text
from .model_spec import ModelSpec

__all__ = ["PRESETS", "load_model", "model_from_config", "model_from_toml", "read_model_file", "preset_path",
           "PresetTraining", "preset_training"]

PRESETS = ("gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-120b",
           "qwen3-30b-a3b", "qwen3-235b-a22b")

# model types whose MLP has two matrices and a GeLU (not SwiGLU's three) and whose positions are learned
# weights: GPT-2's modelling code (GPT2MLP, wpe) and the models built like it
_GPT_LIKE = frozenset({"gpt2", "gpt_bigcode", "openai-gpt"})
# transformers' PretrainedConfig ties the embeddings unless a model's configuration class says otherwise;
# these say False (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, Qwen2MoeConfig, DeepseekV3Config)
_UNTIED_BY_DEFAULT = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "deepseek_v2", "deepseek_v3"})

_SPELLINGS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd"),
    "num_layers": ("num_hidden_layers", "n_layer"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "vocab_size": ("vocab_size",),
}
# the keys each of ModelSpec's fields is read from, so that its checks name the key the file spells
_KEYS: dict[str, tuple[str, ...]] = {
    **_SPELLINGS, "num_key_value_heads": ("num_key_value_heads",), "intermediate_size": ("intermediate_size", "n_inner"),
    "experts": ("num_local_experts", "n_routed_experts", "num_experts"), "experts_per_token": ("num_experts_per_tok",),
    "shared_experts": ("n_shared_experts", "shared_expert_intermediate_size"),
    "first_dense_layers": ("first_k_dense_replace",), "head_dim": ("head_dim",),
}


def _int(doc: dict[str, Any], key: str, source: str, least: int = 1) -> int:
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        should = "a positive integer" if least else "a non-negative integer"
        raise InputError(f"{source}: {key}: {value!r} should be {should}")
    return value


def _given(doc: dict[str, Any], keys: tuple[str, ...], source: str) -> str | None:
    """The first of ``keys`` the document gives (not null); two spellings of one field given with different
    values are refused: which one the model means cannot be told."""
    given = [k for k in keys if doc.get(k) is not None]
    for other in given[1:]:
        if doc[other] != doc[given[0]]:
            raise InputError(f"{source}: {given[0]} {doc[given[0]]!r} and {other} {doc[other]!r} are one field "
                             "spelled twice, with different values: give one")
    return given[0] if given else None


def _first(doc: dict[str, Any], field: str, source: str) -> int:
    key = _given(doc, _SPELLINGS[field], source)
    if key is not None:
        return _int(doc, key, source)
    raise InputError(f"{source}: {field if field in _SPELLINGS[field] else _SPELLINGS[field][0]}: missing "
                     f"(spelled {' or '.join(_SPELLINGS[field])})")


def _optional(doc: dict[str, Any], keys: tuple[str, ...], source: str, default: int = 0, least: int = 0) -> int:
    """The value of the first of ``keys`` given, else ``default``; ``least=1`` for a width that, given, cannot
    be 0 (a config.json means a size by it; 0 would be ModelSpec's "derive it", which the file did not say)."""
    key = _given(doc, keys, source)
    return default if key is None else _int(doc, key, source, least=least)


# the keys of a model's own inference code's params.json (Meta's and DeepSeek's reference implementations,
# ModelArgs: dim, n_layers, n_heads), which are not a Hugging Face config.json's
_REFERENCE_KEYS = ("dim", "n_layers", "n_heads")


def model_from_config(doc: Any, source: str, name: str | None = None) -> ModelSpec:
    """The model a Hugging Face ``config.json`` document describes (``source`` names it in errors).

    Layer patterns the step does not model (experts on every n-th layer only, listed dense layers)
    are refused rather than miscounted.
    """
    if not isinstance(doc, dict):
        raise InputError(f"{source}: a model configuration is a JSON object of keys, not {type(doc).__name__}")
    model_type = doc.get("model_type")
    if not any(k in doc for k in _SPELLINGS["hidden_size"]) and any(k in doc for k in _REFERENCE_KEYS):
        keys = ", ".join(k for k in _REFERENCE_KEYS if k in doc)
        raise InputError(f"{source}: {keys}: the keys of a model's own inference code (its params.json or "
                         "configs/*.json), not of a Hugging Face config.json: give the config.json of the model's "
                         "Hugging Face repository (hidden_size, num_hidden_layers, ...)")
    hidden = _first(doc, "hidden_size", source)
    heads = _first(doc, "num_attention_heads", source)
    expert_keys = _KEYS["experts"]
    experts = _optional(doc, expert_keys, source)
    routed = doc.get("num_experts_per_tok")
    if not experts and routed not in (None, 0):
        given = _given(doc, expert_keys, source)
        said = f"{given} is 0" if given else f"no expert count ({' or '.join(expert_keys)})"
        raise InputError(f"{source}: num_experts_per_tok: {routed!r} with {said}: a dense model routes no tokens; "
                         "give the routed experts' count, or leave num_experts_per_tok out")
    moe_width = _optional(doc, ("moe_intermediate_size",), source, least=1 if experts else 0)
    intermediate = _optional(doc, ("intermediate_size", "n_inner"), source, default=4 * hidden, least=1)
    shared = _optional(doc, ("n_shared_experts",), source)
    qwen_shared = _optional(doc, ("shared_expert_intermediate_size",), source)
    if qwen_shared and experts:
        width = moe_width or intermediate
        if qwen_shared % width:
            raise InputError(f"{source}: shared_expert_intermediate_size: {qwen_shared} should be a multiple of the "
                             f"expert width {width} (shared experts are counted in experts of that width)")
        shared = qwen_shared // width
    # experts on every layer is what the step models: DeepSeek's moe_layer_freq, Qwen2-MoE's decoder_sparse_step
    for key in ("moe_layer_freq", "decoder_sparse_step"):
        if experts and doc.get(key) not in (None, 1):
            raise InputError(f"{source}: {key}: {doc[key]!r} is not modelled (experts on every layer only: 1)")
    if experts and doc.get("mlp_only_layers"):
        raise InputError(f"{source}: mlp_only_layers: {doc['mlp_only_layers']!r} is not modelled (leading dense "
                         "layers only, as first_k_dense_replace)")
    tie = doc.get("tie_word_embeddings", model_type not in _UNTIED_BY_DEFAULT)
    if not isinstance(tie, bool):
        raise InputError(f"{source}: tie_word_embeddings: {tie!r} should be true or false")
    gpt_like = model_type in _GPT_LIKE
    try:
        spec = _spec(doc, source, name, hidden, heads, experts, moe_width, intermediate, shared, tie, gpt_like)
    except InputError as e:
        # ModelSpec names its own field: say the key this file spells it with
        text, prefix = str(e), f"{source}: "
        field = text[len(prefix):].split(":")[0]
        keys = _KEYS.get(field, (field,))
        key = next((k for k in keys if k in doc), keys[0])
        rest = text[len(prefix) + len(field):]
        if field == "parameters":  # the sizes it lists, by the keys of this file too
            for name, spelled in _KEYS.items():
                given = next((k for k in spelled if k in doc), None)
                if given is not None and given != name:
                    rest = rest.replace(f"{name} ", f"{given} ")
        raise InputError(prefix + key + rest) from None
    cited = doc.get("_source")  # the shipped presets cite their model card; checked under the file's name first
    return replace(spec, source=cited) if isinstance(cited, str) and cited else spec


def _spec(doc: dict[str, Any], source: str, name: str | None, hidden: int, heads: int, experts: int, moe_width: int,
          intermediate: int, shared: int, tie: bool, gpt_like: bool) -> ModelSpec:
    positions = _optional(doc, ("n_positions", "max_position_embeddings"), source) if gpt_like else 0
    return ModelSpec(
        name=name or Path(source).stem, source=source,
        hidden_size=hidden, num_layers=_first(doc, "num_layers", source), num_attention_heads=heads,
        num_key_value_heads=_optional(doc, ("num_key_value_heads",), source, default=heads),
        intermediate_size=intermediate, vocab_size=_first(doc, "vocab_size", source),
        moe_intermediate_size=moe_width, experts=experts, shared_experts=shared if experts else 0,
        experts_per_token=_optional(doc, ("num_experts_per_tok",), source) if experts else 0,
        first_dense_layers=_optional(doc, ("first_k_dense_replace",), source) if experts else 0,
        tie_word_embeddings=tie, gated_mlp=not gpt_like, head_dim=_optional(doc, ("head_dim",), source, least=1),
        position_embeddings=positions, **_attention_extras(doc, source))


# multi-head latent attention's and multi-token prediction's keys (DeepSeek-V2/V3's config.json), read
# for the step's compute only (p2sim.workload.compute)
_EXTRA_KEYS = {"q_lora_rank": "q_lora_rank", "kv_lora_rank": "kv_lora_rank", "qk_nope_head_dim": "qk_nope_head_dim",
               "qk_rope_head_dim": "qk_rope_head_dim", "v_head_dim": "v_head_dim", "mtp_layers": "num_nextn_predict_layers"}


def _attention_extras(doc: dict[str, Any], source: str) -> dict[str, int]:
    """MLA's dimensions, the sliding window (GPT-OSS's ``sliding_window`` on its ``sliding_attention`` layers)
    and the multi-token-prediction modules, where the file gives them."""
    out = {field: _optional(doc, (key,), source) for field, key in _EXTRA_KEYS.items()}
    if not out["kv_lora_rank"]:
        out.update(q_lora_rank=0, qk_nope_head_dim=0, qk_rope_head_dim=0, v_head_dim=0)
    kinds = doc.get("layer_types")
    window = _optional(doc, ("sliding_window",), source)
    if window and isinstance(kinds, list):
        out["sliding_window"] = window
        out["sliding_window_layers"] = sum(k == "sliding_attention" for k in kinds)
    model_type = doc.get("model_type")
    return {**out, "model_type": model_type if isinstance(model_type, str) else ""}


def model_from_toml(doc: dict[str, Any], source: str) -> ModelSpec:
    """The model a TOML of ModelSpec's own field names describes (``name`` defaults to the file's stem)."""
    known = {f.name: f for f in fields(ModelSpec)}
    for key in doc:
        if key not in known:
            raise InputError(f"{source}: {key}: not a model field (one of {', '.join(known)})")
    for f in known.values():
        if f.default is MISSING and f.name not in ("name", "source") and f.name not in doc:
            raise InputError(f"{source}: {f.name}: missing")
    values = dict(doc)
    values.setdefault("name", Path(source).stem)
    values["source"] = str(values.get("source") or source)
    if not isinstance(values["name"], str) or not isinstance(values["source"], str):
        raise InputError(f"{source}: name and source should be text")
    # ModelSpec names its source in its errors: checked under the file's name, the one the user can fix
    return replace(ModelSpec(**{**values, "source": source}), source=values["source"])


def read_model_file(path: str | Path, name: str | None = None) -> ModelSpec:
    """The model in a file: ``.toml`` as ModelSpec's fields, anything else as a Hugging Face ``config.json``."""
    p = Path(path)
    text = read_text(p, "model configuration")
    if p.suffix.lower() == ".toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise InputError(f"{p}: not TOML: {e}") from None
        return model_from_toml(doc, str(p))
    return model_from_config(parse_json(text, str(p), "model configuration"), str(p), name)


def preset_path(name: str) -> Path:
    """The shipped ``config.json`` of a preset (its name as in :data:`PRESETS`)."""
    if name not in PRESETS:
        raise InputError(f"model: {name!r} is not a preset (one of {', '.join(PRESETS)})")
    return Path(str(resources.files("p2sim.workload").joinpath("presets", f"{name}.json")))


@dataclass(frozen=True)
class PresetTraining:
    """A preset's published training settings, used where ``--train`` does not give them.

    ``global_batch`` None: none is published (one micro-batch per data rank, TrainingSpec's default);
    ``source`` the paper and section each value is read from (the preset's ``_training``).
    """

    seq_length: int
    global_batch: int | None
    source: str

    def settings(self) -> dict[str, int]:
        """The TrainingSpec fields these set."""
        return {"seq_length": self.seq_length, **({} if self.global_batch is None else {"global_batch": self.global_batch})}


def preset_training(model: Any) -> PresetTraining | None:
    """The published training settings of a preset named by ``model`` (its ``_training``); None for a file
    or a ModelSpec: their training defaults are TrainingSpec's (documented in docs/workload.md).

    Examples
    --------
    >>> t = preset_training("llama3-405b")
    >>> t.seq_length, t.global_batch
    (8192, 2048)
    >>> preset_training("my-model.toml") is None
    True
    """
    if not isinstance(model, str) or model not in PRESETS:
        return None
    doc = json.loads(preset_path(model).read_text())["_training"]
    return PresetTraining(doc["seq_length"], doc.get("global_batch"), doc["_source"])


def load_model(model: str | Path | ModelSpec) -> ModelSpec:
    """What ``--model`` names: a ModelSpec as it is, a preset's name, or a file's path.

    Raises
    ------
    InputError
        Neither a preset nor a readable file, or a file that does not describe a model (one line naming
        the file, the key and the value).
    """
    if isinstance(model, ModelSpec):
        return model
    text = str(model)
    if not text.strip():
        # Path("") is ".": say what was given, not that the current directory is no model
        raise InputError(f"model: {text!r} is empty: give a preset ({', '.join(PRESETS)}) or a config.json's path")
    if text in PRESETS:
        return read_model_file(preset_path(text), name=text)
    p = Path(text)
    if not p.exists() and p.suffix.lower() not in (".json", ".toml"):
        raise InputError(f"model: {text!r} is neither a preset ({', '.join(PRESETS)}) nor a file")
    return read_model_file(p)
