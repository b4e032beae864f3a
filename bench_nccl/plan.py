"""What each rank does: p2sim's lowered programs as per-rank collective calls.

Every rank keeps the chunks it holds packed in sorted chunk order, so that each
step is exactly one NCCL call on contiguous buffers: AllReduce and Reduce on the
held chunks, ReduceScatter of them into consecutive blocks (the semantics' split),
AllGather of the members' blocks (then a local reorder when the concatenation is
not in chunk order), Broadcast of the root's chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Matrix, Placement
from p2sim.formalism.program import Program
from p2sim.formalism.semantics import Op, State, apply
from p2sim.sim import check_program_completes
from p2sim.formalism.synthesis import synthesize_placements

from .errors import BenchError
from .steps import RankStep

__all__ = ["RankStep", "ProgramPlan", "plan_program", "plan_programs"]


def _rows(mask: int) -> tuple[int, ...]:
    return tuple(i for i in range(mask.bit_length()) if mask >> i & 1)


@dataclass(frozen=True)
class ProgramPlan:
    matrix: Matrix
    program: Program
    chunks: int  # k: chunks per buffer
    reduction_group: dict[int, tuple[int, ...]]  # rank -> its reduction group's ranks
    steps: dict[int, tuple[RankStep, ...]]  # rank -> its steps

    @property
    def text(self) -> str:
        return self.program.text

    def groups(self) -> list[tuple[int, ...]]:
        """Every distinct communicator the program needs, in a fixed order."""
        seen = {s.group for steps in self.steps.values() for s in steps if s.group is not None}
        return sorted(seen)

    def partitions(self) -> list[tuple[tuple[int, ...], ...]]:
        """The groups of each step (disjoint), distinct and in a fixed order: one split each."""
        by_step: list[set[tuple[int, ...]]] = []
        for steps in self.steps.values():
            for n, s in enumerate(steps):
                while len(by_step) <= n:
                    by_step.append(set())
                if s.group is not None:
                    by_step[n].add(s.group)
        return sorted({tuple(sorted(g)) for g in by_step if g})


def plan_program(lowering: Lowering, program: Program) -> ProgramPlan:
    check_program_completes(lowering, program)
    sh = lowering.synthesis
    k = sh.size
    table = lowering.table
    where = {int(d): (r, t) for r, row in enumerate(table) for t, d in enumerate(row)}
    devices = lowering.placement.devices
    state = State.initial(k)
    per_rank: dict[int, list[RankStep]] = {d: [] for d in range(devices)}
    for ins, low in zip(program.instructions, lowering.lower(program)):
        after = apply(state, ins.op, sh.groups(ins))
        busy: set[int] = set()
        for group in low.groups:
            gathered: tuple[int, ...] = ()
            if ins.op is Op.ALL_GATHER:
                parts = [_rows(state.rows[where[m][1]]) for m in group]
                if len({len(p) for p in parts}) != 1:
                    raise BenchError(f"program: {program.text}: an AllGather over unequal blocks has no NCCL call")
                gathered = tuple(c for p in parts for c in p)
            for i, m in enumerate(group):
                t = where[m][1]
                per_rank[m].append(RankStep(ins.op, tuple(group), i, _rows(state.rows[t]), _rows(after.rows[t]),
                                            gathered))
                busy.add(m)
        for d in range(devices):
            if d not in busy:
                t = where[d][1]
                per_rank[d].append(RankStep(ins.op, None, 0, _rows(state.rows[t]), _rows(after.rows[t])))
        state = after
    rgroups = {int(d): tuple(int(x) for x in row) for row in table for d in row}
    return ProgramPlan(lowering.placement.matrix, program, k, rgroups, {d: tuple(s) for d, s in per_rank.items()})


def plan_programs(hierarchy: Sequence[int], axes: Sequence[int], reduce_axes: Sequence[int],
                  matrix: Matrix | None, programs: str, profile: str = "paper",
                  order: str = "aligned") -> list[ProgramPlan]:
    """Plans for every synthesized program (``programs="all"``) or one program text, lowered in ``order``."""
    from p2sim.formalism.program import parse_program

    mats = None if matrix is None else [matrix]
    syn = synthesize_placements(hierarchy, axes, reduce_axes, profile, matrices=mats, order=order)
    out = []
    for mp in syn.matrices:
        chosen = mp.programs if programs == "all" else (parse_program(programs),)
        out += [plan_program(mp.lowering, p) for p in chosen]
    return out


def lowering_of(hierarchy: Sequence[int], axes: Sequence[int], reduce_axes: Sequence[int], matrix: Matrix) -> Lowering:
    return Lowering.of(Placement.of(hierarchy, axes, matrix), reduce_axes)
