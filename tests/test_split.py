"""NCCL_TESTS_SPLIT expressions: nccl-tests' colors are exactly the groups asked for."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.formalism.level_mesh import dims_slices
from p2sim.measurements.split import split_colors, split_expression


def _partition(colors):
    out: dict = {}
    for r, c in enumerate(colors):
        out.setdefault(c, []).append(r)
    return sorted(out.values())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=4), st.data())
def test_every_slice_of_a_power_of_two_mesh_has_an_expression(shape, data):
    mesh = np.arange(int(np.prod(shape))).reshape(shape)
    dims = data.draw(st.lists(st.sampled_from(range(len(shape))), min_size=1, unique=True))
    groups = dims_slices(mesh, dims)
    expr = split_expression(groups, mesh.size)
    if len(groups) == 1:
        assert expr is None
    else:
        assert _partition(split_colors(expr, mesh.size)) == sorted(sorted(g) for g in groups)


def test_contiguous_and_strided_groups_of_any_size_use_div_and_mod():
    assert split_expression([tuple(range(k, k + 3)) for k in (0, 3, 6)], 9) == "DIV 3"
    assert split_expression([tuple(range(k, 9, 3)) for k in range(3)], 9) == "MOD 3"


@pytest.mark.parametrize("groups, ranks, says", [
    ([(0, 1)], 4, "do not cover every rank"),
    ([(0, 1, 5), (2, 3, 4)], 6, "no NCCL_TESTS_SPLIT expression"),
])
def test_groups_no_expression_gives_are_refused(groups, ranks, says):
    with pytest.raises(ValueError, match=says):
        split_expression(groups, ranks)


def test_colors_follow_ncclls_tests_syntax():
    assert split_colors("AND 0x7", 10)[8:] == [0, 1]
    assert split_colors("DIV 4", 9) == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    assert list(itertools.islice(split_colors("MOD 3", 7), 7)) == [0, 1, 2, 0, 1, 2, 0]
