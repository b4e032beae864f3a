from __future__ import annotations

import numpy as np
import pytest

from p2sim.util.errors import SemanticsError
from p2sim.formalism.execute import Buffers, check_program, collective, execute
from p2sim.formalism.hierarchy import Lowering, Order
from p2sim.formalism.placement import Placement, enumerate_matrices
from p2sim.formalism.program import parse_program
from p2sim.formalism.semantics import Op
from p2sim.formalism.synthesis import Profile, synthesize_placements

from .conftest import config_of


def _check_all(hierarchy, axes, red, profile, order):
    s = synthesize_placements(hierarchy, axes, red, profile, order=order)
    assert s.total_programs > 0
    for mp in s.matrices:
        assert mp.lowering.order is order
        for p in mp.programs:
            r = check_program(mp.lowering, p, chunk=1, seed=len(p))
            assert r.ok, f"{mp.matrix} {p.text} ({order.value} order): {r.reason}"


@pytest.mark.parametrize("order", list(Order))
@pytest.mark.parametrize("profile", list(Profile))
def test_every_program_of_every_appendix_configuration_computes_the_sums(count_row, profile, order):
    _check_all(*config_of(count_row), profile, order)


@pytest.mark.parametrize("order", list(Order))
@pytest.mark.parametrize("profile", list(Profile))
@pytest.mark.parametrize(
    ("hierarchy", "axes", "red"),
    [
        ((2, 2, 2), (8,), (0,)),  # three levels, single axis
        ((1, 2, 2, 4), (4, 4), (1,)),  # P2's 16-GPU example, reduction over a 4-way axis
        ((2, 2, 4), (2, 4, 2), (0, 2)),  # several reduction axes collapsed over three levels
        ((2, 2, 2, 2), (4, 4), (0,)),  # four hardware levels
        ((2, 2, 3), (12,), (0,)),  # ReduceScatter blocks that cut across level digits
    ],
)
def test_every_program_on_deeper_hierarchies(hierarchy, axes, red, profile, order):
    _check_all(hierarchy, axes, red, profile, order)


def test_invalid_programs_fail_the_numeric_check():
    lw = Lowering.of(Placement.of([2, 8], [16], [[2, 8]]), [0])
    twice = parse_program("AllReduce(slice=1, Inside) ; AllReduce(slice=0, Inside)")
    r = check_program(lw, twice)
    assert not r.ok and "wrong sums" in r.reason
    partial = parse_program("AllReduce(slice=1, Inside)")
    assert not check_program(lw, partial).ok
    mixed = parse_program("ReduceScatter(slice=1, Inside) ; AllReduce(slice=0, Inside)")
    r = check_program(lw, mixed)
    assert not r.ok and "different chunks" in r.reason


def test_collective_semantics_on_numbers():
    v = np.arange(2 * 2 * 4, dtype=float).reshape(1, 2, 4, 2)
    h = np.ones((1, 2, 4), bool)
    out, held = collective(Op.REDUCE_SCATTER, v, h)
    assert held[0].tolist() == [[True, True, False, False], [False, False, True, True]]
    np.testing.assert_array_equal(out[0, 1, 2:], v[0, 0, 2:] + v[0, 1, 2:])
    assert np.isnan(out[0, 0, 2:]).all()
    gathered, gh = collective(Op.ALL_GATHER, out, held)
    assert gh.all()
    np.testing.assert_array_equal(gathered[0, 0], v[0].sum(axis=0))
    red, rh = collective(Op.REDUCE, v, h)
    assert rh[0, 0].all() and not rh[0, 1].any()
    b, bh = collective(Op.BROADCAST, red, rh)
    np.testing.assert_array_equal(b[0, 1], v[0].sum(axis=0))
    with pytest.raises(SemanticsError):
        collective(Op.ALL_GATHER, v, h)


def test_execute_leaves_input_untouched_and_is_deterministic():
    lw = Lowering.of(Placement.of([2, 4], [8], [[2, 4]]), [0])
    start = Buffers.random(8, 8, 3, np.random.default_rng(7))
    before = start.values.copy()
    steps = lw.lower(parse_program("ReduceScatter(slice=0, Inside) ; AllGather(slice=0, Inside)"))
    a, b = execute(steps, start), execute(steps, start)
    np.testing.assert_array_equal(start.values, before)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.values[3], before.sum(axis=0))


def test_matrices_of_one_configuration_lower_differently():
    tables = {Lowering.of(Placement.of([4, 16], [4, 16], m), [0]).table.tobytes() for m in enumerate_matrices([4, 16], [4, 16])}
    assert len(tables) == 3
