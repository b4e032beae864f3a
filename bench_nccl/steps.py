"""One rank's part in one collective call (light: no synthesis, no simulator).

Program mode derives these from p2sim's lowered programs (:mod:`bench_nccl.plan`); the
sweep and the single-GPU check build them directly with :func:`single_call`.
"""

from __future__ import annotations

from dataclasses import dataclass

from p2sim.formalism.semantics import Op

__all__ = ["RankStep", "single_call", "OPS"]

# the collectives by their p2sim names, in nccl-tests' order of programs
OPS = {"AllReduce": Op.ALL_REDUCE, "ReduceScatter": Op.REDUCE_SCATTER, "AllGather": Op.ALL_GATHER,
       "Broadcast": Op.BROADCAST, "Reduce": Op.REDUCE}


@dataclass(frozen=True)
class RankStep:
    op: Op
    group: tuple[int, ...] | None  # communicator members, root first; None: idle in this step
    index: int  # this rank's position in ``group``
    rows_in: tuple[int, ...]
    rows_out: tuple[int, ...]
    gathered: tuple[int, ...] = ()  # AllGather: chunk order of the concatenated output


def single_call(op: Op, group: tuple[int, ...], index: int) -> tuple[RankStep, int]:
    """The step of member ``index`` in one nccl-tests-style call of ``op``, and the chunk count.

    A chunk is nccl-tests' ``count`` elements: ReduceScatter's input and AllGather's
    output are one chunk per member; the other collectives move one chunk.  The root of
    Reduce and Broadcast is member 0.

    Examples
    --------
    >>> single_call(Op.REDUCE_SCATTER, (0, 1, 2), 1)
    (RankStep(op=<Op.REDUCE_SCATTER: 'ReduceScatter'>, group=(0, 1, 2), index=1, rows_in=(0, 1, 2), rows_out=(1,), gathered=()), 3)
    >>> single_call(Op.BROADCAST, (0, 1), 1)[0].rows_in
    ()
    """
    n = len(group)
    every = tuple(range(n))
    if op is Op.ALL_REDUCE:
        return RankStep(op, group, index, (0,), (0,)), 1
    if op is Op.REDUCE_SCATTER:
        return RankStep(op, group, index, every, (index,)), n
    if op is Op.ALL_GATHER:
        return RankStep(op, group, index, (index,), every, every), n
    if op is Op.REDUCE:
        return RankStep(op, group, index, (0,), (0,) if index == 0 else ()), 1
    if op is Op.BROADCAST:
        return RankStep(op, group, index, (0,) if index == 0 else (), (0,)), 1
    raise ValueError(f"unknown collective {op!r}")
