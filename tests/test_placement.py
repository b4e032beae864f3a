from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.util.errors import PlacementError
from p2sim.formalism.placement import Placement, check_sizes, enumerate_matrices, format_matrix, parse_matrix

from .conftest import config_of
from .helpers import draw_axes


def test_spec_example_has_exactly_three_matrices():
    got = [format_matrix(m) for m in enumerate_matrices([4, 16], [4, 16])]
    assert got == ["[[1 4] [4 4]]", "[[2 2] [2 8]]", "[[4 1] [1 16]]"]


def test_matrix_counts_of_the_appendix(count_row):
    h, axes, _ = config_of(count_row)
    assert len(enumerate_matrices(h, axes)) == int(count_row["matrices"])


def _brute_force(h, p):
    divisors = lambda n: [d for d in range(1, n + 1) if n % d == 0]  # noqa: E731
    cells = [divisors(min(p[i], h[j])) for i in range(len(p)) for j in range(len(h))]
    out = []
    for flat in itertools.product(*cells):
        m = tuple(tuple(flat[i * len(h) : (i + 1) * len(h)]) for i in range(len(p)))
        if all(math.prod(r) == p[i] for i, r in enumerate(m)) and all(
            math.prod(m[i][j] for i in range(len(p))) == h[j] for j in range(len(h))
        ):
            out.append(m)
    return sorted(out, key=lambda mat: [v for r in mat for v in r])


sizes = st.lists(st.sampled_from([1, 2, 3, 4, 6, 8, 12]), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None)
@given(h=sizes, data=st.data())
def test_enumeration_matches_brute_force(h, data):
    # split the device count into random axes by drawing a matrix-free factorisation
    axes = draw_axes(data, math.prod(h))
    assert enumerate_matrices(h, axes) == _brute_force(h, axes)


def test_large_configuration_is_fast_and_valid():
    mats = enumerate_matrices([64, 16], [8, 16, 8])
    assert len(set(mats)) == len(mats) > 0
    for m in mats:
        Placement.of([64, 16], [8, 16, 8], m)


def test_device_convention_lower_axis_more_significant():
    pl = Placement.of([2, 4], [4, 2], [[2, 2], [1, 2]])
    # level 1 (4 GPUs) holds digits a01 (radix 2) and a11 (radix 2): c1 = 2*a01 + a11
    # so GPUs 0,1 of node 0 differ on axis 1; GPUs 0,2 differ on axis 0.
    assert pl.coordinates(1) == (0, 1)
    assert pl.coordinates(2) == (1, 0)
    assert pl.coordinates(4) == (2, 0)  # node digit a00 is the more significant digit of axis 0
    assert sorted(pl.axis_table().ravel().tolist()) == list(range(8))


@pytest.mark.parametrize(
    ("h", "p", "msg"),
    [
        ([4, 16], [3, 4], "product"),
        ([4, 16], [], "empty"),
        ([4, 0], [4], "positive"),
        ([4, 16], [64, -1], "positive"),
    ],
)
def test_bad_sizes(h, p, msg):
    with pytest.raises(PlacementError, match=msg):
        check_sizes(h, p)


def test_matrix_that_does_not_fit_names_the_problem():
    with pytest.raises(PlacementError, match="column 0"):
        Placement.of([4, 16], [4, 16], [[1, 4], [8, 2]])
    with pytest.raises(PlacementError, match="rows"):
        Placement.of([4, 16], [64], [[2, 2], [2, 8]])


def test_matrix_text_round_trip():
    for m in enumerate_matrices([4, 16], [8, 2, 4]):
        assert parse_matrix(format_matrix(m)) == m
    assert parse_matrix("[[2, 2], [2, 8]]") == ((2, 2), (2, 8))
    for bad in ["[[2 2] [2]]", "2 2", "[[a b]]", "[[2 2] x [2 8]]", "[[0 1]]"]:
        with pytest.raises(PlacementError, match="matrix"):
            parse_matrix(bad)


def test_axis_table_is_a_permutation_for_every_matrix():
    for m in enumerate_matrices([2, 2, 4], [4, 4]):
        t = Placement.of([2, 2, 4], [4, 4], m).axis_table()
        assert np.array_equal(np.sort(t.ravel()), np.arange(16))
