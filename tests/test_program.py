from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p2sim.util.errors import ProgramError
from p2sim.formalism.program import Form, Instruction, Program, format_program, parse_program
from p2sim.formalism.semantics import Op


@st.composite
def instructions(draw) -> Instruction:
    op = draw(st.sampled_from([o for o in Op if o.is_reduction]))  # programs are made of reductions
    slice_ = draw(st.integers(0, 6))
    form = draw(st.sampled_from(list(Form)))
    if form is Form.INSIDE or slice_ == 0:
        return Instruction(op, slice_, Form.INSIDE)
    return Instruction(op, slice_, form, draw(st.integers(0, slice_ - 1)))


@given(st.lists(instructions(), min_size=1, max_size=7))
def test_text_round_trip(ins):
    p = Program(tuple(ins))
    assert parse_program(format_program(p)) == p
    assert "\n" not in p.text


def test_example_text():
    p = parse_program("ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)")
    assert [i.op for i in p] == [Op.REDUCE_SCATTER, Op.ALL_REDUCE, Op.ALL_GATHER]
    assert p.instructions[1] == Instruction(Op.ALL_REDUCE, 1, Form.PARALLEL, 0)


def test_lenient_spelling_parses_to_canonical_text():
    p = parse_program("allreduce( 1 , InsideGroup );reduce(slice=2,master( 0 ))")
    assert p.text == "AllReduce(slice=1, Inside) ; Reduce(slice=2, Master(0))"
    # any case, the slice keyword included
    assert parse_program("ALLREDUCE(SLICE=1, INSIDE) ; Reduce(Slice = 2, MASTER(0))").text == p.text


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("", "empty"),
        ("AllReduce(slice=1, Inside) ;", "empty"),
        ("AllToAllv(slice=1, Inside)", "unknown collective"),
        ("AllToAll(slice=1, Inside)", "not a reduction"),
        ("AllReduce(slice=1, Sideways)", "unknown form"),
        ("AllReduce(slice=1, Parallel)", "ancestor"),
        ("AllReduce(slice=1, Parallel(1))", "strict ancestor"),
        ("AllReduce(slice=1, Inside(0))", "no ancestor"),
        ("AllReduce slice 1", "not an instruction"),
    ],
)
def test_parse_errors(text, msg):
    with pytest.raises(ProgramError, match=msg):
        parse_program(text)


@pytest.mark.parametrize("text", ["AllToAll(slice=0, Inside)", "SendRecv(slice=1, Parallel(0))"])
def test_point_to_point_ops_are_not_program_steps(text):
    """AllToAll and SendRecv are simulated (sweep, a model's step) but are no reduction: programs refuse them."""
    with pytest.raises(ProgramError, match="is not a reduction"):
        parse_program(text)
