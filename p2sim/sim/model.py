"""Simulation results and the effective model configuration kept with them."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ..collectives.latency import BASE_LATENCY_S
from ..errors import InputError
from ..topology.spec import SystemSpec

__all__ = ["ModelConfig", "StepResult", "ProgramResult", "MODELS", "check_model"]

MODELS = ("des", "analytic")


def check_model(model: str) -> str:
    if model not in MODELS:
        raise InputError(f"model: {model!r} is not one of {', '.join(MODELS)}")
    return model


@dataclass(frozen=True)
class ModelConfig:
    """Knobs of the collective model.

    ``*_efficiency`` is the share of the network's figures an algorithm achieves on its
    inter-node hops (1.0 = the file's figures); ``*_max_rate`` (bytes/s) caps the bytes per second the
    busiest member of one collective can send -- NCCL's per-channel throughput times
    its channels -- and binds on fast links only.  Calibration fits both.  ``base_latency`` is NCCL's
    per-collective start-up latency in seconds.
    """

    base_latency: float = BASE_LATENCY_S
    ring_efficiency: float = 1.0
    tree_efficiency: float = 1.0
    ring_max_rate: float = math.inf
    tree_max_rate: float = math.inf

    @classmethod
    def of(cls, spec: SystemSpec) -> ModelConfig:
        """The configuration a system file asks for (its ``[model]`` table)."""
        return cls(ring_efficiency=spec.efficiency["ring"], tree_efficiency=spec.efficiency["tree"],
                   ring_max_rate=spec.max_rate["ring"] * 1e9, tree_max_rate=spec.max_rate["tree"] * 1e9)

    def efficiency(self, algo: str) -> float:
        return self.tree_efficiency if algo == "tree" else self.ring_efficiency

    def max_rate(self, algo: str) -> float:
        return self.tree_max_rate if algo == "tree" else self.ring_max_rate

    def to_json(self) -> dict[str, Any]:
        # JSON has no infinity: an absent cap is null
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class StepResult:
    """One step of a program: its collective, time, and what its groups span."""

    op: str
    seconds: float
    groups: int
    group_size: int
    nodes_spanned: int  # most nodes any one group spans (1 = inside a node)
    buffer_bytes: float  # largest per-group buffer of the step
    trace: tuple = field(default=(), compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "seconds": self.seconds,
            "groups": self.groups,
            "group_size": self.group_size,
            "nodes_spanned": self.nodes_spanned,
            "buffer_bytes": self.buffer_bytes,
        }


@dataclass(frozen=True)
class ProgramResult:
    text: str
    steps: tuple[StepResult, ...]

    @property
    def total_seconds(self) -> float:
        return sum(s.seconds for s in self.steps)
