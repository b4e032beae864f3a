from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p2sim.formalism import reference_semantics as ref
from p2sim.formalism import semantics as sem
from p2sim.util.errors import SemanticsError
from p2sim.formalism.hierarchy import SynthesisHierarchy
from p2sim.formalism.semantics import Op, Space

K = 4
ALL = [(0, 1, 2, 3)]
PAIRS = [(0, 1), (2, 3)]


class Impl:
    """One way of holding states: the k x k reference, or compact states on flat or 2 x 2 devices."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.module = ref if name == "reference" else sem
        self.cards = {"reference": None, "compact-flat": None, "compact-2x2": (2, 2)}[name]

    def initial(self, k: int = K):
        if self.module is ref:
            return ref.State.initial(k)
        return sem.State.initial(k, self.cards if k == K else None)

    def from_matrices(self, mats):
        if self.module is ref:
            return ref.State.from_matrices(mats)
        return sem.State.from_matrices(mats, self.cards)

    def apply(self, state, op, groups):
        return self.module.apply(state, op, groups)

    def try_apply(self, state, op, groups):
        return self.module.try_apply(state, op, groups)


@pytest.fixture(params=["reference", "compact-flat", "compact-2x2"])
def impl(request) -> Impl:
    return Impl(request.param)


def mat(state, d: int) -> list[list[int]]:
    return state.matrix(d).astype(int).tolist()


def test_initial_and_goal(impl):
    s = impl.initial()
    assert mat(s, 2) == [[0, 0, 1, 0]] * 4
    assert not s.is_goal
    assert impl.from_matrices([np.ones((K, K), bool)] * K).is_goal


def test_matrix_round_trip(impl):
    s = impl.apply(impl.initial(), Op.REDUCE_SCATTER, PAIRS)
    assert impl.from_matrices([s.matrix(d) for d in range(K)]) == s
    assert hash(impl.from_matrices([s.matrix(d) for d in range(K)])) == hash(s)


def test_allreduce_valid_gives_every_member_the_union(impl):
    s = impl.apply(impl.initial(), Op.ALL_REDUCE, PAIRS)
    assert mat(s, 0) == mat(s, 1) == [[1, 1, 0, 0]] * 4
    assert mat(s, 3) == [[0, 0, 1, 1]] * 4
    assert impl.apply(s, Op.ALL_REDUCE, [(0, 2), (1, 3)]).is_goal


def test_invalid_reducing_the_same_data_twice(impl):
    s = impl.apply(impl.initial(), Op.ALL_REDUCE, PAIRS)
    with pytest.raises(SemanticsError, match="twice"):
        impl.apply(s, Op.ALL_REDUCE, ALL)  # 0 and 1 both carry device 0's and 1's data


def test_invalid_reducing_data_that_must_not_be_reduced(impl):
    # after a ReduceScatter, 0 holds chunks {0,1} and 1 holds chunks {2,3}:
    # reducing them together would add different chunks to each other
    s = impl.apply(impl.initial(), Op.REDUCE_SCATTER, PAIRS)
    with pytest.raises(SemanticsError, match="different chunks"):
        impl.apply(s, Op.ALL_REDUCE, [(0, 1)])
    with pytest.raises(SemanticsError, match="different chunks"):
        impl.apply(s, Op.REDUCE, [(0, 1)])


def test_reduce_scatter_splits_sorted_rows_in_order(impl):
    s = impl.apply(impl.initial(), Op.REDUCE_SCATTER, ALL)
    for d in range(K):
        expect = [[0] * 4 for _ in range(4)]
        expect[d] = [1, 1, 1, 1]
        assert mat(s, d) == expect
    assert s.held_rows(0) == 1
    # a further ReduceScatter over 2 members cannot split 1 chunk evenly (and rows differ)
    s2 = impl.apply(impl.initial(), Op.REDUCE_SCATTER, PAIRS)  # 2 rows each
    s3 = impl.apply(s2, Op.REDUCE_SCATTER, [(0, 2), (1, 3)])  # 2 rows over 2 members: fine
    assert s3.held_rows(0) == 1


def test_reduce_scatter_uneven_split_is_invalid(impl):
    s = impl.initial(3)
    with pytest.raises(SemanticsError, match="evenly"):
        impl.apply(s, Op.REDUCE_SCATTER, [(0, 1)])


def test_allgather_needs_disjoint_non_empty_rows(impl):
    s = impl.apply(impl.initial(), Op.REDUCE_SCATTER, ALL)
    assert impl.apply(s, Op.ALL_GATHER, ALL).is_goal
    with pytest.raises(SemanticsError, match="overlapping"):
        impl.apply(impl.initial(), Op.ALL_GATHER, ALL)
    r = impl.apply(impl.initial(), Op.REDUCE, ALL)
    with pytest.raises(SemanticsError, match="no data"):
        impl.apply(r, Op.ALL_GATHER, ALL)


def test_reduce_then_broadcast(impl):
    s = impl.apply(impl.initial(), Op.REDUCE, ALL)
    assert mat(s, 0) == [[1, 1, 1, 1]] * 4
    assert mat(s, 1) == [[0] * 4] * 4
    with pytest.raises(SemanticsError, match="different chunks"):
        impl.apply(s, Op.ALL_REDUCE, ALL)
    with pytest.raises(SemanticsError, match="no data"):
        impl.apply(s, Op.ALL_REDUCE, [(1, 2, 3)])
    assert impl.apply(s, Op.BROADCAST, ALL).is_goal


def test_broadcast_must_cover_and_add_information(impl):
    with pytest.raises(SemanticsError, match="cover"):
        impl.apply(impl.initial(), Op.BROADCAST, ALL)
    done = impl.apply(impl.initial(), Op.ALL_REDUCE, ALL)
    with pytest.raises(SemanticsError, match="adds nothing"):
        impl.apply(done, Op.BROADCAST, ALL)


def test_devices_outside_every_group_keep_their_state(impl):
    s0 = impl.initial()
    s = impl.apply(s0, Op.ALL_REDUCE, [(0, 1)])
    assert mat(s, 2) == mat(s0, 2) and mat(s, 3) == mat(s0, 3)


def test_single_device_group_is_rejected(impl):
    assert impl.try_apply(impl.initial(), Op.ALL_REDUCE, [(0,)]) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(Op)), st.sampled_from([ALL, PAIRS, [(0, 2), (1, 3)]])), max_size=5))
def test_states_never_lose_or_invent_contributions(steps):
    """Any valid sequence keeps each column's information consistent: a device's
    entry is only ever set for contributions that exist, and the union over all
    devices of chunk i always contains every contribution (nothing is destroyed
    except by Reduce, which moves it to the root)."""
    s = sem.State.initial(K, (2, 2))
    for op, groups in steps:
        nxt = sem.try_apply(s, op, groups)
        if nxt is None:
            continue
        s = nxt
        union = np.zeros((K, K), bool)
        for d in range(K):
            m = s.matrix(d)
            # a non-empty row's entries are a subset of the columns; empty rows are all zero
            assert (m.any(axis=1) == np.array([bool(s.rows[d] >> i & 1) for i in range(K)])).all()
            union |= m
        assert union.all()


# -- the compact states share what the devices have in common ---------------------------


def test_a_group_in_one_situation_is_one_local_state():
    s = sem.State.initial(64, (4, 16))
    assert len(set(s.ids.tolist())) == 1
    s = sem.apply(s, Op.ALL_REDUCE, [tuple(range(16 * i, 16 * i + 16)) for i in range(4)])
    assert len(set(s.ids.tolist())) == 1  # "my whole innermost group", for all 64 devices
    assert s.matrix(17)[5].nonzero()[0].tolist() == list(range(16, 32))
    s = sem.apply(s, Op.ALL_REDUCE, [tuple(range(q, 64, 16)) for q in range(16)])
    assert s.is_goal


def test_shift_is_levelwise_addition():
    sp = Space((3, 4))
    for a in range(12):
        for b in range(12):
            expect = ((a // 4 + b // 4) % 3) * 4 + (a % 4 + b % 4) % 4
            assert sp.add(a, b) == expect
            assert sp.shift(1 << a, b) == 1 << expect
            assert sp.shift((1 << a) | 1, b) == (1 << expect) | (1 << sp.add(0, b))
        assert sp.add(a, sp.negate(a)) == 0
    assert sp.smear(1, (1,)) == 0b1111  # the innermost level's subgroup
    assert sp.smear(1, (0,)) == 1 | 1 << 4 | 1 << 8


def test_cardinalities_must_multiply_to_k():
    with pytest.raises(ValueError, match="multiply"):
        sem.State.initial(8, (2, 2))


# -- property: compact and reference semantics agree -------------------------------------


@st.composite
def hierarchies(draw) -> tuple[int, ...]:
    levels = draw(st.lists(st.integers(2, 6), min_size=1, max_size=4))
    while math.prod(levels) > 64:
        levels.pop()
    return tuple(levels)


def _steps(sh: SynthesisHierarchy) -> list[tuple[Op, tuple, np.ndarray, object]]:
    return [(ins.op, sh.groups(ins), sh.group_array(ins), ins) for ins in sh.instructions()]


def _same(compact, reference) -> None:
    k = reference.k
    assert compact.is_goal == reference.is_goal
    assert compact.rows == reference.rows
    for d in range(k):
        assert np.array_equal(compact.matrix(d), reference.matrix(d)), f"device {d}"


@pytest.mark.slow  # hypothesis on the reference semantics
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchies(), st.data())
def test_compact_and_reference_agree_on_random_programs(levels, data):
    """Validity, reasons, every device's k x k matrix, the goal, on random programs.

    Programs mostly take a valid next step that does not finish (drawn among the
    reference's valid ones) so that they reach deep, irregular states; sometimes any
    valid step, sometimes any instruction, to compare rejections.  The compact form
    runs three ways: on the hierarchy's levels, on flat cyclic devices, and through the
    synthesizer's whole-step path.
    """
    sh = SynthesisHierarchy.of(levels)
    k = sh.size
    steps = _steps(sh)
    space = Space(levels)
    r = ref.State.initial(k)
    c = sem.State.initial(k, levels)
    flat = sem.State.initial(k)
    ids = space.initial_ids()
    for _ in range(data.draw(st.integers(1, 8))):
        if r.is_goal:
            break
        after = {i: ref.try_apply(r, op, groups) for i, (op, groups, _, _) in enumerate(steps)}
        valid = [i for i, nxt in after.items() if nxt is not None]
        going = [i for i in valid if not after[i].is_goal]
        kind = data.draw(st.integers(0, 3))
        pool = going if going and kind < 2 else valid if valid and kind < 3 else list(range(len(steps)))
        op, groups, array, _ = steps[data.draw(st.sampled_from(pool))]
        want = ref._step(r, op, groups)
        got = sem._step(c, op, groups)
        got_flat = sem._step(flat, op, groups)
        got_ids = space.step(ids, op, array, space.signature_of(array))
        if isinstance(want, str):
            assert got == got_flat == got_ids == want
            continue
        assert not isinstance(got, str) and not isinstance(got_flat, str) and not isinstance(got_ids, str)
        r, c, flat, ids = want, got, got_flat, got_ids
        _same(c, r)
        _same(flat, r)
        assert sem.State(space, ids) == c
        assert bool((ids == space.goal).all()) == r.is_goal


@pytest.mark.parametrize("levels", [(2, 2, 3), (3, 2, 2), (2, 3, 4)])
def test_compact_and_reference_agree_on_every_reachable_state(levels):
    """Every state four steps deep, every instruction, on hierarchies whose
    ReduceScatter blocks cut across level digits (e.g. [2, 2, 3]: rows 0,1,2,6,7,8
    split three ways)."""
    sh = SynthesisHierarchy.of(levels)
    k = sh.size
    steps = _steps(sh)
    space = Space(levels)
    frontier = [(ref.State.initial(k), space.initial_ids())]
    seen = {frontier[0][0]}
    depth = 4 if k <= 12 else 3
    for _ in range(depth):
        nxt = []
        for r, ids in frontier:
            c = sem.State(space, ids)
            for op, groups, array, _ in steps:
                want = ref._step(r, op, groups)
                got = space.step(ids, op, array, space.signature_of(array))
                if isinstance(want, str):
                    assert got == want
                    continue
                assert not isinstance(got, str), f"{op} {groups}: {got}"
                if want in seen:
                    continue
                seen.add(want)
                _same(sem.State(space, got), want)
                if not want.is_goal:
                    nxt.append((want, got))
            assert c.is_goal == r.is_goal
        frontier = nxt
    assert len(seen) > 100


@pytest.mark.parametrize("op", [Op.ALL_TO_ALL, Op.SEND_RECV])
def test_point_to_point_ops_have_no_state_rules(op):
    """The rules (and the literal reference) refuse AllToAll / SendRecv as a step of a reduction."""
    s = sem.State.initial(4)
    assert sem.try_apply(s, op, [(0, 1), (2, 3)]) is None
    with pytest.raises(SemanticsError, match="not a reduction"):
        sem.apply(s, op, [(0, 1), (2, 3)])
    assert ref.try_apply(ref.State.initial(4), op, [(0, 1), (2, 3)]) is None
