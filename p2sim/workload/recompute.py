"""Activation recomputation as Megatron-Core runs it: none, selective by module, or full.

``recompute=`` in ``--train`` takes ``none``, ``full`` (each layer keeps its input and runs its forward again
before its backward: ``--recompute-granularity full --recompute-method uniform --recompute-num-layers 1``),
``selective`` (Megatron-Core's default module, the attention core) or the modules of Megatron-Core's selective
recompute joined by ``+`` (``--recompute-granularity selective --recompute-modules ...``,
``megatron/core/transformer/transformer_config.py``):

* ``core_attn``: the attention core (FlashAttention keeps only its inputs and row statistics already, so it
  frees nothing more here, and runs again);
* ``layernorm``: the outputs of the norms that are modules of their own, recomputed from their inputs
  (memory-bound, cheap).  Megatron-Core's TransformerEngine layer (``gpt_layer_specs.py``) fuses a norm into the
  GEMM after it (``LayerNormLinear``) where it can: the input norm is its own module only in MLA's attention,
  the norm before the MLP only before MoE experts (:func:`separate_norms`); a dense Llama layer has none, and
  Megatron-Core recomputes nothing there (``if not isinstance(self.input_layernorm, IdentityOp)``);
* ``moe_act``: a MoE layer's experts' activation output (the routed copies'), recomputed from the up
  projection's output;
* ``mla_up_proj``: MLA's up projections and RoPE (DeepSeek-V3's ``q up`` and ``kv up``), whose outputs the
  attention core would otherwise keep: recomputed from the compressed latents.

Megatron-Bridge's recipes name them (DeepSeek-V3 on GB200: ``mla_up_proj``; its large-scale ones
``layernorm``, ``mla_up_proj``, ``moe_act``).  :func:`ladder` orders a model's choices by what they cost, the
configuration search's rungs: none, the cheap modules (where the model has them), then the GEMM-bound ones, then
full.

Examples
--------
>>> parse_recompute("moe_act+layernorm"), parse_recompute("core_attn"), parse_recompute("Full")
('layernorm+moe_act', 'selective', 'full')
>>> sorted(modules_of("selective")), sorted(modules_of("layernorm+mla_up_proj")), modules_of("full")
(['core_attn'], ['layernorm', 'mla_up_proj'], frozenset())
"""

from __future__ import annotations

from ..util.errors import InputError
from .model_spec import ModelSpec

__all__ = ["MODULES", "LEVELS", "parse_recompute", "modules_of", "separate_norms", "check_recompute", "ladder",
           "recomputed_op_names"]

LEVELS = ("none", "selective", "full")
# Megatron-Core's selective modules p2sim times: the layer operations each runs again (compute.layer_ops' names)
MODULES: dict[str, tuple[str, ...]] = {
    "core_attn": ("attention",),
    "layernorm": ("input norm", "post norm"),
    "moe_act": ("activation",),  # a MoE layer's (its experts'); a dense layer's MLP is not a MoE module
    "mla_up_proj": ("q up", "kv up", "rotary"),
}


def parse_recompute(text: str) -> str:
    """``recompute=``'s value, checked and written one way: ``none``, ``selective``, ``full`` or modules joined by
    ``+`` in name order (``core_attn`` alone is ``selective``, Megatron-Core's default module)."""
    v = str(text).strip().lower()
    if v in LEVELS:
        return v
    names = [p.strip() for p in v.split("+")]
    bad = [n for n in names if n not in MODULES]
    if not names or bad:
        raise InputError(f"train: recompute: {text!r} should be none, selective, full or modules joined by + "
                         f"({', '.join(MODULES)})")
    chosen = sorted(set(names))
    return "selective" if chosen == ["core_attn"] else "+".join(chosen)


def modules_of(recompute: str) -> frozenset[str]:
    """The selective modules a (parsed) recompute runs again: ``selective`` is the attention core."""
    if recompute in ("none", "full"):
        return frozenset()
    return frozenset(("core_attn",)) if recompute == "selective" else frozenset(recompute.split("+"))


def separate_norms(model: ModelSpec, kind: str) -> tuple[str, ...]:
    """The norms of a ``kind`` layer (``dense``, ``moe``) that are modules of their own in Megatron-Core's
    TransformerEngine layer spec, so that ``layernorm`` recomputes them: the input norm in MLA's attention (MLA's
    projections start with their own down projection), the norm before a MoE layer's router and experts.

    >>> from p2sim.workload import load_model
    >>> separate_norms(load_model("llama3-8b"), "dense"), separate_norms(load_model("deepseek-v3"), "moe")
    ((), ('input norm', 'post norm'))
    """
    return (("input norm",) if model.is_mla else ()) + (("post norm",) if kind == "moe" else ())


def check_recompute(model: ModelSpec, recompute: str) -> None:
    """A module the model has no part for is refused (Megatron-Core would have nothing to recompute)."""
    mods = modules_of(recompute)
    if "layernorm" in mods and not (model.is_mla or model.is_moe):
        raise InputError(f"train: recompute: layernorm frees nothing in {model.name}: Megatron-Core fuses its norms "
                         "into the GEMMs after them (TransformerEngine's LayerNormLinear)")
    if "mla_up_proj" in mods and not model.is_mla:
        raise InputError(f"train: recompute: mla_up_proj is MLA's up projection; {model.name} has no MLA")
    if "moe_act" in mods and not model.is_moe:
        raise InputError(f"train: recompute: moe_act is a MoE layer's; {model.name} has no experts")


def ladder(model: ModelSpec) -> tuple[str, ...]:
    """The model's recompute choices from the cheapest: none, the elementwise modules it has (layernorm where a norm
    is a module of its own: an MLA or MoE model; moe_act for a MoE model), those and MLA's up projections (for an
    MLA model), full.  ``selective`` alone is left out: the
    attention core it recomputes keeps nothing FlashAttention would not (memory.py), so it never fits where none
    does not."""
    cheap = (["layernorm"] if model.is_mla or model.is_moe else []) + (["moe_act"] if model.is_moe else [])
    rungs = ["none"] + (["+".join(sorted(cheap))] if cheap else [])
    if model.is_mla:
        rungs.append("+".join(sorted(cheap + ["mla_up_proj"])))
    return tuple(rungs) + ("full",)


def recomputed_op_names(recompute: str, model: ModelSpec, kind: str) -> frozenset[str]:
    """The names of a ``kind`` layer's operations a selective recompute runs again before its backward."""
    names: set[str] = set()
    for m in modules_of(recompute):
        if m == "moe_act" and kind != "moe":
            continue
        names.update(separate_norms(model, kind) if m == "layernorm" else MODULES[m])
    return frozenset(names)
