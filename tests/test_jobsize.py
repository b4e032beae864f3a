from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.studies.jobsize import Limits, program_counts, synthesis_cardinalities
from p2sim.util.errors import InputError
from p2sim.formalism.placement import Placement, count_matrices, enumerate_matrices
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.synthesis import synthesize_placements

from .conftest import COUNT_ROWS, config_of


def test_program_counts_match_the_synthesis_on_every_appendix_row():
    for row in COUNT_ROWS:
        h, p, red = config_of(row)
        mats = enumerate_matrices(h, p)
        counts = program_counts(mats, red, "paper", 5, Limits())
        assert sum(counts) == int(row["programs_total"])
        syn = synthesize_placements(h, p, red)
        assert counts == [len(m.programs) for m in syn.matrices]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=1, max_size=4), st.data())
def test_count_matrices_equals_the_enumeration(h, data):
    n = math.prod(h)
    # axes: a random factorisation of the device count
    axes, rest = [], n
    for _ in range(data.draw(st.integers(0, 3))):
        divisors = [d for d in range(2, rest + 1) if rest % d == 0]
        if not divisors:
            break
        d = data.draw(st.sampled_from(divisors))
        axes.append(d)
        rest //= d
    axes.append(rest)
    assert count_matrices(h, axes) == len(enumerate_matrices(h, axes))


def test_synthesis_cardinalities_are_the_lowerings():
    for m in enumerate_matrices((4, 4, 4), (4, 4, 4)):
        for red in ((0,), (1, 2), (0, 1, 2)):
            assert synthesis_cardinalities(m, red) == Lowering.of(Placement.of((4, 4, 4), (4, 4, 4), m),
                                                                  red).synthesis.cardinalities


def test_limits():
    Limits.of(yes=True).check_simulations(10**9, "x")
    with pytest.raises(InputError, match="simulations: x make 11 simulations, more than the limit of 10"):
        Limits.of(max_simulations=10).check_simulations(11, "x")
    with pytest.raises(InputError, match="synthesis: the synthesis hierarchy"):
        Limits().check_synthesis([(1,) + (2,) * 7], 5)
    Limits.of(yes=True).check_synthesis([(1,) + (2,) * 7], 5)
