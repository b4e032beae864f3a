from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.util.errors import InputError, PlacementError, ProgramError
from p2sim.formalism.hierarchy import Lowering, Order, SynthesisHierarchy, reduce_axes_of
from p2sim.formalism.placement import Placement, enumerate_matrices
from p2sim.formalism.program import Form, Instruction
from p2sim.formalism.semantics import Op

from .helpers import draw_axes

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


def test_a_lowering_keeps_only_its_own_results():
    """A lowering caches what it computes of itself (each instruction's lowered step, handed out again as the
    same object) and offers no store for other layers: it is a value with no memo field."""
    from dataclasses import fields

    assert [f.name for f in fields(Lowering)] == ["placement", "reduce_axes", "synthesis", "order"]
    lw = Lowering.of(Placement.of([2, 4], [2, 4], [[1, 2], [2, 2]]), [0])
    ins = Instruction(Op.ALL_REDUCE, 0, Form.INSIDE)
    assert lw.lower_instruction(ins) is lw.lower_instruction(ins)
    assert lw == Lowering.of(Placement.of([2, 4], [2, 4], [[1, 2], [2, 2]]), [0])  # the cache is not the value


def test_reduce_axes_validation():
    assert reduce_axes_of([2, 3, 4], [2, 0]) == (0, 2)
    for bad, msg in [([], "empty"), ([3], "out of range"), ([0, 0], "twice"), ([-1], "out of range")]:
        with pytest.raises(PlacementError, match=msg):
            reduce_axes_of([2, 3, 4], bad)


# The README's worked example: [[2 4] [1 2] [2 2]] on 4 nodes x 16 GPUs, reduce axes 0 and 2.
# A device's node is 2*a00 + a20 and its GPU 4*a01 + 2*a11 + a21 (lower axis more significant).
EXAMPLE = Placement.of([4, 16], [8, 2, 4], [[2, 4], [1, 2], [2, 2]])


def test_aligned_order_by_hand():
    lw = Lowering.of(EXAMPLE, [0, 2])
    assert lw.order is Order.ALIGNED and lw.synthesis.cardinalities == (1, 4, 8)
    # t = (a00, a20, a01, a21), radix (2, 2, 4, 2): the first 8 (d)-devices are node 0's GPUs
    # with a11 = 0, i.e. 4*a01 + a21, then node 1's (16 + ..), node 2's, node 3's
    node0 = [0, 1, 4, 5, 8, 9, 12, 13]
    assert lw.table[0].tolist() == [16 * n + g for n in range(4) for g in node0]
    assert lw.table[1].tolist() == [d + 2 for d in lw.table[0].tolist()]  # a11 = 1: GPU + 2
    inner = lw.lower_instruction(Instruction(Op.ALL_REDUCE, 1, Form.INSIDE))
    assert inner.groups[0] == tuple(node0)
    assert all(len({d // 16 for d in grp}) == 1 for grp in inner.groups)  # inside a node


def test_p2_order_by_hand():
    lw = Lowering.of(EXAMPLE, [0, 2], "p2")
    assert lw.order is Order.P2 and lw.synthesis.cardinalities == (1, 4, 8)
    # t = 4*x0 + x2 with x0 = 4*a00 + a01 and x2 = 2*a20 + a21: digits (a00, a01, a20, a21)
    assert lw.table[0, :16].tolist() == [0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29]
    assert lw.table[0, 16:].tolist() == [d + 32 for d in lw.table[0, :16].tolist()]  # a00 = 1: nodes 2, 3
    inner = lw.lower_instruction(Instruction(Op.ALL_REDUCE, 1, Form.INSIDE))
    assert inner.groups[0] == (0, 1, 16, 17, 4, 5, 20, 21)
    assert all(len({d // 16 for d in grp}) == 2 for grp in inner.groups)  # a "local" step spans 2 nodes


def test_orders_share_groups_and_hierarchy():
    a, p = Lowering.of(EXAMPLE, [0, 2]), Lowering.of(EXAMPLE, [0, 2], Order.P2)
    assert a.synthesis == p.synthesis
    assert [sorted(r) for r in a.table.tolist()] == [sorted(r) for r in p.table.tolist()]
    assert a != p  # the order is part of the value


def _placements(data):
    h = data.draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=1, max_size=3))
    axes = draw_axes(data, math.prod(h))
    m = data.draw(st.sampled_from(enumerate_matrices(h, axes)))
    return Placement.of(h, axes, m)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_one_reduction_axis_gives_identical_groups(data):
    pl = _placements(data)
    r = data.draw(st.integers(0, len(pl.axes) - 1))
    assert np.array_equal(Lowering.of(pl, [r]).table, Lowering.of(pl, [r], "p2").table)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_p2_order_is_row_major_over_reduction_coordinates(data):
    pl = _placements(data)
    red = sorted(data.draw(st.sets(st.integers(0, len(pl.axes) - 1), min_size=1)))
    lw = Lowering.of(pl, red, "p2")
    sizes = [pl.axes[i] for i in red]
    for row in lw.table:
        coords = [pl.coordinates(int(d)) for d in row]
        # (d)-device t is the t-th device in row-major order of (x_r0, x_r1, ..)
        assert [int(np.ravel_multi_index([c[i] for i in red], sizes)) for c in coords] == list(range(len(row)))
        assert len({tuple(c[i] for i in range(len(pl.axes)) if i not in red) for c in coords}) == 1
    aligned = Lowering.of(pl, red)
    assert sorted(lw.table.ravel().tolist()) == list(range(pl.devices))
    assert [sorted(r) for r in lw.table.tolist()] == [sorted(r) for r in aligned.table.tolist()]


def test_order_parsing():
    assert Order.parse(" Aligned ") is Order.ALIGNED and Order.parse(Order.P2) is Order.P2
    with pytest.raises(InputError, match="order: 'xla' is not one of aligned, p2"):
        Order.parse("xla")


def test_instructions_are_reductions_only():
    """Synthesis enumerates SynthesisHierarchy.instructions(): AllToAll / SendRecv must never be among them."""
    from p2sim.formalism.rules import REDUCTIONS

    ops = {ins.op for ins in SynthesisHierarchy.of([2, 4]).instructions()}
    assert ops == set(REDUCTIONS) and Op.ALL_TO_ALL not in ops and Op.SEND_RECV not in ops
