"""Simulation results and the effective model configuration kept with them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from ..util.errors import InputError
from ..topology.settings import ModelRates
from ..topology.spec import SystemSpec

__all__ = ["ModelConfig", "StepResult", "ProgramResult", "MODELS", "check_model"]

MODELS = ("des", "analytic", "baseline")


def check_model(model: str) -> str:
    if model not in MODELS:
        raise InputError(f"model: {model!r} is not one of {', '.join(MODELS)}")
    return model


@dataclass(frozen=True)
class ModelConfig:
    """What a run may change of the collective model: the per-channel throughput caps.

    ``rates`` replaces the system file's ``[model]`` table (calibration's fit); ``None``
    keeps the file's.  Unset rates fall back to NCCL's tables and the transport's
    default (see :mod:`p2sim.collectives.expand`).
    """

    rates: ModelRates | None = None

    @classmethod
    def of(cls, spec: SystemSpec) -> ModelConfig:
        """The configuration a system file asks for (its ``[model]`` table)."""
        return cls(spec.rates)

    def resolve(self, spec: SystemSpec) -> ModelRates:
        return spec.rates if self.rates is None else self.rates

    def to_json(self, spec: SystemSpec | None = None) -> dict[str, Any]:
        """The caps in force, and with ``spec`` the system's NCCL settings beside them."""
        rates = self.rates.to_dict() if self.rates is not None else {}
        # JSON has no infinity: an explicitly uncapped rate is null
        out: dict[str, Any] = {"rates_GBps": {k: (None if math.isinf(v) else v) for k, v in rates.items()}}
        if spec is not None:
            out["nccl"] = {f.name: (list(v) if isinstance(v := getattr(spec.nccl, f.name), tuple) else v)
                           for f in fields(spec.nccl)}
        return out


@dataclass(frozen=True)
class StepResult:
    """One step of a program: its collective, time, what its groups span, and what NCCL ran.

    ``choices`` lists the distinct (algorithm, protocol, channels) the step's groups ran.
    """

    op: str
    seconds: float
    groups: int
    group_size: int
    nodes_spanned: int  # most nodes any one group spans (1 = inside a node)
    buffer_bytes: float  # largest per-group buffer of the step
    choices: tuple[tuple[str, str, int], ...] = ()
    trace: tuple = field(default=(), compare=False, repr=False)

    @property
    def algo(self) -> str:
        """The algorithm the step ran (``mixed`` when its groups differ)."""
        names = {c[0] for c in self.choices}
        return names.pop() if len(names) == 1 else "mixed"

    @property
    def proto(self) -> str:
        names = {c[1] for c in self.choices}
        return names.pop() if len(names) == 1 else "mixed"

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "seconds": self.seconds,
            "groups": self.groups,
            "group_size": self.group_size,
            "nodes_spanned": self.nodes_spanned,
            "buffer_bytes": self.buffer_bytes,
            "algo": self.algo,
            "proto": self.proto,
            "choices": [{"algo": a, "proto": p, "channels": c} for a, p, c in self.choices],
        }


@dataclass(frozen=True)
class ProgramResult:
    text: str
    steps: tuple[StepResult, ...]

    @property
    def total_seconds(self) -> float:
        return sum(s.seconds for s in self.steps)
