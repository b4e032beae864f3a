from __future__ import annotations

import pytest

from p2sim.errors import PlacementError, ProgramError
from p2sim.hierarchy import Lowering, SynthesisHierarchy, reduce_axes_of
from p2sim.placement import Placement
from p2sim.program import Form, Instruction
from p2sim.semantics import Op

# Section 4's example: [(rack,1),(server,2),(cpu,2),(gpu,4)], servers A/B and C/D.
SH = SynthesisHierarchy.of([1, 2, 2, 4])
RACK, SERVER, CPU = 0, 1, 2
NAMES = {c: i for i, c in enumerate(f"{cpu}{g}" for cpu in "ABCD" for g in range(4))}


def named(groups):
    inv = {v: k for k, v in NAMES.items()}
    return [{inv[d] for d in g} for g in groups]


def g(*names: str) -> set[str]:
    return set(names)


def test_rack_level_is_dropped_and_root_prepended():
    assert SH.cardinalities == (1, 2, 2, 4)
    assert SH.hardware_levels == (None, 1, 2, 3)


@pytest.mark.parametrize(
    ("ins", "expected"),
    [
        (Instruction(Op.ALL_REDUCE, CPU, Form.INSIDE),
         [g("A0", "A1", "A2", "A3"), g("B0", "B1", "B2", "B3"), g("C0", "C1", "C2", "C3"), g("D0", "D1", "D2", "D3")]),
        (Instruction(Op.ALL_REDUCE, CPU, Form.PARALLEL, SERVER),
         [g("A0", "B0"), g("A1", "B1"), g("A2", "B2"), g("A3", "B3"),
          g("C0", "D0"), g("C1", "D1"), g("C2", "D2"), g("C3", "D3")]),
        (Instruction(Op.ALL_REDUCE, CPU, Form.PARALLEL, RACK),
         [g("A0", "B0", "C0", "D0"), g("A1", "B1", "C1", "D1"), g("A2", "B2", "C2", "D2"), g("A3", "B3", "C3", "D3")]),
        (Instruction(Op.ALL_REDUCE, CPU, Form.MASTER, RACK), [g("A0", "B0", "C0", "D0")]),
        (Instruction(Op.ALL_REDUCE, SERVER, Form.PARALLEL, RACK),
         [g("A0", "C0"), g("A1", "C1"), g("A2", "C2"), g("A3", "C3"),
          g("B0", "D0"), g("B1", "D1"), g("B2", "D2"), g("B3", "D3")]),
        (Instruction(Op.ALL_REDUCE, RACK, Form.INSIDE), [set(NAMES)]),
    ],
)
def test_group_table_of_section_4(ins, expected):
    assert named(SH.groups(ins)) == expected


def test_first_member_is_in_the_first_slice_group():
    groups = SH.groups(Instruction(Op.REDUCE, CPU, Form.PARALLEL, RACK))
    assert [grp[0] for grp in groups] == [0, 1, 2, 3]


def test_leaf_slice_is_rejected():
    with pytest.raises(ProgramError, match="non-leaf"):
        SH.groups(Instruction(Op.ALL_REDUCE, 3, Form.INSIDE))


def test_collapse_of_several_reduction_axes():
    # axes [8,2,4] over [4,16], reduce 0 and 2: level factors 2*1=2 and 4*4=16
    pl = Placement.of([4, 16], [8, 2, 4], [[2, 4], [2, 1], [1, 4]])
    sh = SynthesisHierarchy.of_placement(pl, [0, 2])
    assert sh.cardinalities == (1, 2, 16)
    lw = Lowering.of(pl, [2, 0])
    assert lw.reduce_axes == (0, 2)
    assert lw.table.shape == (2, 32)
    # inside a level, the lower axis is the more significant digit: (d)-devices 0..3 of
    # level 1 differ in axis 2 first (the less significant digit)
    coords = [Placement.coordinates(pl, d) for d in lw.table[0, :5]]
    assert [c[2] for c in coords] == [0, 1, 2, 3, 0]
    assert [c[0] for c in coords] == [0, 0, 0, 0, 1]
    # every device is in exactly one reduction group, and non-reduction coords agree
    assert sorted(lw.table.ravel().tolist()) == list(range(64))
    for row in lw.table:
        assert len({Placement.coordinates(pl, int(d))[1] for d in row}) == 1


def test_lowering_applies_each_instruction_to_every_reduction_group():
    pl = Placement.of([2, 4], [2, 4], [[2, 1], [1, 4]])
    lw = Lowering.of(pl, [0])
    assert lw.synthesis.cardinalities == (1, 2)
    step = lw.lower_instruction(Instruction(Op.ALL_REDUCE, 0, Form.INSIDE))
    assert step.groups == ((0, 4), (1, 5), (2, 6), (3, 7))
    pl2 = Placement.of([2, 4], [4, 2], [[2, 2], [1, 2]])
    lw2 = Lowering.of(pl2, [0])
    assert lw2.synthesis.cardinalities == (1, 2, 2)
    inner = lw2.lower_instruction(Instruction(Op.ALL_REDUCE, 1, Form.INSIDE))
    cross = lw2.lower_instruction(Instruction(Op.ALL_REDUCE, 1, Form.PARALLEL, 0))
    assert set(inner.groups) == {(0, 2), (1, 3), (4, 6), (5, 7)}
    assert set(cross.groups) == {(0, 4), (2, 6), (1, 5), (3, 7)}


def test_reduce_axes_validation():
    assert reduce_axes_of([2, 3, 4], [2, 0]) == (0, 2)
    for bad, msg in [([], "empty"), ([3], "out of range"), ([0, 0], "twice"), ([-1], "out of range")]:
        with pytest.raises(PlacementError, match=msg):
            reduce_axes_of([2, 3, 4], bad)
