"""Enumerative synthesis of reduction programs (formalism section 6).

Programs are enumerated in increasing length from the initial state, applying the
semantics of :mod:`p2sim.semantics`; a program ends at the first step that reaches
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

from .errors import InputError, PlacementError
from .hierarchy import Lowering, Order, SynthesisHierarchy, reduce_axes_of
from .placement import Matrix, Placement, check_sizes, enumerate_matrices
from .program import Form, Instruction, Program
from .semantics import Op, State, try_apply

__all__ = [
    "Profile",
    "DEFAULT_MAX_SIZE",
    "synthesize",
    "MatrixPrograms",
    "Synthesis",
    "synthesize_placements",
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


def _distinct_instructions(sh: SynthesisHierarchy, profile: Profile) -> list[tuple[Instruction, tuple]]:
    seen: set[tuple] = set()
    out = []
    for ins in sh.instructions():
        if not profile.allows(ins):
            continue
        groups = sh.groups(ins)
        key = (ins.op, groups)
        if key not in seen:
            seen.add(key)
            out.append((ins, groups))
    return out


@lru_cache(maxsize=256)
def synthesize(
    hierarchy: SynthesisHierarchy, profile: Profile = Profile.PAPER, max_size: int = DEFAULT_MAX_SIZE
) -> tuple[Program, ...]:
    """Every program of at most ``max_size`` steps that reduces on ``hierarchy``.

    Shortest programs come first; programs of equal length keep the canonical
    instruction order.  The result depends only on the arguments and is cached.

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
    k = hierarchy.size
    if k < 2:
        raise PlacementError("reduce: the reduction axes have size 1, so there is nothing to reduce")
    table = _distinct_instructions(hierarchy, profile)
    memo: dict[tuple[State, int], list[tuple[int, ...]]] = {}

    def complete(state: State, left: int) -> list[tuple[int, ...]]:
        key = (state, left)
        hit = memo.get(key)
        if hit is not None:
            return hit
        found: list[tuple[int, ...]] = []
        for idx, (ins, groups) in enumerate(table):
            nxt = try_apply(state, ins.op, groups)
            if nxt is None:
                continue
            if nxt.is_goal:
                found.append((idx,))
            elif left > 1:
                found.extend((idx,) + rest for rest in complete(nxt, left - 1))
        memo[key] = found
        return found

    paths = complete(State.initial(k), max_size)
    paths.sort(key=lambda p: (len(p), p))
    return tuple(Program(tuple(table[i][0] for i in p)) for p in paths)


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
    of a reduction group, :class:`~p2sim.hierarchy.Order`) changes their lowerings.

    Examples
    --------
    >>> s = synthesize_placements([2, 16], [2, 16], [1])
    >>> len(s.matrices), s.total_programs
    (2, 50)
    """
    h, p = check_sizes(hierarchy, axes)
    prof = Profile.parse(profile)
    order = Order.parse(order)
    red = reduce_axes_of(p, reduce_axes)
    if math.prod(p[i] for i in red) < 2:
        raise PlacementError("reduce: the reduction axes have size 1, so there is nothing to reduce")
    mats = enumerate_matrices(h, p) if matrices is None else list(matrices)
    out = []
    for m in mats:
        lw = Lowering.of(Placement.of(h, p, m), red, order)
        out.append(MatrixPrograms(lw.placement.matrix, lw, synthesize(lw.synthesis, prof, max_size)))
    return Synthesis(h, p, red, prof, max_size, tuple(out), order)
