"""A step's collectives as a text table: axis, operation, phase, size, count, bytes per step, formula.

Sizes print in binary units (:func:`p2sim.util.units.format_bytes`); the last line sums the bytes per
step by axis, the communication of one step with no overlap (each call counted once, as nccl-tests
counts its ``size``).

Examples
--------
>>> from p2sim.workload.model_files import load_model
>>> from p2sim.workload.step import step_collectives
>>> from p2sim.workload.training import TrainingSpec
>>> print(step_table(step_collectives(load_model("llama3-8b"), TrainingSpec(seq_length=8192, global_batch=64),
...                                   {"tensor": 8, "pipeline": 4, "data": 8})))
axis      op         phase     size       count  per step   formula
tensor    AllReduce  forward   64 MiB       128  8 GiB      b*s/c*h*B; 2*L/p*m
tensor    AllReduce  backward  64 MiB       128  8 GiB      b*s/c*h*B; 2*L/p*m
pipeline  SendRecv   forward   64 MiB         8  512 MiB    b*s/c*h*B activations; m*v
pipeline  SendRecv   backward  64 MiB         8  512 MiB    b*s/c*h*B gradients; m*v
data      AllReduce  backward  957.3 MiB      1  957.3 MiB  params/(t*p)*G; 1
per step: tensor 16 GiB, pipeline 1 GiB, data 957.3 MiB
"""

from __future__ import annotations

from collections.abc import Sequence

from ..util.units import format_bytes
from .step import StepCollective

__all__ = ["step_table", "bytes_by_axis"]

_HEADER = ("axis", "op", "phase", "size", "count", "per step", "formula")
_RIGHT = frozenset({4})  # counts align right; sizes read best left-aligned with their units


def bytes_by_axis(collectives: Sequence[StepCollective]) -> dict[str, int]:
    """Bytes per step of each axis (group), in the order the axes first appear."""
    out: dict[str, int] = {}
    for c in collectives:
        out[c.axis] = out.get(c.axis, 0) + c.total_bytes
    return out


def step_table(collectives: Sequence[StepCollective]) -> str:
    """The collectives one per line under a header, then the bytes per step by axis (no trailing newline)."""
    rows = [_HEADER] + [(c.axis, c.op, c.phase, format_bytes(c.size), str(c.count), format_bytes(c.total_bytes),
                         c.formula) for c in collectives]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER) - 1)]
    lines = ["  ".join([cell.rjust(widths[i]) if i in _RIGHT else cell.ljust(widths[i])
                        for i, cell in enumerate(r[:-1])] + [r[-1]]) for r in rows]
    totals = bytes_by_axis(collectives)
    lines.append("per step: " + (", ".join(f"{axis} {format_bytes(b)}" for axis, b in totals.items())
                                 if totals else "no communication (every axis has size 1)"))
    return "\n".join(lines)
