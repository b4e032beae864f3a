"""The numeric oracle: run lowered programs on real numbers (formalism section 7).

Each device holds ``k`` chunks of ``c`` numbers plus a mask of the chunks it holds.
Collectives act exactly as the state semantics prescribes, but on values: sums for
reductions, a root copy for Broadcast, a row-block scatter for ReduceScatter and a
concatenation for AllGather.  Chunks a device does not hold are NaN, so any use
of data that is not there poisons the result.  The oracle knows nothing of the
bit-matrix semantics: a program that reduces a contribution twice, or loses one,
ends with wrong sums.

:func:`collective` works on the members of groups stacked along leading axes; it is
the same code that ``bench_nccl``'s CPU backend runs per group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..util.errors import SemanticsError
from .hierarchy import LoweredStep, Lowering
from .program import Program
from .semantics import Op

__all__ = ["collective", "Buffers", "execute", "check_program", "CheckResult"]


def collective(op: Op, values: np.ndarray, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Apply ``op`` to groups of members.

    Parameters
    ----------
    op : Op
        The collective.  The first member of each group is the root.
    values : ndarray, shape (g, n, k, c)
        ``g`` groups of ``n`` members, each with ``k`` chunks of ``c`` numbers.
    held : ndarray of bool, shape (g, n, k)
        Which chunks each member holds.

    Returns
    -------
    (values, held) after the collective, new arrays of the same shapes.

    Raises
    ------
    SemanticsError
        When the members' chunks do not fit the collective (different chunks for a
        reduction, overlapping chunks for AllGather, an uneven ReduceScatter).

    Examples
    --------
    >>> v = np.arange(8.0).reshape(1, 2, 2, 2); h = np.ones((1, 2, 2), bool)
    >>> collective(Op.ALL_REDUCE, v, h)[0][0, 1].tolist()
    [[4.0, 6.0], [8.0, 10.0]]
    """
    if not op.is_reduction:  # AllToAll / SendRecv are no program steps (rules.Op)
        raise SemanticsError(f"{op.value} is not a reduction step")
    g, n, k, _ = values.shape
    masked = np.where(held[..., None], values, 0.0)
    if op is Op.BROADCAST:
        return np.repeat(values[:, :1], n, axis=1), np.repeat(held[:, :1], n, axis=1)
    if op is Op.ALL_GATHER:
        if (held.sum(axis=1) > 1).any():
            raise SemanticsError("AllGather: members hold overlapping chunks")
        union = held.any(axis=1)
        total = np.where(union[..., None], masked.sum(axis=1), np.nan)
        return np.repeat(total[:, None], n, axis=1), np.repeat(union[:, None], n, axis=1)
    first = held[:, 0]
    if (held != first[:, None]).any():
        raise SemanticsError(f"{op.value}: members hold different chunks")
    total = np.where(first[..., None], masked.sum(axis=1), np.nan)
    if op is Op.ALL_REDUCE:
        return np.repeat(total[:, None], n, axis=1), held.copy()
    if op is Op.REDUCE:
        out_v = np.full_like(values, np.nan)
        out_h = np.zeros_like(held)
        out_v[:, 0], out_h[:, 0] = total, first
        return out_v, out_h
    if op is Op.REDUCE_SCATTER:
        count = first.sum(axis=1)
        if (count % n).any() or (count == 0).any():
            raise SemanticsError(f"ReduceScatter: chunks do not split evenly over {n} members")
        rank = np.cumsum(first, axis=1) - 1
        block = rank // (count // n)[:, None]
        keep = first[:, None, :] & (block[:, None, :] == np.arange(n)[None, :, None])
        out_v = np.where(keep[..., None], total[:, None], np.nan)
        return out_v, keep
    raise SemanticsError(f"unknown collective {op!r}")


@dataclass
class Buffers:
    """The data of every device: ``values[d, i, :]`` is chunk ``i`` of device ``d``."""

    values: np.ndarray
    held: np.ndarray

    @classmethod
    def random(cls, devices: int, k: int, chunk: int, rng: np.random.Generator) -> Buffers:
        """Small integer values (exact sums in float64), every chunk held."""
        vals = rng.integers(-(2**20), 2**20, size=(devices, k, chunk)).astype(np.float64)
        return cls(vals, np.ones((devices, k), dtype=bool))

    def copy(self) -> Buffers:
        return Buffers(self.values.copy(), self.held.copy())

    def run(self, step: LoweredStep) -> None:
        """Apply one lowered step in place (all its groups at once)."""
        if not step.groups:
            return
        idx = np.asarray(step.groups, dtype=np.int64)
        v, h = collective(step.op, self.values[idx], self.held[idx])
        self.values[idx], self.held[idx] = v, h


def execute(steps: Sequence[LoweredStep], buffers: Buffers) -> Buffers:
    """Run lowered steps on a copy of ``buffers``; return the final buffers."""
    out = buffers.copy()
    for s in steps:
        out.run(s)
    return out


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    reason: str = ""


def check_program(lowering: Lowering, program: Program, chunk: int = 2, seed: int = 0) -> CheckResult:
    """Execute a program on random integers; every device must end with its group's sum.

    Examples
    --------
    >>> from p2sim.formalism.placement import Placement
    >>> from p2sim.formalism.program import parse_program
    >>> lw = Lowering.of(Placement.of([2, 4], [2, 4], [[2, 1], [1, 4]]), [0])
    >>> check_program(lw, parse_program("AllReduce(slice=0, Inside)")).ok
    True
    """
    table = lowering.table
    devices = lowering.placement.devices
    k = table.shape[1]
    start = Buffers.random(devices, k, chunk, np.random.default_rng(seed))
    try:
        end = execute(lowering.lower(program), start)
    except SemanticsError as e:
        return CheckResult(False, str(e))
    expected = np.empty_like(start.values)
    expected[table] = start.values[table].sum(axis=1, keepdims=True)
    if not end.held.all():
        d = int(np.argwhere(~end.held.all(axis=1))[0][0])
        return CheckResult(False, f"device {d} ends without every chunk")
    bad = ~(end.values == expected).all(axis=(1, 2))
    if bad.any():
        return CheckResult(False, f"device {int(np.argmax(bad))} ends with wrong sums")
    return CheckResult(True)
