"""The sorting-free unique: the same answers as numpy.unique, dense or sparse, for any integers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from p2sim.util.arrays import row_order, unique_first, unique_inverse


@settings(max_examples=200, deadline=None)
@given(arrays(np.int64, st.integers(0, 300), elements=st.integers(-5, 10**6) | st.integers(0, 50)))
def test_same_as_numpy_unique(x):
    used, inverse = unique_inverse(x)
    want, want_inv = np.unique(x, return_inverse=True)
    assert np.array_equal(used, want) and np.array_equal(inverse, want_inv.reshape(-1))
    vals, first = unique_first(x)
    want, want_first = np.unique(x, return_index=True)
    assert np.array_equal(vals, want) and np.array_equal(first, want_first)


def test_dense_values_keep_their_dtype():
    x = np.array([3, 1, 3], dtype=np.int32)
    assert unique_inverse(x)[0].dtype == np.int32 and unique_first(x)[0].tolist() == [1, 3]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 140), st.data())
def test_row_order_is_lexsorts_stable_order_of_the_rows(nrows, ncols, data):
    # wide rows are sorted whole (their bytes), narrow ones by lexsort: the same order either way, ties
    # (equal rows) kept in place, negative and large values compared as int64
    values = st.sampled_from([0, 1, 2, -1, -(1 << 62), 1 << 40, (1 << 63) - 1, -(1 << 63)])
    key = data.draw(arrays(np.int64, (nrows, ncols), elements=values))
    assert row_order(key).tolist() == np.lexsort(key.T[::-1]).tolist()
