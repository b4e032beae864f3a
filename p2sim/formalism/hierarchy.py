"""Synthesis hierarchies, device groups of instructions, collapse and lowering.

p2sim synthesizes on P2's hierarchy (d) (formalism section 5): a root of
cardinality 1 followed by the reduction axes' factors per hardware level.  With
several reduction axes the factors of one hardware level are collapsed into one
level (their product), lower axis the more significant digit.  Levels of
cardinality 1 are dropped: they create no new groups.

A program synthesized on (d) is *lowered* to the full system: (d)-device ``t``
stands, in every reduction group, for the ``t``-th device of the group.  Which device
is the ``t``-th depends on the *device order* (:class:`Order`) of the group:

``aligned`` (the default)
    the reduction axes' digits interleaved level by level, outer level first: all
    reduction axes' level-0 digits (lower axis more significant), then their level-1
    digits, and so on.  ``t``'s digits are then its coordinates on (d), so (d)'s
    levels line up with hardware levels: a step inside a (d) level stays inside the
    hardware level it came from.
``p2``
    row-major over the reduction-axis coordinates, as the replica groups of JAX/XLA
    list a group's devices (P2 lowered through XLA): the coordinate on the first
    reduction axis most significant, each coordinate the mixed-radix number of its
    digits over the hardware levels, outer level most significant.  When a later
    reduction axis is split across an outer level and an earlier one across an inner
    level, (d)'s inner levels then mix hardware levels, and "local" steps cross nodes.

With one reduction axis both orders are the same, and in general they differ only
in which device of a group is which (d)-device: the groups and the synthesis
hierarchy are the same.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..util.errors import InputError, PlacementError, ProgramError
from .placement import Placement
from .program import Form, Instruction, Program
from .rules import REDUCTIONS
from .semantics import Op

__all__ = ["SynthesisHierarchy", "Order", "Lowering", "LoweredStep", "reduce_axes_of"]

Groups = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class SynthesisHierarchy:
    """A synthesis hierarchy: ``cardinalities[0] == 1`` is the root, all others > 1.

    ``hardware_levels[e]`` names the hardware level that level ``e`` came from
    (``None`` for the root), so that reports can say "across nodes".

    Examples
    --------
    >>> sh = SynthesisHierarchy.of([2, 4])
    >>> sh.groups(Instruction(Op.ALL_REDUCE, 1, Form.PARALLEL, 0))
    ((0, 4), (1, 5), (2, 6), (3, 7))
    """

    cardinalities: tuple[int, ...]
    hardware_levels: tuple[int | None, ...]

    @classmethod
    def of(cls, factors: Sequence[int]) -> SynthesisHierarchy:
        """From per-hardware-level factors: prepend the root, drop levels of 1."""
        cards, levels = [1], [None]
        for j, f in enumerate(factors):
            if f < 1:
                raise PlacementError(f"hierarchy: level {j} has cardinality {f}")
            if f > 1:
                cards.append(int(f))
                levels.append(j)
        return cls(tuple(cards), tuple(levels))

    @classmethod
    def of_placement(cls, placement: Placement, reduce_axes: Sequence[int]) -> SynthesisHierarchy:
        """Hierarchy (d) of a placement, collapsing several reduction axes per level."""
        r = reduce_axes_of(placement.axes, reduce_axes)
        return cls.of([math.prod(placement.matrix[i][j] for i in r) for j in range(len(placement.hierarchy))])

    @property
    def size(self) -> int:
        return math.prod(self.cardinalities)

    @property
    def depth(self) -> int:
        """Number of levels, root included (the leaf level is ``depth - 1``)."""
        return len(self.cardinalities)

    def check(self, ins: Instruction) -> None:
        """Raise :class:`ProgramError` unless ``ins`` fits this hierarchy."""
        leaf = self.depth - 1
        if not 0 <= ins.slice < leaf:
            raise ProgramError(
                f"program: slice {ins.slice} of {ins.text} must be a non-leaf level 0..{leaf - 1} "
                f"of the synthesis hierarchy {list(self.cardinalities)}"
            )

    def groups(self, ins: Instruction) -> Groups:
        """The device groups of an instruction (single-device groups dropped).

        Devices are numbered mixed-radix over the levels; the first member of a group
        (the root of Reduce and Broadcast) is the one in the first slice group.
        """
        arr = self.group_array(ins)
        if arr.shape[1] < 2:
            return ()
        return tuple(tuple(int(x) for x in row) for row in arr)

    def group_array(self, ins: Instruction) -> np.ndarray:
        """:meth:`groups` as an array of shape (groups, members), single devices kept."""
        self.check(ins)
        inner = self.cardinalities[1:]
        e = ins.slice
        below = math.prod(inner[e:])
        if ins.form is Form.INSIDE:
            arr = np.arange(self.size).reshape(-1, below)
        else:
            a = ins.ancestor
            outer = math.prod(inner[:a])
            between = math.prod(inner[a:e])
            cube = np.arange(self.size).reshape(outer, between, below)
            if ins.form is Form.PARALLEL:
                arr = cube.transpose(0, 2, 1).reshape(-1, between)
            else:
                arr = cube[:, :, 0]
        return np.ascontiguousarray(arr)

    def instructions(self, ops: Sequence[Op] = REDUCTIONS) -> list[Instruction]:
        """Every syntactic instruction with at least one real group, in canonical order (reductions only:
        AllToAll and SendRecv are steps of a training step, never of a reduction program)."""
        out = []
        for e in range(self.depth - 1):
            forms = [(Form.INSIDE, None)]
            forms += [(Form.PARALLEL, a) for a in range(e)] + [(Form.MASTER, a) for a in range(e)]
            for form, a in forms:
                for op in ops:
                    ins = Instruction(op, e, form, a)
                    if self.group_array(ins).shape[1] > 1:
                        out.append(ins)
        return out


def reduce_axes_of(axes: Sequence[int], reduce_axes: Sequence[int]) -> tuple[int, ...]:
    """Validate reduction axis indices; return them sorted and unique."""
    if not reduce_axes:
        raise PlacementError("reduce: the list of reduction axes is empty")
    out = set()
    for r in reduce_axes:
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 0 <= r < len(axes):
            raise PlacementError(f"reduce: axis {r!r} is out of range 0..{len(axes) - 1}")
        if r in out:
            raise PlacementError(f"reduce: axis {r} is listed twice")
        out.add(int(r))
    return tuple(sorted(out))


class Order(str, enum.Enum):
    """The device order of a reduction group (see the module docstring).

    Examples
    --------
    >>> Order.parse("P2").value
    'p2'
    """

    ALIGNED = "aligned"
    P2 = "p2"

    @classmethod
    def parse(cls, text: str | Order) -> Order:
        if isinstance(text, Order):
            return text
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise InputError(f"order: {text!r} is not one of {', '.join(o.value for o in cls)}") from None


class LoweredStep:
    """One step of a lowered program: a collective on global device groups, run concurrently.

    A value (equal and hashed by ``op`` and ``groups``; not to be changed).  A lowering builds it
    from an array of groups (:meth:`of_array`) and keeps that array (:attr:`array`): the
    simulator's passes over thousands of groups read the array, and the tuples of ``groups`` are
    built only when asked for.

    Examples
    --------
    >>> s = LoweredStep.of_array(Op.ALL_REDUCE, np.array([[0, 1], [2, 3]]))
    >>> s.groups, s.array.shape, s == LoweredStep(Op.ALL_REDUCE, ((0, 1), (2, 3)))
    (((0, 1), (2, 3)), (2, 2), True)
    """

    __slots__ = ("op", "_groups", "_array")

    def __init__(self, op: Op, groups: Groups) -> None:
        self.op = op
        self._groups: Groups | None = groups
        self._array: np.ndarray | None | bool = False  # False: not computed yet

    @classmethod
    def of_array(cls, op: Op, groups: np.ndarray) -> LoweredStep:
        """The step of ``groups`` (a row of global devices each), kept as :attr:`array`."""
        step = cls(op, ())
        step._groups = None
        step._array = _frozen(groups)
        return step

    @property
    def groups(self) -> Groups:
        """Each group's global devices."""
        if self._groups is None:
            self._groups = tuple(map(tuple, self._array.tolist()))  # tolist: Python ints, in one pass
        return self._groups

    @property
    def array(self) -> np.ndarray | None:
        """The groups as a read-only ``(groups, members)`` int64 array (``None`` when their sizes differ)."""
        if self._array is False:
            g = self._groups
            self._array = (_frozen(np.array(g, dtype=np.int64)) if g and len({len(x) for x in g}) == 1
                           else None)
        return self._array

    @property
    def shape(self) -> tuple[int, int]:
        """(number of groups, members of the first group)."""
        if self.array is not None:
            return self._array.shape
        return len(self.groups), len(self.groups[0]) if self.groups else 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LoweredStep):
            return NotImplemented
        return self.op == other.op and self.groups == other.groups

    def __hash__(self) -> int:
        return hash((self.op, self.groups))

    def __repr__(self) -> str:
        return f"LoweredStep(op={self.op!r}, groups={self.groups!r})"

    def __getstate__(self) -> tuple:
        return self.op, self._groups, self._array

    def __setstate__(self, state: tuple) -> None:
        self.op, self._groups, self._array = state


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.int64, order="C")  # a copy of its own, read-only
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Lowering:
    """Maps a synthesis hierarchy's devices to global devices of a placement.

    ``table[r, t]`` is the global index of (d)-device ``t`` inside reduction group
    ``r`` under the device order ``order``; reduction groups are numbered by their
    non-reduction axis coordinates, lower axis the more significant.

    Examples
    --------
    >>> lw = Lowering.of(Placement.of([2, 4], [2, 4], [[1, 2], [2, 2]]), [0])
    >>> lw.table.tolist()
    [[0, 2], [1, 3], [4, 6], [5, 7]]

    Two reduction axes, axis 0 split over the inner level and axis 1 over the outer
    one (nodes of 4): (d) is ``[1, 2, 4]``; the aligned order keeps (d)'s inner level
    inside a node, P2's puts (d)-devices 0..3 on both nodes.

    A lowering keeps what it computes of itself (its :attr:`table`, each instruction's lowered
    step, handed out again as the same object); what other layers derive from it (the
    collectives' buffer sizes) they keep in their own caches.

    >>> pl = Placement.of([2, 4], [4, 2], [[1, 4], [2, 1]])
    >>> Lowering.of(pl, [0, 1]).table.tolist()
    [[0, 1, 2, 3, 4, 5, 6, 7]]
    >>> Lowering.of(pl, [0, 1], "p2").table.tolist()
    [[0, 4, 1, 5, 2, 6, 3, 7]]
    """

    placement: Placement
    reduce_axes: tuple[int, ...]
    synthesis: SynthesisHierarchy
    order: Order = Order.ALIGNED

    @classmethod
    def of(cls, placement: Placement, reduce_axes: Sequence[int], order: str | Order = Order.ALIGNED) -> Lowering:
        r = reduce_axes_of(placement.axes, reduce_axes)
        return cls(placement, r, SynthesisHierarchy.of_placement(placement, r), Order.parse(order))

    @cached_property
    def table(self) -> np.ndarray:
        pl = self.placement
        n_ax, n_lv = len(pl.axes), len(pl.hierarchy)
        digits = pl._digits  # array axes ordered (level j, axis i)
        keep = [j * n_ax + i for i in range(n_ax) if i not in self.reduce_axes for j in range(n_lv)]
        if self.order is Order.ALIGNED:  # level-major: (d)-device t's digits are its (d) coordinates
            red = [j * n_ax + i for j in range(n_lv) for i in self.reduce_axes]
        else:  # axis-major: row-major over the reduction-axis coordinates, as XLA's replica groups
            red = [j * n_ax + i for i in self.reduce_axes for j in range(n_lv)]
        k = self.synthesis.size
        return digits.transpose(keep + red).reshape(-1, k)

    def reduction_groups(self) -> Groups:
        """Each reduction group's global devices, in (d)-device order."""
        return tuple(tuple(int(x) for x in row) for row in self.table)

    @cached_property
    def _lowered(self) -> dict[Instruction, LoweredStep]:
        """Each instruction's lowered step, kept by the lowering itself (not part of the value)."""
        return {}

    def lower_instruction(self, ins: Instruction) -> LoweredStep:
        """The instruction applied to every reduction group (computed once; the same object after)."""
        hit = self._lowered.get(ins)
        if hit is None:
            local = np.asarray(self.synthesis.groups(ins), dtype=np.int64)
            glob = self.table[:, local].reshape(-1, local.shape[1])
            hit = LoweredStep.of_array(ins.op, glob)
            self._lowered[ins] = hit
        return hit

    def lower(self, program: Program) -> tuple[LoweredStep, ...]:
        """Every instruction applied to every reduction group at once."""
        return tuple(self.lower_instruction(i) for i in program.instructions)
