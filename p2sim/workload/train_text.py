"""``--train``'s text: a step's training settings as ``KEY=VALUE`` pairs, read into a :class:`TrainingSpec`.

The keys are :class:`TrainingSpec`'s fields, with the short spellings a user would type first:
``seq`` (``seq_length``), ``dtype`` (``param_dtype``), ``sp`` (``sequence_parallel``), ``vp``
(``virtual_stages``), ``zero=0..3`` (``data_parallel`` ddp, zero1, zero2, zero3) beside
``data_parallel=fsdp``.  ``virtual_stages`` above 1 without a ``schedule`` is the interleaved schedule,
as Megatron-LM runs it (``--num-layers-per-virtual-pipeline-stage`` alone selects it).  Every problem is
one line naming ``train``, the key and its value.

Examples
--------
>>> t = training_from_text("seq=8192,micro_batch=2,global_batch=512,zero=1,sp=on")
>>> t.seq_length, t.micro_batch, t.global_batch, t.data_parallel, t.sequence_parallel
(8192, 2, 512, 'zero1', True)
>>> training_from_text("vp=2").schedule
'interleaved'
>>> training_from_text("seq=0")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: train: seq_length: 0 should be a positive integer
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace, fields
from typing import Any

from ..util.errors import InputError
from .recompute import LEVELS, parse_recompute
from .training import DATA_MODES, TrainingSpec

__all__ = ["training_from_text", "training_of", "given_fields", "TRAIN_KEYS", "StepSettings", "step_settings",
           "split_step_settings", "RECOMPUTE", "DISPATCHERS"]

# each key as typed -> TrainingSpec's field
_ALIASES = {"seq": "seq_length", "seq_length": "seq_length", "sequence": "seq_length",
            "micro_batch": "micro_batch", "mbs": "micro_batch", "global_batch": "global_batch", "gbs": "global_batch",
            "dtype": "param_dtype", "param_dtype": "param_dtype", "grad_dtype": "grad_dtype",
            "sp": "sequence_parallel", "sequence_parallel": "sequence_parallel",
            "vp": "virtual_stages", "virtual_stages": "virtual_stages", "schedule": "schedule",
            "data_parallel": "data_parallel", "zero": "data_parallel"}
TRAIN_KEYS = tuple(_ALIASES)
_INTS = ("seq_length", "micro_batch", "global_batch", "virtual_stages")
_ON = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}
_ZERO = {"0": "ddp", "1": "zero1", "2": "zero2", "3": "zero3"}  # ZeRO's stages (Rajbhandari et al. 2020, section 5)


def _value(key: str, field: str, text: str) -> Any:
    if field in _INTS:
        try:
            return int(text)
        except ValueError:
            raise InputError(f"train: {key}: {text!r} should be a positive integer") from None
    if field == "sequence_parallel":
        if text.lower() not in _ON:
            raise InputError(f"train: {key}: {text!r} should be on or off")
        return _ON[text.lower()]
    if key == "zero":
        if text not in _ZERO:
            raise InputError(f"train: zero: {text!r} should be 0, 1, 2 or 3 (or data_parallel={'|'.join(DATA_MODES)})")
        return _ZERO[text]
    return text.lower()


def training_from_text(text: str, defaults: Mapping[str, Any] | None = None) -> TrainingSpec:
    """The settings ``--train`` gives (``""``: every default); one :class:`InputError` per bad key or value.

    ``defaults``: TrainingSpec fields used where the text does not give them (a preset's published
    sequence length and global batch), before TrainingSpec's own defaults.

    Examples
    --------
    >>> t = training_from_text("micro_batch=2", {"seq_length": 8192, "global_batch": 2048})
    >>> t.seq_length, t.micro_batch, t.global_batch
    (8192, 2, 2048)
    >>> training_from_text("seq=4096", {"seq_length": 8192}).seq_length
    4096
    """
    given: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not value:
            raise InputError(f"train: {part!r} is not KEY=VALUE (e.g. seq=8192,micro_batch=1,global_batch=1024)")
        field = _ALIASES.get(key.lower())
        if field is None:
            raise InputError(f"train: {key!r} is not a training setting (one of {', '.join(TRAIN_KEYS)}; "
                             "recompute, tp_overlap and dispatcher with --model)")
        if field in given:
            raise InputError(f"train: {field} is given twice")
        given[field] = _value(key.lower(), field, value)
    given = {**(defaults or {}), **given}
    if given.get("virtual_stages", 1) > 1 and "schedule" not in given:
        given["schedule"] = "interleaved"  # Megatron-LM: virtual stages select the interleaved schedule
    try:
        return TrainingSpec(**given)
    except InputError as e:  # TrainingSpec's own check, named as the option is
        raise InputError(f"train: {str(e).removeprefix('training: ')}") from None


def training_of(value: str | Mapping[str, Any] | TrainingSpec | None,
                defaults: Mapping[str, Any] | None = None) -> TrainingSpec:
    """A TrainingSpec from ``--train``'s text, a mapping of the same keys, a TrainingSpec (as it is), or None;
    ``defaults`` fill what the text or mapping does not give (:func:`training_from_text`)."""
    if value is None:
        return training_from_text("", defaults)
    if isinstance(value, TrainingSpec):
        return value
    if isinstance(value, Mapping):
        return training_from_text(",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                                           for k, v in value.items()), defaults)
    if isinstance(value, str):
        if not any(part.strip() for part in value.split(",")):  # --train '' would say nothing and be taken
            raise InputError(f"train: {value!r} gives no setting: give KEY=VALUE,.. (e.g. seq=8192,micro_batch=1), "
                             "or leave --train out for the defaults")
        return training_from_text(value, defaults)
    raise InputError(f"train: {value!r} is not KEY=VALUE text, a mapping or a TrainingSpec")


def given_fields(value: str | Mapping[str, Any] | TrainingSpec | None) -> frozenset[str]:
    """The TrainingSpec fields ``value`` gives (every one for a TrainingSpec), so that an answer can say which
    settings were assumed; keys that are not settings are left to :func:`training_of` to refuse.

    Examples
    --------
    >>> sorted(given_fields("seq=2048,mbs=2"))
    ['micro_batch', 'seq_length']
    """
    if isinstance(value, TrainingSpec):
        return frozenset(f.name for f in fields(TrainingSpec))
    keys = value.keys() if isinstance(value, Mapping) else (
        part.partition("=")[0].strip() for part in value.split(",")) if isinstance(value, str) else ()
    return frozenset(_ALIASES[k.lower()] for k in keys if isinstance(k, str) and k.lower() in _ALIASES)


RECOMPUTE = LEVELS  # the levels; a model's whole ladder of choices, modules included: recompute.ladder
# a MoE layer's token dispatcher: Megatron-LM's alltoall dispatcher (--moe-token-dispatcher-type alltoall), or its
# flex dispatcher with the DeepEP or HybridEP kernels (--moe-token-dispatcher-type flex
# --moe-flex-dispatcher-backend deepep|hybridep: megatron/core/transformer/transformer_config.py), which fuse the
# tokens' permutation into the dispatch and combine
DISPATCHERS = ("alltoall", "deepep", "hybridep")


@dataclass(frozen=True)
class StepSettings:
    """What ``--train`` says beyond :class:`~p2sim.workload.training.TrainingSpec`: FP8 GEMMs and recompute."""

    fp8: bool = False
    recompute: str = "none"
    tp_overlap: bool = False  # Megatron-LM's --tp-comm-overlap (TransformerEngine's userbuffers)
    dispatcher: str = "alltoall"  # a MoE layer's token dispatcher (DISPATCHERS)
    # activation offloading: the transformer layers whose saved activations go to host memory during the forward
    # and come back for the backward (Megatron-Core's --cpu-offloading --cpu-offloading-num-layers N,
    # TransformerEngine's CPU offload); "auto": the fewest that fit the GPU's memory (0 where nothing needs to go)
    offload: int | str = 0

    def for_model(self, name: str, is_moe: bool) -> StepSettings:
        """These settings, checked against the model they time: a dispatcher is a MoE layer's, refused for a
        dense model (it would be named in the answer and the emitted script while changing nothing).

        >>> StepSettings(dispatcher="deepep").for_model("llama3-8b", False)
        Traceback (most recent call last):
        ...
        p2sim.util.errors.InputError: train: dispatcher: 'deepep' is a MoE layer's token dispatcher; llama3-8b has no experts
        """
        if self.dispatcher != "alltoall" and not is_moe:
            raise InputError(f"train: dispatcher: {self.dispatcher!r} is a MoE layer's token dispatcher; {name} has "
                             "no experts")
        return self

    def for_axes(self, tensor: int, sequence_parallel: bool) -> StepSettings:
        """These settings, checked against the configuration's tensor size and sequence parallelism: Megatron-LM's
        ``--tp-comm-overlap`` needs sequence parallelism (arguments.py: "Tensor parallel communication/GEMM
        overlap can happen only when sequence parallelism is enabled"; and sequence parallelism is turned off
        where tensor is 1), so such a configuration is refused rather than timed and emitted.

        >>> StepSettings(tp_overlap=True).for_axes(8, False)
        Traceback (most recent call last):
        ...
        p2sim.util.errors.InputError: train: tp_overlap: on needs sequence parallelism (sp=on) and tensor > 1, as Megatron-LM's --tp-comm-overlap does; here tensor=8, sp off
        """
        if self.tp_overlap and (tensor < 2 or not sequence_parallel):
            raise InputError(f"train: tp_overlap: on needs sequence parallelism (sp=on) and tensor > 1, as "
                             f"Megatron-LM's --tp-comm-overlap does; here tensor={tensor}, "
                             f"sp {'on' if sequence_parallel else 'off'}")
        return self

    def for_offload(self, pipeline: int, layers: int) -> StepSettings:
        """These settings, checked as Megatron-Core checks activation offloading (transformer_config.py): no
        pipeline parallelism ("Currently there is no support for Pipeline parallelism with CPU offloading"), no
        recompute with it ("CPU offloading does not work when activation recomputation is enabled"), and fewer
        layers than the model has ("CPU offloading can be done only for layers less than num_layers").

        >>> StepSettings(offload=8).for_offload(2, 80)
        Traceback (most recent call last):
        ...
        p2sim.util.errors.InputError: train: offload: activation offloading runs without pipeline parallelism (Megatron-Core: "no support for Pipeline parallelism with CPU offloading"); here pipeline=2
        """
        if not self.offload:
            return self
        if pipeline > 1:
            raise InputError("train: offload: activation offloading runs without pipeline parallelism (Megatron-Core: "
                             f"\"no support for Pipeline parallelism with CPU offloading\"); here pipeline={pipeline}")
        if self.recompute != "none":
            raise InputError(f"train: offload: activation offloading runs without recompute (Megatron-Core: \"CPU "
                             f"offloading does not work when activation recomputation is enabled\"); here "
                             f"recompute={self.recompute}")
        if self.offload != "auto" and self.offload >= layers:
            raise InputError(f"train: offload: {self.offload} layers: Megatron-Core offloads fewer than the model's "
                             f"{layers} layers")
        return self

    def where_allowed(self, tensor: int, sequence_parallel: bool) -> StepSettings:
        """These settings as a configuration of a search runs them: ``tp_overlap`` only where Megatron-LM allows
        it (:meth:`for_axes`), off elsewhere -- a search-wide wish, not a refusal of the configurations without
        a tensor axis (their jobs then carry no ``--tp-comm-overlap``, which Megatron-LM would refuse).

        >>> StepSettings(tp_overlap=True).where_allowed(1, False).tp_overlap, StepSettings(tp_overlap=True).where_allowed(8, True).tp_overlap
        (False, True)
        """
        return replace(self, tp_overlap=False) if self.tp_overlap and (tensor < 2 or not sequence_parallel) else self


def step_settings(text: str | None) -> tuple[str | None, StepSettings]:
    """Split ``--train``'s text into TrainingSpec's keys and the step's own (``dtype=fp8``, ``recompute=``,
    ``zero=fsdp``, ``tp_overlap=on``, ``dispatcher=``).

    Examples
    --------
    >>> step_settings("seq=4096,dtype=fp8,recompute=selective,zero=fsdp")
    ('seq=4096,dtype=bf16,data_parallel=fsdp', StepSettings(fp8=True, recompute='selective', tp_overlap=False, dispatcher='alltoall', offload=0))
    """
    kept, fp8, recompute, overlap, dispatcher, offload = [], False, "none", False, "alltoall", 0
    seen: dict[str, str] = {}
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        key, _, value = (s.strip() for s in part.partition("="))
        k, v = key.lower(), value.lower()
        if k in _STEP_KEYS:  # as TrainingSpec's keys are: one value each
            if k in seen:
                raise InputError(f"train: {k}: given twice ({seen[k]!r} and {value!r}); give it once")
            seen[k] = value
        if k == "recompute":
            recompute = parse_recompute(value)
        elif k in ("dtype", "param_dtype") and v == "fp8":
            fp8 = True  # FP8 GEMMs with BF16 weights and activations (TransformerEngine's recipes)
            kept.append(f"{key}=bf16")
        elif k == "zero" and v == "fsdp":
            kept.append("data_parallel=fsdp")
        elif k == "tp_overlap":
            if v not in _ON:  # the words sp takes (and the API's True/False, written as true/false)
                raise InputError(f"train: tp_overlap: {value!r} should be on or off")
            overlap = _ON[v]
        elif k == "offload":
            offload = _offload(value)
        elif k == "dispatcher":
            if v not in DISPATCHERS:
                raise InputError(f"train: dispatcher: {value!r} should be one of {', '.join(DISPATCHERS)}")
            dispatcher = v
        else:
            kept.append(part)
    # only the step's own keys: the training settings' defaults; nothing at all ('', ' , ') is refused where it is read
    given = text is not None and any(p.strip() for p in text.split(","))
    rest = ",".join(kept) if kept else (None if given or text is None else text)
    return rest, StepSettings(fp8, recompute, overlap, dispatcher, offload)


def _offload(value: str) -> int | str:
    """``offload=``'s value: a count of layers, ``auto`` or ``off``."""
    v = value.strip().lower()
    if v == "auto":
        return "auto"
    if v in ("off", "none"):
        return 0
    if not (v.isascii() and v.isdigit()):
        raise InputError(f"train: offload: {value!r} should be a number of layers, auto or off")
    return int(v)


_STEP_KEYS = ("recompute", "tp_overlap", "dispatcher", "offload")


def split_step_settings(value: str | Mapping[str, Any] | TrainingSpec | None
                        ) -> tuple[str | Mapping[str, Any] | TrainingSpec | None, StepSettings]:
    """``--train`` in any form :func:`training_of` takes, less the step's own settings (``dtype=fp8``,
    ``recompute=``, ``tp_overlap=``, ``dispatcher=``, ``zero=fsdp``: :func:`step_settings`), and those settings.

    A TrainingSpec or None carries none; a mapping without them is returned as it is.

    Examples
    --------
    >>> split_step_settings({"seq": 4096, "recompute": "full"})[1].recompute
    'full'
    >>> split_step_settings("seq=4096,dispatcher=hybridep")
    ('seq=4096', StepSettings(fp8=False, recompute='none', tp_overlap=False, dispatcher='hybridep', offload=0))
    """
    if value is None or isinstance(value, TrainingSpec):
        return value, StepSettings()
    if isinstance(value, Mapping):
        lowered = {str(k).lower(): v for k, v in value.items()}
        if not (any(k in lowered for k in _STEP_KEYS) or str(lowered.get("dtype", lowered.get("param_dtype", ""))).lower()
                == "fp8" or str(lowered.get("zero", "")).lower() == "fsdp"):
            return value, StepSettings()
        value = ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in value.items())
    if not isinstance(value, str):
        return value, StepSettings()  # training_of says what it is not
    return step_settings(value)
