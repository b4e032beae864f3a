"""Simulation results and the effective model configuration kept with them."""

from __future__ import annotations

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

    ``efficiency`` scales the achievable rate of each algorithm (1.0 = links run at
    their file figures); calibration fits it.  ``base_latency`` is NCCL's per-collective
    start-up latency in seconds.
    """

    base_latency: float = BASE_LATENCY_S
    ring_efficiency: float = 1.0
    tree_efficiency: float = 1.0

    @classmethod
    def of(cls, spec: SystemSpec) -> ModelConfig:
        """The configuration a system file asks for (its ``[model]`` table)."""
        return cls(ring_efficiency=spec.efficiency["ring"], tree_efficiency=spec.efficiency["tree"])

    def efficiency(self, algo: str) -> float:
        return self.tree_efficiency if algo == "tree" else self.ring_efficiency

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
