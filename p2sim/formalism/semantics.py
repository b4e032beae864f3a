"""Device states of one reduction group and the steps that change them (formalism section 3).

Synthesis works on the ``k`` devices of one reduction group.  The formalism's state of
a device is a ``k x k`` boolean matrix ``s``: ``s[i][j]`` says chunk ``i`` of that
device already holds device ``j``'s contribution to chunk ``i``.  The rules are kept
exactly (:mod:`.rules`); only their representation is compact (:mod:`.space`; the
literal ``k x k`` form lives on in :mod:`p2sim.formalism.reference_semantics`, which the
tests compare with this one).  A :class:`State` is ``k`` local-state ids of one space.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..util.errors import SemanticsError
from .rules import Op, Space
from .space import Group, _canon

__all__ = ["Op", "Space", "State", "apply", "try_apply"]


class State:
    """States of all ``k`` devices of one reduction group (hashable, immutable).

    ``cards`` are the hierarchy's level cardinalities (product ``k``); without them the
    devices form one cyclic level.  Either way the state is exactly the formalism's:
    :meth:`matrix` gives a device's ``k x k`` matrix.
    """

    __slots__ = ("space", "ids", "_hash")

    def __init__(self, space: Space, ids: np.ndarray) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        ids.setflags(write=False)
        self.space = space
        self.ids = ids
        self._hash: int | None = None

    @classmethod
    def initial(cls, k: int, cards: Sequence[int] | None = None) -> State:
        """Device ``j`` holds its own contribution (column ``j``) to every chunk."""
        sp = Space((k,) if cards is None else cards)
        if sp.k != k:
            raise ValueError(f"cardinalities {list(cards or ())} do not multiply to {k}")
        return cls(sp, sp.initial_ids())

    @classmethod
    def from_matrices(cls, matrices: Sequence[np.ndarray], cards: Sequence[int] | None = None) -> State:
        """Build a state from one ``k x k`` boolean matrix per device."""
        k = len(matrices)
        sp = Space((k,) if cards is None else cards)
        ids = []
        for dev, m in enumerate(matrices):
            a = np.asarray(m, dtype=bool)
            if a.shape != (k, k):
                raise ValueError(f"state matrix has shape {a.shape}, expected {(k, k)}")
            neg = sp.negate(dev)
            rows, parts = 0, []
            for i in range(k):
                if a[i].any():
                    bits = int.from_bytes(np.packbits(a[i], bitorder="little").tobytes(), "little")
                    rows |= 1 << i
                    parts.append((1 << i, sp.shift(bits, neg)))
            ids.append(sp.intern(rows, _canon(parts)))
        return cls(sp, np.array(ids))

    @property
    def k(self) -> int:
        return self.space.k

    @property
    def cards(self) -> tuple[int, ...]:
        return self.space.cards

    @property
    def rows(self) -> tuple[int, ...]:
        """Each device's held rows as a ``k``-bit integer."""
        loc = self.space.locals
        return tuple(loc[u][0] for u in self.ids.tolist())

    def held_rows(self, device: int) -> int:
        """How many chunks the device holds (``len(rows(s))``) -- the data volume."""
        return self.space.counts[int(self.ids[device])]

    def matrix(self, device: int) -> np.ndarray:
        """The ``k x k`` boolean matrix of one device."""
        sp, k = self.space, self.space.k
        out = np.zeros((k, k), dtype=bool)
        for rows, rel in sp.locals[int(self.ids[device])][1]:
            absolute = sp.shift(rel, device)
            raw = np.frombuffer(absolute.to_bytes(sp._nbytes, "little"), dtype=np.uint8)
            bits = np.unpackbits(raw, bitorder="little")[:k].astype(bool)
            rr = np.frombuffer(rows.to_bytes(sp._nbytes, "little"), dtype=np.uint8)
            out[np.unpackbits(rr, bitorder="little")[:k].astype(bool)] = bits
        return out

    @property
    def is_goal(self) -> bool:
        return bool((self.ids == self.space.goal).all())

    def _content(self) -> tuple:
        loc = self.space.locals
        return tuple(loc[u] for u in self.ids.tolist())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        if self.space is other.space:
            return bool(np.array_equal(self.ids, other.ids))
        if self.k != other.k:
            return False
        if self.cards == other.cards:
            return self._content() == other._content()
        return all(np.array_equal(self.matrix(d), other.matrix(d)) for d in range(self.k))

    def __hash__(self) -> int:
        # the held rows do not depend on how contributions are stored, so states equal
        # across representations hash alike
        if self._hash is None:
            self._hash = hash((self.k, self.rows))
        return self._hash

    def __repr__(self) -> str:
        return f"State(k={self.k}, cards={list(self.cards)}, distinct local states={len(set(self.ids.tolist()))})"


def _step(state: State, op: Op, groups: Sequence[Group]) -> State | str:
    """Apply one collective to every group; return the new state or why it is invalid."""
    sp = state.space
    cur = state.ids.tolist()
    new = list(cur)
    for g in groups:
        if len(g) < 2:
            return f"a group of {len(g)} device is not a collective"
        out = sp.combine(op, sp.signature(sp.offsets_of(g)), [cur[d] for d in g])
        if isinstance(out, str):
            return out
        for d, uid in zip(g, out.tolist()):
            new[d] = uid
    return State(sp, np.array(new, dtype=np.int64))


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
    >>> s = State.initial(64, cards=[4, 16])   # one device state for all 64 devices
    >>> s = apply(s, Op.ALL_REDUCE, [tuple(range(16 * i, 16 * i + 16)) for i in range(4)])
    >>> len(set(s.ids.tolist())), s.matrix(17)[0].nonzero()[0].tolist() == list(range(16, 32))
    (1, True)
    """
    out = _step(state, op, groups)
    if isinstance(out, str):
        raise SemanticsError(out)
    return out
