"""Enumerative synthesis of reduction programs (formalism section 6).

Programs are enumerated in increasing length from the initial state, applying the
semantics of :mod:`p2sim.formalism.semantics`; a program ends at the first step that reaches
the goal.  Instructions with identical device groups are one instruction.  The
search is a depth-first enumeration memoised on ``(state, steps left)``: different
prefixes often reach the same state, and the programs that complete it are then
shared instead of searched again.

Two rule profiles:

``full``
    the rules exactly as the formalism states them;
``paper``
    P2's implementation, which reproduces its published counts: the ``Master`` form
    is used only with AllReduce.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..util.errors import InputError, PlacementError, ProgramError
from .hierarchy import Lowering, Order, SynthesisHierarchy, reduce_axes_of
from .placement import Matrix, Placement, check_sizes, enumerate_matrices
from .program import Form, Instruction, Program
from .semantics import Op, Space

__all__ = [
    "Profile",
    "DEFAULT_MAX_SIZE",
    "synthesize",
    "MatrixPrograms",
    "Synthesis",
    "synthesize_placements",
    "placement_lowerings",
    "validate_program",
]

DEFAULT_MAX_SIZE = 5


class Profile(str, enum.Enum):
    PAPER = "paper"
    FULL = "full"

    @classmethod
    def parse(cls, text: str | Profile) -> Profile:
        if isinstance(text, Profile):
            return text
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise InputError(f"profile: {text!r} is not one of paper, full") from None

    def allows(self, ins: Instruction) -> bool:
        return self is Profile.FULL or ins.form is not Form.MASTER or ins.op is Op.ALL_REDUCE


def _distinct_instructions(sh: SynthesisHierarchy, profile: Profile) -> list[tuple[Instruction, np.ndarray]]:
    """The profile's instructions with their group arrays, one per (collective, groups)."""
    seen: set[tuple] = set()
    out = []
    for ins in sh.instructions():
        if not profile.allows(ins):
            continue
        groups = sh.group_array(ins)
        key = (ins.op, groups.shape, groups.tobytes())
        if key not in seen:
            seen.add(key)
            out.append((ins, groups))
    return out


def _run(space: Space, ids: np.ndarray, op: Op, groups: np.ndarray, sig: int | None) -> np.ndarray | str:
    """One step on interned states; ``sig`` is ``None`` when the groups are not translates."""
    if groups.shape[1] < 2:
        return f"a group of {groups.shape[1]} device is not a collective"
    if sig is not None:
        return space.step(ids, op, groups, sig)
    for row in groups:  # never for the instructions of a hierarchy, kept for exactness
        out = space.step(ids, op, row[None, :], space.signature(space.offsets_of(row.tolist())))
        if isinstance(out, str):
            return out
        ids = out
    return ids


def _space(hierarchy: SynthesisHierarchy) -> Space:
    return Space(hierarchy.cardinalities[1:] or (1,))


def synthesize(
    hierarchy: SynthesisHierarchy, profile: Profile = Profile.PAPER, max_size: int = DEFAULT_MAX_SIZE
) -> tuple[Program, ...]:
    """Every program of at most ``max_size`` steps that reduces on ``hierarchy``.

    Shortest programs come first; programs of equal length keep the canonical
    instruction order.  The result depends only on the cardinalities, the profile and
    ``max_size``, and is cached on them: matrices with the same synthesis hierarchy
    share one synthesis (``synthesize.cache_clear()`` empties the cache).

    Examples
    --------
    >>> [p.text for p in synthesize(SynthesisHierarchy.of([4]))]
    ['AllReduce(slice=0, Inside)', 'ReduceScatter(slice=0, Inside) ; AllGather(slice=0, Inside)', 'Reduce(slice=0, Inside) ; Broadcast(slice=0, Inside)']
    >>> len(synthesize(SynthesisHierarchy.of([2, 8]))), len(synthesize(SynthesisHierarchy.of([2, 8]), Profile.FULL))
    (47, 93)
    """
    profile = Profile.parse(profile)
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise InputError(f"max-size: {max_size!r} is not a positive integer")
    if hierarchy.size < 2:
        raise PlacementError("reduce: the reduction axes have size 1, so there is nothing to reduce")
    return _synthesize(hierarchy.cardinalities, profile, max_size)


@lru_cache(maxsize=256)
def _synthesize(cardinalities: tuple[int, ...], profile: Profile, max_size: int) -> tuple[Program, ...]:
    sh = SynthesisHierarchy(cardinalities, (None,) * len(cardinalities))
    space = _space(sh)
    table = [
        (ins, groups, space.signature_of(groups)) for ins, groups in _distinct_instructions(sh, profile)
    ]
    goal, k = space.goal, space.k
    implied = _implications(table)
    derived = _allreduce_of(table)
    # each state's successors are worked out once, whatever the steps left when it is met
    moves: dict[bytes, list[tuple[int, bytes | None]]] = {}
    finishing: dict[bytes, list[int]] = {}
    states: dict[bytes, np.ndarray] = {}
    memo: dict[tuple[bytes, int], list[tuple[int, ...]]] = {}

    def successors(key: bytes) -> list[tuple[int, bytes | None]]:
        hit = moves.get(key)
        if hit is None:
            ids = states[key]
            hit = []
            valid: dict[int, bool] = {}
            after: dict[int, np.ndarray] = {}  # the AllReduces' outcomes, for derived steps
            for idx, (ins, groups, sig) in enumerate(table):
                rule = implied[idx]
                if rule is not None and valid[rule[0]] is rule[1]:
                    valid[idx] = False
                    continue
                src = derived[idx]
                if src is not None and valid[src]:
                    nxt = _after_allreduce(space, ins.op, groups, after[src])
                else:
                    nxt = _run(space, ids, ins.op, groups, sig)
                valid[idx] = not isinstance(nxt, str)
                if isinstance(nxt, str):
                    continue
                if ins.op is Op.ALL_REDUCE:
                    after[idx] = nxt
                if (nxt == goal).all():
                    hit.append((idx, None))
                else:
                    nk = nxt.tobytes()
                    states.setdefault(nk, nxt)
                    hit.append((idx, nk))
            moves[key] = hit
            finishing[key] = [idx for idx, nk in hit if nk is None]
        return hit

    finish = _Finish(space, [groups for _, groups, _ in table])

    def finishers(key: bytes) -> list[int]:
        """The instructions that reach the goal in one step (a state met with one step left)."""
        hit = finishing.get(key)
        if hit is None:
            ids = states[key]
            seen = finish.state(ids)
            hit = []
            for idx, (ins, groups, sig) in enumerate(table):
                if not finish.may(idx, ins.op, groups, seen):
                    continue
                nxt = _run(space, ids, ins.op, groups, sig)
                if not isinstance(nxt, str) and (nxt == goal).all():
                    hit.append(idx)
            finishing[key] = hit
        return hit

    def complete(key: bytes, left: int) -> list[tuple[int, ...]]:
        if left == 1:
            return [(idx,) for idx in finishers(key)]
        hit = memo.get((key, left))
        if hit is not None:
            return hit
        found: list[tuple[int, ...]] = []
        for idx, nk in successors(key):
            if nk is None:
                found.append((idx,))
            else:
                found.extend((idx,) + rest for rest in complete(nk, left - 1))
        memo[(key, left)] = found
        return found

    start = space.initial_ids()
    states[start.tobytes()] = start
    paths = complete(start.tobytes(), max_size)
    paths.sort(key=lambda p: (len(p), p))
    return tuple(Program(tuple(table[i][0] for i in p)) for p in paths)


def _implications(table: Sequence[tuple[Instruction, np.ndarray, int | None]]) -> list[tuple[int, bool] | None]:
    """For each instruction, an earlier one on the same groups whose validity decides it invalid.

    ``(j, v)`` at ``i`` says: where instruction ``j`` is valid (``v`` true) or invalid (``v``
    false), so is ``i`` invalid, by the rules of :mod:`.rules` applied group by group (a step
    is valid iff every one of its groups is):

    * ReduceScatter and Reduce check exactly what AllReduce checks (non-empty equal rows,
      disjoint contributions; ReduceScatter then also an even split): invalid where it is;
    * where AllReduce is valid, every group's members hold equal non-empty rows, which
      AllGather refuses as overlapping;
    * where AllGather is valid, every member holds rows disjoint from its root's, which
      Broadcast refuses as not covered.

    So synthesis skips the step instead of working it out; the programs are the same.
    """
    at: dict[tuple, dict[Op, int]] = {}
    for idx, (ins, groups, _) in enumerate(table):
        at.setdefault((groups.shape, groups.tobytes()), {})[ins.op] = idx
    out: list[tuple[int, bool] | None] = []
    for idx, (ins, groups, _) in enumerate(table):
        same = at[(groups.shape, groups.tobytes())]
        rule = None
        if ins.op in (Op.REDUCE_SCATTER, Op.REDUCE) and Op.ALL_REDUCE in same:
            rule = (same[Op.ALL_REDUCE], False)
        elif ins.op is Op.ALL_GATHER and Op.ALL_REDUCE in same:
            rule = (same[Op.ALL_REDUCE], True)
        elif ins.op is Op.BROADCAST and Op.ALL_GATHER in same:
            rule = (same[Op.ALL_GATHER], True)
        # the deciding instruction comes first in the table (it is worked out before)
        out.append(rule if rule is not None and rule[0] < idx else None)
    return out


def _allreduce_of(table: Sequence[tuple[Instruction, np.ndarray, int | None]]) -> list[int | None]:
    """For each ReduceScatter and Reduce, the earlier AllReduce on the same groups (translates), if any.

    Where that AllReduce is valid, so are its Reduce and, if the rows split evenly, its
    ReduceScatter, and their outcomes follow from the AllReduce's (:func:`_after_allreduce`):
    synthesis derives them instead of working the members out again.
    """
    at: dict[tuple, int] = {}
    out: list[int | None] = []
    for idx, (ins, groups, sig) in enumerate(table):
        key = (groups.shape, groups.tobytes())
        if ins.op is Op.ALL_REDUCE and sig is not None:
            at.setdefault(key, idx)
        out.append(at.get(key) if ins.op in (Op.REDUCE_SCATTER, Op.REDUCE) and sig is not None else None)
    return out


def _after_allreduce(space: Space, op: Op, groups: np.ndarray, reduced: np.ndarray) -> np.ndarray | str:
    """A Reduce or ReduceScatter's outcome from the valid AllReduce's on the same groups (``reduced``).

    The three check the same (equal non-empty rows, disjoint contributions) and compute the
    same union of contributions, each member's given relative to itself: AllReduce gives it
    to every member, Reduce to the root alone (the others are left empty), ReduceScatter to
    every member cut to its block of the rows (:meth:`~.rules.Space.share`).  Devices outside
    the groups keep their states in all three.
    """
    new = reduced.copy()
    if op is Op.REDUCE:
        new[groups[:, 1:]] = space.empty
        return new
    n = groups.shape[1]
    members = reduced[groups]
    codes, inverse = np.unique(members * n + np.arange(n), return_inverse=True)
    shares = []
    for code in codes.tolist():
        share = space.share(*divmod(code, n), n)
        if share is None:
            rows = space.locals[code // n][0]
            return f"ReduceScatter: {rows.bit_count()} chunks do not split evenly over {n} members"
        shares.append(share)
    new[groups] = np.asarray(shares, dtype=reduced.dtype)[inverse.reshape(members.shape)]
    return new


class _Finish:
    """Necessary conditions, from a state's per-device figures, for one step to reach the goal.

    The goal has every device hold all ``k`` rows, each reduced over all ``k`` devices (its
    contributor set full).  A step changes only the members of its groups, so every other
    device must be at the goal already.  Beyond that, per collective:

    * ReduceScatter leaves each member a share and Reduce empties the non-roots: neither ends
      a program;
    * AllReduce keeps the rows, so every device must hold all already; a row's contributor
      set afterwards is the disjoint union of the members' sets for it, so in every group the
      members' smallest set sizes add up to at most ``k`` and their largest to at least ``k``;
    * AllGather only unites the members' parts: every member must hold rows (no member may
      be empty), all of them already reduced over all devices, ``k`` rows in the group in all;
    * Broadcast gives every member the root's state: every root must be at the goal, and in
      every group some member not (else it adds nothing, and is invalid).

    Synthesis works out only the steps that pass; the programs are the same.
    """

    def __init__(self, space: Space, groups: Sequence[np.ndarray]) -> None:
        self.space, self.k, self.goal = space, space.k, space.goal
        self.outside = []
        for g in groups:
            free = np.ones(space.k, dtype=bool)
            free[g.reshape(-1)] = False
            self.outside.append(np.flatnonzero(free))
        # per local-state id: reduced over every device in all its rows; smallest and largest
        # contributor set; extended as states are interned
        self._complete = np.zeros(0, dtype=bool)
        self._small = np.zeros(0, dtype=np.int64)
        self._large = np.zeros(0, dtype=np.int64)
        self._known = 0  # ids worked out so far

    def _extend(self) -> None:
        sp, have, need = self.space, self._known, len(self.space.locals)
        if need > len(self._complete):  # room doubled, as the space's own row counts
            size = 2 * need + 16
            self._complete = np.resize(self._complete, size)
            self._small = np.resize(self._small, size)
            self._large = np.resize(self._large, size)
        for uid in range(have, need):
            rows, parts = sp.locals[uid]
            sizes = [d.bit_count() for _, d in parts] or [0]
            self._complete[uid] = rows != 0 and all(d == sp.full for _, d in parts)
            self._small[uid], self._large[uid] = min(sizes), max(sizes)
        self._known = need

    def state(self, ids: np.ndarray) -> dict[str, np.ndarray | bool]:
        """The figures :meth:`may` reads, worked out once per state (lazily)."""
        held = self.space.counts_of(ids)
        return {"ids": ids, "held": held, "full": bool((held == self.k).all())}

    def _figure(self, seen: dict, name: str) -> np.ndarray:
        got = seen.get(name)
        if got is None:
            ids = seen["ids"]
            if name == "at_goal":
                got = ids == self.goal
            else:
                if self._known < len(self.space.locals):
                    self._extend()
                got = {"complete": self._complete, "small": self._small, "large": self._large}[name][ids]
            seen[name] = got
        return got

    def may(self, idx: int, op: Op, groups: np.ndarray, seen: dict) -> bool:
        k = self.k
        if op is Op.ALL_REDUCE:
            if not seen["full"]:
                return False
        elif op is Op.ALL_GATHER:
            if not (seen["held"][groups].sum(axis=1) == k).all():
                return False
        elif op is Op.BROADCAST:
            at_goal = self._figure(seen, "at_goal")
            if not at_goal[groups[:, 0]].all():
                return False
        else:
            return False
        out = self.outside[idx]
        if len(out) and not self._figure(seen, "at_goal")[out].all():
            return False
        if op is Op.ALL_REDUCE:
            return bool((self._figure(seen, "small")[groups].sum(axis=1) <= k).all()
                        and (self._figure(seen, "large")[groups].sum(axis=1) >= k).all())
        if op is Op.ALL_GATHER:
            return bool(self._figure(seen, "complete")[groups].all())
        return bool((~self._figure(seen, "at_goal")[groups]).any(axis=1).all())


synthesize.cache_clear = _synthesize.cache_clear  # type: ignore[attr-defined]
synthesize.cache_info = _synthesize.cache_info  # type: ignore[attr-defined]


def validate_program(hierarchy: SynthesisHierarchy, program: Program) -> None:
    """Raise :class:`ProgramError` unless ``program`` is valid on ``hierarchy`` and reduces fully.

    Works on compact states, so it is cheap for reduction groups of thousands of devices;
    nothing is synthesized.

    Examples
    --------
    >>> from p2sim.formalism.program import parse_program
    >>> sh = SynthesisHierarchy.of([1024, 16])
    >>> validate_program(sh, parse_program(
    ...     "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"))
    >>> validate_program(sh, parse_program("AllReduce(slice=1, Inside) ; AllReduce(slice=0, Inside)"))
    Traceback (most recent call last):
    ...
    p2sim.util.errors.ProgramError: program: step 2 AllReduce(slice=0, Inside) is invalid here: AllReduce: a contribution would be reduced twice
    """
    space = _space(hierarchy)
    ids = space.initial_ids()
    for n, ins in enumerate(program.instructions, 1):
        groups = hierarchy.group_array(ins)
        out = _run(space, ids, ins.op, groups, space.signature_of(groups) if groups.shape[1] > 1 else None)
        if isinstance(out, str):
            raise ProgramError(f"program: step {n} {ins.text} is invalid here: {out}")
        ids = out
    if not (ids == space.goal).all():
        raise ProgramError(f"program: {program.text!r} does not complete the reduction")


@dataclass(frozen=True)
class MatrixPrograms:
    """One parallelism matrix, its synthesis hierarchy, and its programs."""

    matrix: Matrix
    lowering: Lowering
    programs: tuple[Program, ...]

    @property
    def synthesis(self) -> SynthesisHierarchy:
        return self.lowering.synthesis


@dataclass(frozen=True)
class Synthesis:
    """Synthesis over every matrix of a configuration (the effective inputs kept)."""

    hierarchy: tuple[int, ...]
    axes: tuple[int, ...]
    reduce_axes: tuple[int, ...]
    profile: Profile
    max_size: int
    matrices: tuple[MatrixPrograms, ...] = field(repr=False)
    order: Order = Order.ALIGNED  # the device order of the lowerings

    @property
    def total_programs(self) -> int:
        return sum(len(m.programs) for m in self.matrices)


def placement_lowerings(
    hierarchy: Sequence[int],
    axes: Sequence[int],
    reduce_axes: Sequence[int],
    matrices: Sequence[Matrix] | None = None,
    order: str | Order = Order.ALIGNED,
) -> tuple[Lowering, ...]:
    """The lowering of every matrix (enumerated, or the given ones) in a device order, nothing synthesized.

    Examples
    --------
    >>> [lw.synthesis.cardinalities for lw in placement_lowerings([2, 16], [2, 16], [1])]
    [(1, 2, 8), (1, 16)]
    """
    h, p = check_sizes(hierarchy, axes)
    red = reduce_axes_of(p, reduce_axes)
    if math.prod(p[i] for i in red) < 2:
        raise PlacementError("reduce: the reduction axes have size 1, so there is nothing to reduce")
    mats = enumerate_matrices(h, p) if matrices is None else list(matrices)
    return tuple(Lowering.of(Placement.of(h, p, m), red, Order.parse(order)) for m in mats)


def synthesize_placements(
    hierarchy: Sequence[int],
    axes: Sequence[int],
    reduce_axes: Sequence[int],
    profile: Profile | str = Profile.PAPER,
    max_size: int = DEFAULT_MAX_SIZE,
    matrices: Sequence[Matrix] | None = None,
    order: str | Order = Order.ALIGNED,
) -> Synthesis:
    """Enumerate matrices (or take the given ones) and synthesize programs for each.

    The programs depend on the synthesis hierarchy only; ``order`` (the device order
    of a reduction group, :class:`~p2sim.formalism.hierarchy.Order`) changes their lowerings.

    Examples
    --------
    >>> s = synthesize_placements([2, 16], [2, 16], [1])
    >>> len(s.matrices), s.total_programs
    (2, 50)
    """
    h, p = check_sizes(hierarchy, axes)
    prof = Profile.parse(profile)
    order = Order.parse(order)
    lws = placement_lowerings(h, p, reduce_axes, matrices, order)
    out = [MatrixPrograms(lw.placement.matrix, lw, synthesize(lw.synthesis, prof, max_size)) for lw in lws]
    red = lws[0].reduce_axes if lws else reduce_axes_of(p, reduce_axes)
    return Synthesis(h, p, red, prof, max_size, tuple(out), order)
