"""Device states and the five collectives' pre- and postconditions (formalism section 3).

Synthesis works on the ``k`` devices of one reduction group.  The formalism's state of
a device is a ``k x k`` boolean matrix ``s``: ``s[i][j]`` says chunk ``i`` of that
device already holds device ``j``'s contribution to chunk ``i``.  The rules are kept
exactly; only their representation is compact (the literal ``k x k`` form lives on in
:mod:`p2sim.formalism.reference_semantics`, which the tests compare with this one).

Representation
--------------
A device's state is stored as what the rules read:

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
``k`` devices.  Local states are interned in a :class:`Space`, so a state of ``k``
devices is ``k`` small integers naming few distinct local states, and a collective
is worked out once per distinct tuple of member states, not once per group.  The
shift of a contributor set by an offset is a few masked big-integer shifts.

Without a hierarchy (``cards=None``) the devices form the cyclic group ``Z_k``: still
exact, with less sharing.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence

import numpy as np

from ..util.errors import SemanticsError

__all__ = ["Op", "Space", "State", "apply", "try_apply"]

Group = Sequence[int]
# a device's local state: (rows held, ((rows, relative contributors), ..)) -- canonical
Local = tuple[int, tuple[tuple[int, int], ...]]
Outcome = np.ndarray | str


class Op(str, enum.Enum):
    """The five collectives, valued by their text-form names."""

    ALL_REDUCE = "AllReduce"
    REDUCE_SCATTER = "ReduceScatter"
    ALL_GATHER = "AllGather"
    REDUCE = "Reduce"
    BROADCAST = "Broadcast"

    @classmethod
    def parse(cls, name: str) -> Op:
        for op in cls:
            if op.value.lower() == name.strip().lower():
                return op
        raise ValueError(f"unknown collective {name!r} (expected one of {', '.join(o.value for o in cls)})")


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


class Space:
    """The ``k`` devices of one reduction group as a product of cyclic levels.

    Holds the interned local states (an integer id each), the masks that shift a
    contributor set, and a cache of collectives already worked out.  States of one
    space share all of it; a synthesis run uses its own space.

    Examples
    --------
    >>> sp = Space((2, 4))
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

    # -- the collectives --------------------------------------------------------------

    def combine(self, op: Op, sig: int, members: Sequence[int] | np.ndarray) -> Outcome:
        """The members' new local states after ``op``, or why it is invalid.

        ``members`` are local-state ids in group order (the first is the root), ``sig``
        the group's signature.  Results are cached.
        """
        ck = (op, sig, members.tobytes() if isinstance(members, np.ndarray) else tuple(members))
        hit = self._cache.get(ck)
        if hit is None:
            listed = members.tolist() if isinstance(members, np.ndarray) else list(members)
            hit = self._work(op, self.signatures[sig], listed)
            if not isinstance(hit, str):
                hit = np.array(hit, dtype=np.int64)
            self._cache[ck] = hit
        return hit

    def _work(self, op: Op, sig: _Signature, members: list[int]) -> tuple[int, ...] | str:
        n = len(members)
        if n < 2:
            return f"a group of {n} device is not a collective"
        loc = self.locals
        uniform = sig.levels is not None and members.count(members[0]) == n
        if op is Op.ALL_GATHER:
            return self._all_gather(sig, members, uniform)
        if op is Op.BROADCAST:
            return self._broadcast(sig, members, uniform)
        rows0 = loc[members[0]][0]
        if rows0 == 0:
            return f"{op.value}: a member holds no data"
        if uniform:
            # every member holds the same relative contributions d: the union over the group
            # is d smeared over its levels, and the members are disjoint iff nothing overlaps
            cells = []
            for rows, d in loc[members[0]][1]:
                u = self.smear(d, sig.levels)
                if u.bit_count() != n * d.bit_count():
                    return f"{op.value}: a contribution would be reduced twice"
                cells.append((rows, u))
            invariant = True
        else:
            cells = None
            for uid, off in zip(members, sig.offsets):
                rows, parts = loc[uid]
                if rows != rows0:
                    return f"{op.value}: members hold different chunks"
                shifted = parts if self.settled(uid, sig.levels) else self._shifted(parts, off, sig.levels)
                if cells is None:
                    cells = shifted
                    continue
                refined = []
                for cs, acc in cells:
                    for s, d in shifted:
                        both = cs & s
                        if both:
                            if acc & d:
                                return f"{op.value}: a contribution would be reduced twice"
                            refined.append((both, acc | d))
                cells = refined
            invariant = sig.levels is not None and all(self.invariant(u, sig.levels) for _, u in cells)
        union = _canon(cells)
        if op is Op.ALL_REDUCE:
            return self._spread(rows0, union, sig, invariant)
        if op is Op.REDUCE:
            return (self.intern(rows0, union),) + (self.empty,) * (n - 1)
        blocks = self._split(rows0, n)
        if blocks is None:
            return f"ReduceScatter: {rows0.bit_count()} chunks do not split evenly over {n} members"
        out = []
        for block, neg in zip(blocks, sig.negated):
            mine = [(s & block, u) for s, u in (union if invariant else self._shifted(union, neg, sig.levels))]
            out.append(self.intern(block, _canon(mine)))
        return tuple(out)

    def _spread(self, rows: int, parts: tuple, sig: _Signature, invariant: bool) -> tuple[int, ...]:
        """Every member gets the same absolute state, given relative to the root."""
        if invariant:
            return (self.intern(rows, parts),) * len(sig.offsets)
        return tuple(self.intern(rows, _canon(self._shifted(parts, neg, sig.levels))) for neg in sig.negated)

    def _all_gather(self, sig: _Signature, members: list[int], uniform: bool) -> tuple[int, ...] | str:
        loc = self.locals
        if uniform:  # equal rows on two or more members
            return ("AllGather: a member holds no data" if loc[members[0]][0] == 0
                    else "AllGather: members hold overlapping chunks")
        acc = 0
        parts = []
        for uid, off in zip(members, sig.offsets):
            rows, ps = loc[uid]
            if rows == 0:
                return "AllGather: a member holds no data"
            if acc & rows:
                return "AllGather: members hold overlapping chunks"
            acc |= rows
            parts.extend(ps if self.settled(uid, sig.levels) else self._shifted(ps, off, sig.levels))
        union = _canon(parts)
        invariant = sig.levels is not None and all(self.invariant(d, sig.levels) for _, d in union)
        return self._spread(acc, union, sig, invariant)

    def _broadcast(self, sig: _Signature, members: list[int], uniform: bool) -> tuple[int, ...] | str:
        loc = self.locals
        rows0, parts0 = loc[members[0]]
        if uniform:
            # a shifted set equals the original or is not inside it (same size): the root
            # covers everyone iff its sets are invariant, and then it adds nothing
            if all(self.invariant(d, sig.levels) for _, d in parts0):
                return "Broadcast: the root adds nothing to any member"
            return "Broadcast: the root does not cover every member (information would be lost)"
        differs = False
        checked = set()  # settled states read the same from every member: check them once
        for uid, off in zip(members, sig.offsets):
            if uid in checked:
                continue
            rows, parts = loc[uid]
            if rows & ~rows0:
                return "Broadcast: the root does not cover every member (information would be lost)"
            if self.settled(uid, sig.levels):
                checked.add(uid)
                shifted = list(parts)
            else:
                shifted = self._shifted(parts, off, sig.levels)
            for s, d in shifted:
                for s0, d0 in parts0:
                    if s & s0 and d & ~d0:
                        return "Broadcast: the root does not cover every member (information would be lost)"
            differs = differs or rows != rows0 or _canon(shifted) != parts0
        if not differs:
            return "Broadcast: the root adds nothing to any member"
        invariant = sig.levels is not None and all(self.invariant(d, sig.levels) for _, d in parts0)
        return self._spread(rows0, parts0, sig, invariant)

    def _split(self, rows: int, n: int) -> list[int] | None:
        """ReduceScatter's blocks: the sorted rows cut into ``n`` consecutive runs."""
        key = (rows, n)
        if key in self._blocks:
            return self._blocks[key]
        count = rows.bit_count()
        out: list[int] | None = None
        if count % n == 0:
            b = count // n
            low = (rows & -rows).bit_length() - 1
            if rows >> low == (1 << count) - 1:  # one run of rows: blocks are shifted masks
                out = [((1 << b) - 1) << (low + m * b) for m in range(n)]
            else:
                raw = np.frombuffer(rows.to_bytes(self._nbytes, "little"), dtype=np.uint8)
                pos = np.flatnonzero(np.unpackbits(raw, bitorder="little")).tolist()
                out = []
                for m in range(n):
                    x = 0
                    for p in pos[m * b : (m + 1) * b]:
                        x |= 1 << p
                    out.append(x)
        self._blocks[key] = out
        return out

    # -- whole steps ------------------------------------------------------------------

    def step(self, uids: np.ndarray, op: Op, groups: np.ndarray, sig: int) -> np.ndarray | str:
        """Apply ``op`` to every row of ``groups`` (all with signature ``sig``).

        ``uids`` holds each device's local-state id.  Returns the new ids, or the reason
        of the first invalid group (groups in the same situation are worked out once).
        """
        first = uids[groups[0]]
        out = self.combine(op, sig, first)
        if isinstance(out, str):
            return out
        members = uids[groups]
        new = uids.copy()
        if len(members) == 1 or (members == first).all():
            new[groups] = out
            return new
        firsts, inverse = _distinct_rows(members)
        results = np.empty((len(firsts), members.shape[1]), dtype=uids.dtype)
        for u, at in enumerate(firsts.tolist()):  # in order of first occurrence
            out = self.combine(op, sig, members[at])
            if isinstance(out, str):
                return out
            results[u] = out
        new[groups] = results[inverse]
        return new

    def initial_ids(self) -> np.ndarray:
        return np.full(self.k, self.initial, dtype=np.int64)


# odd 64-bit weights for hashing rows of state ids; any fixed values do (a collision is
# detected and costs only an exact np.unique), the seed keeps runs identical
_HASH_WEIGHTS = np.random.default_rng(20221).integers(1, 2**63, size=1 << 16, dtype=np.uint64) | np.uint64(1)


def _distinct_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First index of each distinct row of ``a`` (in order of appearance), and each row's class.

    Rows are hashed to one number (then checked, so a hash collision only costs time).
    """
    n = a.shape[1]
    if n <= len(_HASH_WEIGHTS):
        h = (a.astype(np.uint64) * _HASH_WEIGHTS[:n]).sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        if (a == a[first[inverse]]).all():
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            return first[order], rank[inverse.reshape(-1)]
    _, first, inverse = np.unique(a, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.reshape(-1)]


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
