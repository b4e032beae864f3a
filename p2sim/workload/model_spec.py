"""A transformer as its configuration describes it, and the parameters those fields imply.

:class:`ModelSpec` holds the fields a step's communication depends on (hidden size, layers,
heads, FFN widths, vocabulary, experts) with its name and where it came from; reading it from a
Hugging Face ``config.json`` or a TOML is :mod:`p2sim.workload.model_files`.  The parameter count
is the decoder-only transformer's, summed from its matrices (Llama's and Mixtral's modelling code in
Hugging Face ``transformers``; Megatron-LM's GPT for the ungated MLP):

* attention: ``h x (heads x d)`` for Q, ``2 x h x (kv_heads x d)`` for K and V, ``(heads x d) x h``
  for the output, with ``d = head_dim`` (``h / heads`` unless given);
* MLP of width ``w``: ``3 x h x w`` when gated (SwiGLU: gate, up, down), else ``2 x h x w`` (GPT);
* a MoE layer: every routed and shared expert's MLP of ``moe_intermediate_size`` and the router
  (``experts x h``); the first ``first_dense_layers`` layers are dense (DeepSeek's
  ``first_k_dense_replace``);
* two RMSNorm/LayerNorm weight vectors per layer and one at the end; the token embedding
  (``vocab x h``), the output head unless tied, learned positions where the model has them.

Biases (GPT-3's, about 0.01 % of it) and DeepSeek's low-rank attention (MLA, counted here as plain
attention of the same heads: 0.2 % more than its 671 B) are left out; the shipped presets' counts are
within 1 % of their published sizes (``tests/test_model_spec.py``).

Examples
--------
>>> m = ModelSpec(name="tiny", source="example", hidden_size=64, num_layers=2, num_attention_heads=4,
...               num_key_value_heads=2, intermediate_size=128, vocab_size=1000)
>>> m.head_size, m.attention_parameters, m.parameter_count
(16, 12288, 202048)
>>> m.is_moe, m.expert_parameters
(False, 0)
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

from ..util.errors import InputError
from ..util.parsing import MAX_BYTES
from ..util.units import format_int

__all__ = ["ModelSpec", "MAX_SIZE_FIELD", "MAX_PARAMETERS"]

# no size of a model is above 2^50 (the largest published: vocabularies of 256 K, widths of 64 K, hundreds
# of layers), and a number above it would reach float() arithmetic as an overflow or as garbage
MAX_SIZE_FIELD = 2**50
# the fp32 gradients of every weight (4 B each) are one buffer of a data-parallel step, and no buffer is above
# 1 PiB (as --bytes and system files bound it): 2^48 parameters, against 6.7 x 10^11 for DeepSeek-V3
MAX_PARAMETERS = MAX_BYTES // 4


@dataclass(frozen=True)
class ModelSpec:
    """One decoder-only transformer's shape (every size a positive integer, checked on construction).

    Parameters
    ----------
    name : str
        What answers call it (a preset's name, or the file's stem).
    source : str
        Where it came from: the file read, or the preset's model card.
    hidden_size, num_layers, num_attention_heads, num_key_value_heads, intermediate_size, vocab_size : int
        As Hugging Face names them; ``intermediate_size`` is the dense layers' FFN width.
    moe_intermediate_size : int
        The FFN width of one expert (0: ``intermediate_size``, as Mixtral's config means it).
    experts : int
        Routed experts per MoE layer (0: a dense model).
    shared_experts : int
        Experts every token passes through (DeepSeek's ``n_shared_experts``), each of the expert width.
    experts_per_token : int
        Routed experts each token goes to (top-k).
    first_dense_layers : int
        Leading layers with a dense FFN in a MoE model (DeepSeek's ``first_k_dense_replace``).
    tie_word_embeddings : bool
        The output head shares the token embedding's weights.
    gated_mlp : bool
        The MLP has three matrices (SwiGLU), else two (GPT's GeLU MLP).
    head_dim : int
        Per-head width (0: ``hidden_size / num_attention_heads``).
    position_embeddings : int
        Learned absolute positions (GPT-2/3's ``n_positions``; 0: rotary, no weights).
    q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim : int
        Multi-head latent attention's dimensions (DeepSeek-V2/V3's keys; 0: not MLA).  Read by the step's
        compute (:mod:`p2sim.workload.compute`) only: the parameter count keeps plain attention (see above).
    sliding_window : int
        Tokens a sliding-window layer attends to (GPT-OSS's ``sliding_window``; 0: none).
    sliding_window_layers : int
        Layers with the sliding window (GPT-OSS's ``layer_types`` entries ``sliding_attention``).
    mtp_layers : int
        Multi-token-prediction modules (DeepSeek-V3's ``num_nextn_predict_layers``); compute only.
    model_type : str
        The configuration's ``model_type`` ("" when not given): how Megatron-LM counts its FLOPs.
    """

    name: str
    source: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    vocab_size: int
    moe_intermediate_size: int = 0
    experts: int = 0
    shared_experts: int = 0
    experts_per_token: int = 0
    first_dense_layers: int = 0
    tie_word_embeddings: bool = False
    gated_mlp: bool = True
    head_dim: int = 0
    position_embeddings: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    sliding_window_layers: int = 0
    mtp_layers: int = 0
    model_type: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int":
                least = 1 if f.default is MISSING else 0  # the fields without a default must be positive
                if isinstance(value, bool) or not isinstance(value, int) or value < least:
                    self._refuse(f.name, value, "a positive integer" if least else "a non-negative integer")
                if value > MAX_SIZE_FIELD:
                    raise InputError(f"{self.source}: {f.name}: {format_int(value)} is more than 2^50: no model is that "
                                     "large")
            elif f.type == "bool" and not isinstance(value, bool):
                self._refuse(f.name, value, "true or false")
        if self.num_attention_heads % self.num_key_value_heads:
            self._refuse("num_key_value_heads", self.num_key_value_heads,
                         f"a divisor of num_attention_heads ({self.num_attention_heads})")
        if not self.head_dim and self.hidden_size % self.num_attention_heads:
            self._refuse("num_attention_heads", self.num_attention_heads,
                         f"a divisor of hidden_size ({self.hidden_size}), or head_dim given")
        if self.experts:
            if not 1 <= self.experts_per_token <= self.experts:
                self._refuse("experts_per_token", self.experts_per_token, f"1 to experts ({self.experts})")
            if self.first_dense_layers >= self.num_layers:
                self._refuse("first_dense_layers", self.first_dense_layers,
                             f"fewer than num_layers ({self.num_layers})")
        else:
            for name in ("shared_experts", "experts_per_token", "first_dense_layers"):
                if getattr(self, name):
                    self._refuse(name, getattr(self, name), "0 in a dense model (experts is 0)")
        if self.parameter_count > MAX_PARAMETERS:
            sizes = ", ".join(f"{f.name} {format_int(getattr(self, f.name))}" for f in fields(self)
                              if f.type == "int" and getattr(self, f.name))
            raise InputError(f"{self.source}: parameters: {sizes} give {self.parameter_count:.3g} parameters, more "
                             "than 2^48: their fp32 gradients would be more than the 1 PiB a buffer may be")

    def _refuse(self, field: str, value: object, should: str) -> None:
        raise InputError(f"{self.source}: {field}: {value!r} should be {should}")

    # ------------------------------------------------------------------ derived sizes

    @property
    def is_mla(self) -> bool:
        """Whether attention is multi-head latent attention (a KV compression rank given)."""
        return self.kv_lora_rank > 0

    @property
    def head_size(self) -> int:
        """Per-head width ``d``."""
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def expert_width(self) -> int:
        """One expert's FFN width."""
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def is_moe(self) -> bool:
        """Whether some layers route tokens to experts."""
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers with experts (the last ``num_layers - first_dense_layers``; 0 for a dense model)."""
        return self.num_layers - self.first_dense_layers if self.is_moe else 0

    @property
    def kv_size(self) -> int:
        """Width of one token's K (or V): ``kv_heads x d``."""
        return self.num_key_value_heads * self.head_size

    @property
    def attention_parameters(self) -> int:
        """One layer's attention weights: Q, K, V and output projections."""
        q = self.num_attention_heads * self.head_size
        return self.hidden_size * q + 2 * self.hidden_size * self.kv_size + q * self.hidden_size

    def mlp_parameters(self, width: int) -> int:
        """One MLP of FFN width ``width``: three matrices if gated, else two."""
        return (3 if self.gated_mlp else 2) * self.hidden_size * width

    @property
    def expert_parameters(self) -> int:
        """All routed experts' weights (what expert parallelism splits); shared experts are not among them."""
        return self.moe_layers * self.experts * self.mlp_parameters(self.expert_width)

    @property
    def embedding_parameters(self) -> int:
        """Token embedding, output head unless tied, learned positions and the final norm."""
        heads = 1 if self.tie_word_embeddings else 2
        return (heads * self.vocab_size + self.position_embeddings + 1) * self.hidden_size

    @property
    def parameter_count(self) -> int:
        """Every weight of the model."""
        norms = 2 * self.hidden_size
        dense = self.attention_parameters + self.mlp_parameters(self.intermediate_size) + norms
        moe_other = (self.attention_parameters + norms + self.shared_experts * self.mlp_parameters(self.expert_width)
                     + self.experts * self.hidden_size)  # the router: one logit per expert
        layers = (self.num_layers - self.moe_layers) * dense + self.moe_layers * moe_other
        return self.embedding_parameters + layers + self.expert_parameters

    @property
    def dense_parameters(self) -> int:
        """The weights every expert-parallel rank holds a copy of: all but the routed experts'."""
        return self.parameter_count - self.expert_parameters

    @property
    def active_parameters(self) -> int:
        """Weights one token uses: the dense ones and ``experts_per_token`` of each layer's routed experts."""
        if not self.is_moe:
            return self.parameter_count
        return self.dense_parameters + self.expert_parameters * self.experts_per_token // self.experts

