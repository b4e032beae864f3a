"""The state space of one reduction group: devices as a product of cyclic levels, and interned local states.

A device's state is stored as what the collectives' rules (:mod:`.rules`) read:

* the set of rows (chunks) it holds, a ``k``-bit integer;
* its rows grouped by contributor set: ``((S_1, D_1), (S_2, D_2), ..)``, each ``S_p`` a
  set of rows holding the same contributions, each ``D_p`` a contributor set (a
  ``k``-bit integer).  Devices hold one or two such groups, not ``k`` rows.

Contributor sets are stored *relative to the device*: the devices are the group
``Z_c1 x .. x Z_cn`` of the hierarchy's levels (a device index is the mixed-radix
number of its level coordinates), and a device ``x`` holding relative set ``D`` holds
the contributions of ``{x + d : d in D}`` (levelwise addition modulo each
cardinality).  This is a bijection, so nothing is lost; its point is that the devices
of a (d)-level group are then in the *same* situation -- after an AllReduce inside
the innermost level every device holds "my whole innermost group", one value for all
``k`` devices.  Local states are interned, so a state of ``k`` devices is ``k`` small
integers naming few distinct local states.  The shift of a contributor set by an offset
is a few masked big-integer shifts.

Without a hierarchy (``cards=None``) the devices form the cyclic group ``Z_k``: still
exact, with less sharing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["StateSpace", "Group", "Local", "Outcome"]

Group = Sequence[int]
# a device's local state: (rows held, ((rows, relative contributors), ..)) -- canonical
Local = tuple[int, tuple[tuple[int, int], ...]]
Outcome = np.ndarray | str


def _canon(parts) -> tuple[tuple[int, int], ...]:
    """Merge rows with equal contributor sets; order by rows (disjoint, so a total order)."""
    by: dict[int, int] = {}
    for rows, contrib in parts:
        if rows:
            by[contrib] = by.get(contrib, 0) | rows
    return tuple(sorted((rows, contrib) for contrib, rows in by.items()))


class _Signature:
    """A group's member offsets relative to its first member (the root)."""

    __slots__ = ("offsets", "negated", "levels")

    def __init__(self, offsets: tuple[int, ...], negated: tuple[int, ...], levels: tuple[int, ...] | None) -> None:
        self.offsets = offsets
        self.negated = negated
        # when the offsets are exactly the subgroup of some levels, in mixed-radix order
        # (every instruction's groups are), uniform members take the fast paths
        self.levels = levels


class StateSpace:
    """The ``k`` devices of one reduction group as a product of cyclic levels.

    Holds the interned local states (an integer id each), the masks that shift a
    contributor set, and the caches of the collectives' rules (:class:`~.rules.Space`
    adds the rules).  States of one space share all of it; a synthesis run uses its own.

    Examples
    --------
    >>> sp = StateSpace((2, 4))
    >>> sp.k, sp.shift(0b1, 5)    # device 0's own contribution, seen from device 5
    (8, 32)
    """

    def __init__(self, cards: Sequence[int]) -> None:
        self.cards = tuple(int(c) for c in cards)
        if not self.cards or any(c < 1 for c in self.cards):
            raise ValueError(f"cardinalities {list(cards)} must be positive")
        self.k = k = math.prod(self.cards)
        self.full = (1 << k) - 1
        self.strides = tuple(math.prod(self.cards[j + 1 :]) for j in range(len(self.cards)))
        self._nbytes = (k + 7) // 8
        self._masks: dict[tuple[int, int], int] = {}
        self._plans: dict[int, list[tuple[int, int, int]]] = {}
        self._invariant: dict[tuple[int, tuple[int, ...]], bool] = {}
        self._settled: dict[tuple[int, tuple[int, ...]], bool] = {}
        self._repunits = tuple(
            self.full // ((1 << (c * s)) - 1) for c, s in zip(self.cards, self.strides)
        )
        self.locals: list[Local] = []
        self.counts: list[int] = []
        self._counts = np.zeros(16, dtype=np.int64)
        self._ids: dict[Local, int] = {}
        self._sigs: dict[tuple[int, ...], int] = {}
        self.signatures: list[_Signature] = []
        self._cache: dict[tuple, Outcome] = {}
        self._shares: dict[tuple[int, int, int], int | None] = {}  # rules.Space.share
        self._blocks: dict[tuple[int, int], list[int] | None] = {}
        self._coords: np.ndarray | None = None
        self.empty = self.intern(0, ())
        self.initial = self.intern(self.full, ((self.full, 1),))
        self.goal = self.intern(self.full, ((self.full, self.full),))

    # -- local states ---------------------------------------------------------------

    def intern(self, rows: int, parts: tuple[tuple[int, int], ...]) -> int:
        """The id of a local state (``parts`` canonical, as :func:`_canon` gives)."""
        key = (rows, parts)
        uid = self._ids.get(key)
        if uid is None:
            uid = len(self.locals)
            self._ids[key] = uid
            self.locals.append(key)
            self.counts.append(rows.bit_count())
            if uid >= len(self._counts):
                self._counts = np.resize(self._counts, 2 * uid + 16)
            self._counts[uid] = self.counts[-1]
        return uid

    def counts_of(self, uids: np.ndarray) -> np.ndarray:
        """How many rows each device holds."""
        return self._counts[uids]

    # -- offsets: levelwise addition modulo the cardinalities ------------------------

    def digits(self, index: int) -> tuple[int, ...]:
        return tuple((index // s) % c for c, s in zip(self.cards, self.strides))

    def add(self, a: int, b: int) -> int:
        out = 0
        for c, s in zip(self.cards, self.strides):
            out += (((a // s) % c + (b // s) % c) % c) * s
        return out

    def negate(self, a: int) -> int:
        out = 0
        for c, s in zip(self.cards, self.strides):
            out += ((c - (a // s) % c) % c) * s
        return out

    def _low_mask(self, level: int, t: int) -> int:
        """Devices whose digit on ``level`` is below ``c - t`` (they move up by ``t``)."""
        m = self._masks.get((level, t))
        if m is None:
            c, s = self.cards[level], self.strides[level]
            m = ((1 << ((c - t) * s)) - 1) * self._repunits[level]
            self._masks[(level, t)] = m
        return m

    def shift_level(self, d: int, level: int, t: int) -> int:
        """``{x + t e_level : x in d}`` for ``0 < t < cards[level]``."""
        c, s = self.cards[level], self.strides[level]
        low = d & self._low_mask(level, t)
        return (low << (t * s)) | ((d ^ low) >> ((c - t) * s))

    def shift(self, d: int, offset: int) -> int:
        """``{x + offset : x in d}`` for a set ``d`` of devices (a ``k``-bit integer)."""
        if offset == 0 or d == 0 or d == self.full:
            return d
        if d & (d - 1) == 0:
            return 1 << self.add(d.bit_length() - 1, offset)
        plan = self._plans.get(offset)
        if plan is None:
            plan = []
            for level, (c, s) in enumerate(zip(self.cards, self.strides)):
                t = (offset // s) % c
                if t:
                    plan.append((self._low_mask(level, t), t * s, (c - t) * s))
            self._plans[offset] = plan
        for low_mask, up, down in plan:
            low = d & low_mask
            d = (low << up) | ((d ^ low) >> down)
        return d

    def smear(self, d: int, levels: Sequence[int]) -> int:
        """The union of ``d`` shifted by every offset of the subgroup of ``levels``."""
        for level in levels:
            c, m = self.cards[level], 1
            while m < c:
                d |= self.shift_level(d, level, m)
                m <<= 1
        return d

    def invariant(self, d: int, levels: tuple[int, ...]) -> bool:
        """Whether ``d`` is unchanged by every shift within the subgroup of ``levels``."""
        key = (d, levels)
        hit = self._invariant.get(key)
        if hit is None:
            hit = all(self.cards[j] == 1 or self.shift_level(d, j, 1) == d for j in levels)
            self._invariant[key] = hit
        return hit

    def settled(self, uid: int, levels: tuple[int, ...] | None) -> bool:
        """Whether every contributor set of a local state is invariant within ``levels``:
        then the state reads the same from every member of the group."""
        if levels is None:
            return False
        key = (uid, levels)
        hit = self._settled.get(key)
        if hit is None:
            hit = all(self.invariant(d, levels) for _, d in self.locals[uid][1])
            self._settled[key] = hit
        return hit

    def _shifted(self, parts, offset: int, levels: tuple[int, ...] | None) -> list[tuple[int, int]]:
        """Parts seen from the root, given a member's offset (no work for invariant sets)."""
        if offset == 0:
            return list(parts)
        if levels is None:
            return [(s, self.shift(d, offset)) for s, d in parts]
        return [(s, d if self.invariant(d, levels) else self.shift(d, offset)) for s, d in parts]

    # -- group signatures -----------------------------------------------------------

    @property
    def coords(self) -> np.ndarray:
        if self._coords is None:
            idx = np.arange(self.k, dtype=np.int64)
            self._coords = np.stack([(idx // s) % c for c, s in zip(self.cards, self.strides)], axis=1)
        return self._coords

    def offsets_of(self, group: Sequence[int]) -> tuple[int, ...]:
        """Each member's offset from the first member."""
        if len(self.cards) == 1:
            g0, k = group[0], self.k
            return tuple((d - g0) % k for d in group)
        c = self.coords[np.asarray(group, dtype=np.int64)]
        rel = (c - c[0]) % np.asarray(self.cards)
        return tuple((rel @ np.asarray(self.strides)).tolist())

    def signature_of(self, groups: np.ndarray) -> int | None:
        """The common signature of the rows of ``groups``, or ``None`` if they differ.

        Every instruction's groups are translates of each other (same offsets from the
        root), which is what lets :meth:`step` work out each situation once.
        """
        c = self.coords[groups]
        rel = (c - c[:, :1]) % np.asarray(self.cards)
        offsets = rel @ np.asarray(self.strides)
        if not (offsets == offsets[0]).all():
            return None
        return self.signature(tuple(offsets[0].tolist()))

    def signature(self, offsets: tuple[int, ...]) -> int:
        sig = self._sigs.get(offsets)
        if sig is None:
            sig = len(self.signatures)
            self._sigs[offsets] = sig
            self.signatures.append(
                _Signature(offsets, tuple(self.negate(o) for o in offsets), self._subgroup(offsets))
            )
        return sig

    def _subgroup(self, offsets: tuple[int, ...]) -> tuple[int, ...] | None:
        """The contiguous levels whose subgroup ``offsets`` enumerates in order, if any."""
        n, depth = len(offsets), len(self.cards)
        for lo in range(depth):
            size = 1
            for hi in range(lo, depth):
                size *= self.cards[hi]
                if size > n:
                    break
                if size == n:
                    levels = tuple(range(lo, hi + 1))
                    if offsets == self._enumerate(levels):
                        return levels
        return None

    def _enumerate(self, levels: tuple[int, ...]) -> tuple[int, ...]:
        idx = np.arange(math.prod(self.cards[j] for j in levels), dtype=np.int64)
        out = np.zeros_like(idx)
        for j in reversed(levels):
            out += (idx % self.cards[j]) * self.strides[j]
            idx //= self.cards[j]
        return tuple(out.tolist())

    def initial_ids(self) -> np.ndarray:
        return np.full(self.k, self.initial, dtype=np.int64)
