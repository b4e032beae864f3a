from __future__ import annotations

import pytest

from p2sim.studies.plan import PlanRequest, default_data_axis, default_matrix, run_plan

REDUCTIONS = ("data:1GiB", "tensor:64MiB x 4", "pipe:16MiB x 4")


def _savings(axes: str):
    r = run_plan(PlanRequest.build(system="a100", axes=axes, reductions=REDUCTIONS, workers=1))
    names = r.request.job.axis_names
    rows = dict(zip(names, r.default))
    return r.savings, {n: rows[n] for n in sorted(names)}


@pytest.mark.parametrize("axes", ["pipe=4,tensor=4,data=2", "tensor=4,data=2,pipe=4"])
def test_the_same_job_gets_the_same_answer_in_any_axis_order(axes):
    assert _savings(axes) == _savings("data=2,tensor=4,pipe=4")


def test_the_data_axis_is_found_by_its_name():
    assert default_data_axis(("tensor", "DP", "pipe")) == "DP"
    assert default_data_axis(("a", "b")) == "0"


def test_default_matrix_breaks_ties_by_axis_name():
    # two model axes tie at every level: the tie goes by their names, not their order
    m1 = ((2, 1), (1, 2), (1, 2))
    m2 = ((2, 1), (1, 2), (1, 2))
    assert default_matrix([m1, m2], 0, ("d", "x", "y")) == m1


def test_every_form_carries_the_warnings(capsys):
    from .test_cli import run

    for form in ("torch", "jax", "json"):
        rc, out, err = run(capsys, "plan", "--system", "a100", "--axes", "data=2,tensor=16", "--reduction",
                           "data:80GiB", "--emit", form, "--workers", "1")
        assert rc == 0 and "exceeds the 40 GiB of GPU memory" in out
    rc, out, err = run(capsys, "rank", "--system", "a100", "--axes", "data=4,tensor=8", "--reduce", "data", "--emit",
                       "torch", "--workers", "1")
    assert "# note: optimises the reduction over data only" in out
