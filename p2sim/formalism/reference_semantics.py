"""The ``k x k`` bit-matrix semantics, kept as the reference for :mod:`p2sim.formalism.semantics`.

This is the formalism's device state taken literally (section 3): every device of a
reduction group of ``k`` devices holds a ``k x k`` boolean matrix, stored as one
Python integer of ``k*k`` bits (row ``i`` occupying bits ``[i*k, (i+1)*k)``) plus a
``k``-bit integer of its non-empty rows.  Memory and time grow as ``k^3``, so p2sim
itself uses the compact states of :mod:`p2sim.formalism.semantics`; this module stays so that
the tests can check, on random programs over random hierarchies, that both give the
same validity, the same states and the same buffer sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..util.errors import SemanticsError
from .semantics import Op

__all__ = ["State", "apply", "try_apply"]

Group = Sequence[int]


@lru_cache(maxsize=64)
def _row_masks(k: int) -> tuple[int, ...]:
    full = (1 << k) - 1
    return tuple(full << (i * k) for i in range(k))


@lru_cache(maxsize=64)
def _column_spread(k: int) -> int:
    """Bit ``i*k`` set for every row ``i``: shifting it by ``j`` marks column ``j``."""
    return sum(1 << (i * k) for i in range(k))


def _set_bits(x: int) -> list[int]:
    out = []
    while x:
        low = x & -x
        out.append(low.bit_length() - 1)
        x ^= low
    return out


@dataclass(frozen=True)
class State:
    """States of all ``k`` devices of one reduction group (hashable, immutable)."""

    k: int
    rows: tuple[int, ...]
    bits: tuple[int, ...]

    @classmethod
    def initial(cls, k: int) -> State:
        """Device ``j`` holds its own contribution (column ``j``) to every chunk."""
        spread = _column_spread(k)
        return cls(k, ((1 << k) - 1,) * k, tuple(spread << j for j in range(k)))

    @classmethod
    def from_matrices(cls, matrices: Sequence[np.ndarray]) -> State:
        """Build a state from one ``k x k`` boolean matrix per device."""
        k = len(matrices)
        rows, bits = [], []
        for m in matrices:
            a = np.asarray(m, dtype=bool)
            if a.shape != (k, k):
                raise ValueError(f"state matrix has shape {a.shape}, expected {(k, k)}")
            flat = np.packbits(a.reshape(-1), bitorder="little")
            bits.append(int.from_bytes(flat.tobytes(), "little"))
            rows.append(sum(1 << i for i in range(k) if a[i].any()))
        return cls(k, tuple(rows), tuple(bits))

    def matrix(self, device: int) -> np.ndarray:
        """The ``k x k`` boolean matrix of one device."""
        k = self.k
        raw = self.bits[device].to_bytes((k * k + 7) // 8, "little")
        flat = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[: k * k]
        return flat.reshape(k, k).astype(bool)

    def held_rows(self, device: int) -> int:
        """How many chunks the device holds (``len(rows(s))``) -- the data volume."""
        return self.rows[device].bit_count()

    @property
    def is_goal(self) -> bool:
        full = (1 << (self.k * self.k)) - 1
        return all(b == full for b in self.bits)


def _step(state: State, op: Op, groups: Sequence[Group]) -> State | str:
    """Apply one collective to every group; return the new state or why it is invalid."""
    k = state.k
    rows = list(state.rows)
    bits = list(state.bits)
    if not op.is_reduction:  # as rules.Space: AllToAll / SendRecv have no state in the formalism
        return f"{op.value} is not a reduction step"
    for g in groups:
        n = len(g)
        if n < 2:
            return f"a group of {n} device is not a collective"
        first = g[0]
        if op is Op.ALL_GATHER:
            acc_r = acc_b = 0
            for d in g:
                r = state.rows[d]
                if r == 0:
                    return "AllGather: a member holds no data"
                if acc_r & r:
                    return "AllGather: members hold overlapping chunks"
                acc_r |= r
                acc_b |= state.bits[d]
            for d in g:
                rows[d], bits[d] = acc_r, acc_b
            continue
        if op is Op.BROADCAST:
            b1 = state.bits[first]
            differs = False
            for d in g:
                b = state.bits[d]
                if b & ~b1:
                    return "Broadcast: the root does not cover every member (information would be lost)"
                differs = differs or b != b1
            if not differs:
                return "Broadcast: the root adds nothing to any member"
            for d in g:
                rows[d], bits[d] = state.rows[first], b1
            continue
        # AllReduce, ReduceScatter, Reduce: equal non-empty rows, disjoint columns.
        r0 = state.rows[first]
        if r0 == 0:
            return f"{op.value}: a member holds no data"
        acc = 0
        for d in g:
            if state.rows[d] != r0:
                return f"{op.value}: members hold different chunks"
            b = state.bits[d]
            if acc & b:
                return f"{op.value}: a contribution would be reduced twice"
            acc |= b
        if op is Op.ALL_REDUCE:
            for d in g:
                bits[d] = acc
        elif op is Op.REDUCE:
            for d in g:
                rows[d] = bits[d] = 0
            rows[first], bits[first] = r0, acc
        else:
            held = _set_bits(r0)
            if len(held) % n:
                return f"ReduceScatter: {len(held)} chunks do not split evenly over {n} members"
            size = len(held) // n
            masks = _row_masks(k)
            for m, d in enumerate(g):
                block = held[m * size : (m + 1) * size]
                keep = 0
                rmask = 0
                for i in block:
                    keep |= masks[i]
                    rmask |= 1 << i
                rows[d], bits[d] = rmask, acc & keep
    return State(k, tuple(rows), tuple(bits))


def try_apply(state: State, op: Op, groups: Sequence[Group]) -> State | None:
    """The state after the step, or ``None`` when a precondition fails."""
    out = _step(state, op, groups)
    return out if isinstance(out, State) else None


def apply(state: State, op: Op, groups: Sequence[Group]) -> State:
    """The state after the step; raises :class:`SemanticsError` if it is invalid.

    Examples
    --------
    >>> s = apply(State.initial(2), Op.ALL_REDUCE, [(0, 1)])
    >>> s.is_goal
    True
    >>> apply(s, Op.ALL_REDUCE, [(0, 1)])
    Traceback (most recent call last):
    ...
    p2sim.util.errors.SemanticsError: AllReduce: a contribution would be reduced twice
    """
    out = _step(state, op, groups)
    if isinstance(out, str):
        raise SemanticsError(out)
    return out
