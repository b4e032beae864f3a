"""Buffer sizes of each step from the device states (formalism section 8).

A member holding ``r`` of the ``k`` chunks holds ``r/k`` of the full buffer.  An
AllReduce, ReduceScatter (input) and Reduce move the members' rows; an AllGather's
buffer is its output, the union of the members' rows; a Broadcast moves the root's
rows.  The ring and tree expansions take this buffer as ``S``.
"""

from __future__ import annotations

from ..hierarchy import Lowering
from ..program import Program
from ..semantics import Op, State, apply

__all__ = ["step_fractions", "step_volumes"]


def step_fractions(lowering: Lowering, program: Program) -> list[tuple[float, ...]]:
    """Per step, per lowered group: the fraction of the full buffer its collective moves.

    States after each prefix are memoised on the lowering: programs share prefixes.
    """
    sh = lowering.synthesis
    k = sh.size
    reps = lowering.table.shape[0]
    state = State.initial(k)
    out = []
    for n, ins in enumerate(program.instructions):
        key = ("fractions", program.instructions[: n + 1])
        hit = lowering.memo.get(key)
        if hit is None:
            groups = sh.groups(ins)
            nxt = apply(state, ins.op, groups)
            source = nxt if ins.op is Op.ALL_GATHER else state
            hit = (nxt, tuple(source.held_rows(g[0]) / k for g in groups) * reps)
            lowering.memo[key] = hit
        state = hit[0]
        out.append(hit[1])
    return out


def step_volumes(lowering: Lowering, program: Program, bytes_per_gpu: float) -> list[tuple[float, ...]]:
    """Per step, per lowered group (in :meth:`Lowering.lower` order): the buffer in bytes."""
    return [tuple(f * bytes_per_gpu for f in fr) for fr in step_fractions(lowering, program)]
