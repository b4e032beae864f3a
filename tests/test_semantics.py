from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.errors import SemanticsError
from p2sim.semantics import Op, State, apply, try_apply

K = 4
ALL = [(0, 1, 2, 3)]
PAIRS = [(0, 1), (2, 3)]


def mat(state: State, d: int) -> list[list[int]]:
    return state.matrix(d).astype(int).tolist()


def test_initial_and_goal():
    s = State.initial(K)
    assert mat(s, 2) == [[0, 0, 1, 0]] * 4
    assert not s.is_goal
    assert State.from_matrices([np.ones((K, K), bool)] * K).is_goal


def test_matrix_round_trip():
    s = apply(State.initial(K), Op.REDUCE_SCATTER, PAIRS)
    assert State.from_matrices([s.matrix(d) for d in range(K)]) == s


def test_allreduce_valid_gives_every_member_the_union():
    s = apply(State.initial(K), Op.ALL_REDUCE, PAIRS)
    assert mat(s, 0) == mat(s, 1) == [[1, 1, 0, 0]] * 4
    assert mat(s, 3) == [[0, 0, 1, 1]] * 4
    assert apply(s, Op.ALL_REDUCE, [(0, 2), (1, 3)]).is_goal


def test_invalid_reducing_the_same_data_twice():
    s = apply(State.initial(K), Op.ALL_REDUCE, PAIRS)
    with pytest.raises(SemanticsError, match="twice"):
        apply(s, Op.ALL_REDUCE, ALL)  # 0 and 1 both carry device 0's and 1's data


def test_invalid_reducing_data_that_must_not_be_reduced():
    # after a ReduceScatter, 0 holds chunks {0,1} and 1 holds chunks {2,3}:
    # reducing them together would add different chunks to each other
    s = apply(State.initial(K), Op.REDUCE_SCATTER, PAIRS)
    with pytest.raises(SemanticsError, match="different chunks"):
        apply(s, Op.ALL_REDUCE, [(0, 1)])
    with pytest.raises(SemanticsError, match="different chunks"):
        apply(s, Op.REDUCE, [(0, 1)])


def test_reduce_scatter_splits_sorted_rows_in_order():
    s = apply(State.initial(K), Op.REDUCE_SCATTER, ALL)
    for d in range(K):
        expect = [[0] * 4 for _ in range(4)]
        expect[d] = [1, 1, 1, 1]
        assert mat(s, d) == expect
    assert s.held_rows(0) == 1
    # a further ReduceScatter over 2 members cannot split 1 chunk evenly (and rows differ)
    s2 = apply(State.initial(K), Op.REDUCE_SCATTER, PAIRS)  # 2 rows each
    s3 = apply(s2, Op.REDUCE_SCATTER, [(0, 2), (1, 3)])  # 2 rows over 2 members: fine
    assert s3.held_rows(0) == 1


def test_reduce_scatter_uneven_split_is_invalid():
    s = State.initial(3)
    with pytest.raises(SemanticsError, match="evenly"):
        apply(s, Op.REDUCE_SCATTER, [(0, 1)])


def test_allgather_needs_disjoint_non_empty_rows():
    s = apply(State.initial(K), Op.REDUCE_SCATTER, ALL)
    assert apply(s, Op.ALL_GATHER, ALL).is_goal
    with pytest.raises(SemanticsError, match="overlapping"):
        apply(State.initial(K), Op.ALL_GATHER, ALL)
    r = apply(State.initial(K), Op.REDUCE, ALL)
    with pytest.raises(SemanticsError, match="no data"):
        apply(r, Op.ALL_GATHER, ALL)


def test_reduce_then_broadcast():
    s = apply(State.initial(K), Op.REDUCE, ALL)
    assert mat(s, 0) == [[1, 1, 1, 1]] * 4
    assert mat(s, 1) == [[0] * 4] * 4
    with pytest.raises(SemanticsError, match="different chunks"):
        apply(s, Op.ALL_REDUCE, ALL)
    with pytest.raises(SemanticsError, match="no data"):
        apply(s, Op.ALL_REDUCE, [(1, 2, 3)])
    assert apply(s, Op.BROADCAST, ALL).is_goal


def test_broadcast_must_cover_and_add_information():
    with pytest.raises(SemanticsError, match="cover"):
        apply(State.initial(K), Op.BROADCAST, ALL)
    done = apply(State.initial(K), Op.ALL_REDUCE, ALL)
    with pytest.raises(SemanticsError, match="adds nothing"):
        apply(done, Op.BROADCAST, ALL)


def test_devices_outside_every_group_keep_their_state():
    s0 = State.initial(K)
    s = apply(s0, Op.ALL_REDUCE, [(0, 1)])
    assert mat(s, 2) == mat(s0, 2) and mat(s, 3) == mat(s0, 3)


def test_single_device_group_is_rejected():
    assert try_apply(State.initial(K), Op.ALL_REDUCE, [(0,)]) is None


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(Op)), st.sampled_from([ALL, PAIRS, [(0, 2), (1, 3)]])), max_size=5))
def test_states_never_lose_or_invent_contributions(steps):
    """Any valid sequence keeps each column's information consistent: a device's
    entry is only ever set for contributions that exist, and the union over all
    devices of chunk i always contains every contribution (nothing is destroyed
    except by Reduce, which moves it to the root)."""
    s = State.initial(K)
    for op, groups in steps:
        nxt = try_apply(s, op, groups)
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
