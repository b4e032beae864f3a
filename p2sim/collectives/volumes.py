"""Buffer sizes of each step from the device states (formalism section 8).

A member holding ``r`` of the ``k`` chunks holds ``r/k`` of the full buffer.  An
AllReduce, ReduceScatter (input) and Reduce move the members' rows; an AllGather's
buffer is its output, the union of the members' rows; a Broadcast moves the root's
rows.  The ring and tree expansions take this buffer as ``S``.

Only the *number* of rows each device holds matters, and on a valid program the
rules fix it: AllReduce keeps it, ReduceScatter divides it by the group size,
AllGather sums the members' (disjoint) rows, Reduce empties the non-roots and
Broadcast copies the root's.  So the sizes are computed from one integer per device
of the reduction group, never from ``k x k`` states.  Whether the program is valid is
:func:`p2sim.formalism.synthesis.validate_program`'s question (synthesized programs are); the
counts are checked for the conditions they can see, so a plainly invalid program
raises :class:`~p2sim.util.errors.SemanticsError` rather than getting sizes.
"""

from __future__ import annotations

import numpy as np

from ..util.errors import SemanticsError
from ..formalism.hierarchy import Lowering, SynthesisHierarchy
from ..formalism.program import Instruction, Program
from ..formalism.semantics import Op

__all__ = ["fractions_memo", "next_fractions", "step_fractions", "step_volumes"]


def _held_after(op: Op, held: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows each group's collective moves, rows each device holds afterwards)."""
    k = len(held)
    n = groups.shape[1]
    if not op.is_reduction:  # AllToAll / SendRecv hold no rows of a reduction: they are sized by the caller
        raise SemanticsError(f"{op.value} is not a reduction step; its buffer is given, not derived from states")
    if n < 2:
        raise SemanticsError(f"a group of {n} device is not a collective")
    mine = held[groups]
    root = mine[:, 0]
    out = held.copy()
    if op is Op.ALL_GATHER:
        total = mine.sum(axis=1)
        if (mine == 0).any() or (total > k).any():
            raise SemanticsError("AllGather: members hold no data or overlapping chunks")
        out[groups] = total[:, None]
        return total, out
    if op is Op.BROADCAST:
        if (mine > root[:, None]).any():
            raise SemanticsError("Broadcast: the root does not cover every member (information would be lost)")
        out[groups] = root[:, None]
        return root, out
    if (root == 0).any() or (mine != root[:, None]).any():
        raise SemanticsError(f"{op.value}: members hold no data or different chunks")
    if op is Op.REDUCE_SCATTER:
        if (root % n).any():
            raise SemanticsError(f"ReduceScatter: chunks do not split evenly over {n} members")
        out[groups] = (root // n)[:, None]
    elif op is Op.REDUCE:
        out[groups[:, 1:]] = 0
    return root, out


def step_fractions(lowering: Lowering, program: Program,
                   memo: dict[tuple[SynthesisHierarchy, int], dict] | None = None) -> list[tuple[float, ...]]:
    """Per step, per lowered group: the fraction of the full buffer its collective moves.

    The fractions depend on the lowering's hierarchy (d) and its number of reduction groups
    alone, so ``memo`` (the caller's: a context's
    :attr:`~p2sim.collectives.caches.CollectiveCaches.row_counts`) keeps, per (d) and group
    count, the row counts after each program prefix (programs share prefixes) and each
    instruction's group array, for every lowering of that (d); the same fractions come back
    as the same objects.  Without ``memo`` nothing is kept beyond the call.

    Examples
    --------
    >>> from p2sim.formalism.placement import Placement
    >>> from p2sim.formalism.program import parse_program
    >>> lw = Lowering.of(Placement.of([256, 16], [4096], [[256, 16]]), [0])
    >>> fr = step_fractions(lw, parse_program(
    ...     "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"))
    >>> [(len(f), f[0]) for f in fr]
    [(256, 1.0), (16, 0.0625), (256, 1.0)]
    """
    kept = fractions_memo(lowering, memo)
    held = None
    out = []
    for n, ins in enumerate(program.instructions):
        held, fractions = next_fractions(lowering, held, ins, kept, program.instructions[: n + 1])
        out.append(fractions)
    return out


def fractions_memo(lowering: Lowering, memo: dict | None) -> dict:
    """The part of a :func:`step_fractions` memo for the lowering's hierarchy (d) and group count, which
    :func:`next_fractions` reads and fills (a new one without ``memo``)."""
    key = (lowering.synthesis, lowering.table.shape[0])
    if memo is None:
        return {}
    kept = memo.get(key)
    if kept is None:
        kept = memo[key] = {}
    return kept


def next_fractions(lowering: Lowering, held: np.ndarray | None, ins: Instruction, kept: dict,
                   prefix: tuple[Instruction, ...]) -> tuple[np.ndarray, tuple[float, ...]]:
    """One step of :func:`step_fractions`: the rows each device holds after ``ins``, the last instruction
    of ``prefix`` (``held``: before it, ``None`` at the start), and the step's fractions.  ``kept``: the
    memo's part for the lowering (:func:`fractions_memo`), which keeps both per prefix, and equal
    fractions as one object."""
    key = ("row counts", prefix)
    hit = kept.get(key)
    if hit is None:
        hit = kept[key] = _next_fractions(lowering, held, ins, kept)
    return hit


def _next_fractions(lowering: Lowering, held: np.ndarray | None, ins: Instruction, kept: dict
                    ) -> tuple[np.ndarray, tuple[float, ...]]:
    sh = lowering.synthesis
    k = sh.size
    groups = kept.get(("group array", ins))
    if groups is None:
        groups = kept[("group array", ins)] = sh.group_array(ins)
    moved, after = _held_after(ins.op, np.full(k, k, dtype=np.int64) if held is None else held, groups)
    # equal row counts are one (read-only) array, whatever prefix led to them: the memo keeps one per prefix,
    # and prefixes far outnumber states (gb200-nvl72-pod, 112 racks: 1,550 prefixes, 24 states; unshared, the
    # arrays were 174 MiB of a 224-rack rank's peak)
    rows = ("held", after.tobytes())
    same = kept.get(rows)
    if same is None:
        after.setflags(write=False)
        same = kept[rows] = after
    after = same
    # equal fractions are one object, whatever prefix led to them: the simulator keys its step
    # results by the object (a digest per object), and a fabric's groups number thousands
    small = tuple((moved / k).tolist())
    full = kept.get(("fractions", small))
    if full is None:
        full = kept[("fractions", small)] = small * lowering.table.shape[0]
    return after, full


def step_volumes(lowering: Lowering, program: Program, bytes_per_gpu: float) -> list[tuple[float, ...]]:
    """Per step, per lowered group (in :meth:`Lowering.lower` order): the buffer in bytes."""
    return [tuple(f * bytes_per_gpu for f in fr) for fr in step_fractions(lowering, program)]
