from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.formalism.mesh import megatron_match, megatron_matrix
from p2sim.formalism.placement import Placement, enumerate_matrices
from p2sim.studies.plan import PlanRequest, default_data_axis, default_matrix, default_placement, run_plan

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


def test_the_default_is_megatrons_order_in_any_axis_order(capsys):
    """Written data,pipeline,tensor the default used to pack pipeline inside the node (a model axis) and
    claim a saving against a placement nobody runs; Megatron-LM puts pipeline outermost."""
    from .test_cli import run

    for axes in ("data=2,pipeline=2,tensor=8", "tensor=8,data=2,pipeline=2", "pipeline=2,tensor=8,data=2"):
        rc, out, err = run(capsys, "plan", "--system", "a100", "--axes", axes, "--reduction", "data:1GiB",
                           "--reduction", "tensor:64MiB x 4", "--workers", "1", "--json")
        assert rc == 0, err
        doc = json.loads(out)
        rows = dict(zip(doc["axis_names"], doc["default"]["matrix"]))
        assert rows == {"pipeline": [2, 1], "data": [1, 2], "tensor": [1, 8]}  # pipeline across the nodes
        assert doc["default_basis"].startswith("Megatron-LM's rank order tp-cp-ep-dp-pp")
    rc, out, err = run(capsys, "plan", "--system", "a100", "--axes", "data=2,pipeline=2,tensor=8", "--reduction",
                       "data:1GiB", "--workers", "1")
    assert "default placement [[1 2] [2 1] [1 8]]: " in out and "Megatron-LM's rank order" in out


@settings(max_examples=40, deadline=None)
@given(st.permutations(["data", "pipeline", "tensor", "context"]), st.sampled_from([(2, 16), (4, 8), (2, 2, 8)]),
       st.data())
def test_megatrons_default_placement_is_its_rank_order(names, levels, data):
    devices = math.prod(levels)
    left, sizes = devices, {}
    for n in names[:-1]:
        sizes[n] = data.draw(st.sampled_from([d for d in (1, 2, 4) if left % d == 0]))
        left //= sizes[n]
    sizes[names[-1]] = left
    p = [sizes[n] for n in names]
    mats = enumerate_matrices(levels, p)
    got = default_placement(mats, levels, p, names, names.index("data"))
    found, _ = megatron_matrix(levels, p, names)
    if found is None:
        assert not got.basis.startswith("Megatron")
        return
    assert got.matrix == found and got.basis.startswith("Megatron")
    # the matrix spreads each axis over the levels Megatron-LM's order does; inside a level it numbers the axes
    # in --axes order (the first most significant), so its ranks are Megatron's own (tensor fastest ... pipeline
    # slowest) where --axes lists the axes that share a level slowest first (else --emit megatron moves ranks)
    speed = {"tensor": 0, "context": 1, "data": 3, "pipeline": 4}
    if all([speed[n] for n, row in zip(names, found) if row[j] > 1] ==
           sorted((speed[n] for n, row in zip(names, found) if row[j] > 1), reverse=True) for j in range(len(levels))):
        assert "tp-cp-ep-dp-pp" in megatron_match(Placement.of(levels, p, found), names)


def test_a_plan_of_three_reductions_is_each_reduction_planned_alone(monkeypatch):
    """The reductions' tasks share one context (structures, geometry, NCCL's choices replayed from earlier tasks:
    collectives/decisions.py); each reduction's choice per matrix is still the one it gets planned alone, to the
    bit, and the whole plan is the one of working every choice out (Choice.replay off)."""
    from p2sim.collectives.choice import Choice
    from p2sim.studies.contexts import context_of

    job = dict(system="superpod-h100", nodes=8, axes="data=8,pipeline=4,tensor=2", data_axis="data", workers=1)
    reductions = ["data:1GiB", "tensor:64MiB x 16", "pipeline:16MiB x 8"]
    together = run_plan(PlanRequest.build(reductions=reductions, **job))
    log = next(iter(context_of(together.request.job.spec, 8)._expansions.values())).decisions
    assert log.replayed > 0  # later tasks took earlier tasks' choices
    for i, r in enumerate(reductions):
        alone = run_plan(PlanRequest.build(reductions=[r], **job))
        assert {p.matrix: p.choices[0].to_json() for p in alone.plans} == {
            p.matrix: p.choices[i].to_json() for p in together.plans}
    monkeypatch.setattr(Choice, "replay", False)
    worked = run_plan(PlanRequest.build(reductions=reductions, **job))
    assert json.dumps(worked.to_json(), sort_keys=True) == json.dumps(together.to_json(), sort_keys=True)
