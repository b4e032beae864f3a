"""What a simulation answers: each step's time and what NCCL ran, and a program's steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StepResult", "ProgramResult"]


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
