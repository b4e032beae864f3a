"""The five collectives' pre- and postconditions on compact states (formalism section 3).

:class:`Space` is a :class:`~.space.StateSpace` with the rules: a collective on a group
of members' local states gives their new local states, or the reason it is invalid
(AllReduce / ReduceScatter / Reduce need equal non-empty rows and disjoint
contributions, ReduceScatter rows that split evenly, AllGather non-empty disjoint rows,
Broadcast a root that covers every member and adds something).  A collective is worked
out once per distinct tuple of member states and cached, not once per group.

Examples
--------
>>> sp = Space((2,))
>>> out = sp.combine(Op.ALL_REDUCE, sp.signature((0, 1)), [sp.initial, sp.initial])
>>> [sp.locals[u] for u in out.tolist()] == [sp.locals[sp.goal]] * 2
True
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import numpy as np

from .space import Outcome, StateSpace, _canon, _Signature

__all__ = ["Op", "Space", "REDUCTIONS"]


class Op(str, enum.Enum):
    """The collectives, valued by their text-form names: the five reductions P2's programs are made of
    (:data:`REDUCTIONS`), and the two point-to-point patterns a training step also runs (AllToAll over
    an expert axis, SendRecv between pipeline stages), which the simulator times but programs never
    contain: they move data, they reduce nothing, so the formalism's rules have no state for them."""

    ALL_REDUCE = "AllReduce"
    REDUCE_SCATTER = "ReduceScatter"
    ALL_GATHER = "AllGather"
    REDUCE = "Reduce"
    BROADCAST = "Broadcast"
    ALL_TO_ALL = "AllToAll"
    SEND_RECV = "SendRecv"

    @property
    def is_reduction(self) -> bool:
        """Whether programs may contain it (synthesis and the rules know only these)."""
        return self not in (Op.ALL_TO_ALL, Op.SEND_RECV)

    @classmethod
    def parse(cls, name: str) -> Op:
        for op in cls:
            if op.value.lower() == name.strip().lower():
                return op
        raise ValueError(f"unknown collective {name!r} (expected one of {', '.join(o.value for o in cls)})")


# the collectives of programs, in the order synthesis has always enumerated them
REDUCTIONS = tuple(op for op in Op if op.is_reduction)


class Space(StateSpace):
    """A state space with the collectives' rules (see the module docstring)."""

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
        if not op.is_reduction:
            return f"{op.value} is not a reduction step: programs are made of {', '.join(o.value for o in REDUCTIONS)}"
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

    def share(self, uid: int, m: int, n: int) -> int | None:
        """Member ``m``'s state after a ReduceScatter over ``n`` members, from its state after the
        AllReduce on the same group (``uid``): the same parts cut to its block of the rows
        (:meth:`_work` gives the ``m``-th member exactly that), or ``None`` when the rows do
        not split evenly (the ReduceScatter is then invalid)."""
        key = (uid, m, n)
        hit = self._shares.get(key, -1)
        if hit == -1:
            rows, parts = self.locals[uid]
            blocks = self._split(rows, n)
            if blocks is None:
                hit = None
            else:
                block = blocks[m]
                hit = self.intern(block, _canon([(s & block, d) for s, d in parts]))
            self._shares[key] = hit
        return hit

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
