"""rank: one reduction's programs ranked; a model's whole step is plan's (issue 44: rank refuses it, one type)."""

from __future__ import annotations

import json

import pytest

import p2sim
from p2sim.studies.rank import RankResult
from p2sim.util.errors import InputError

from .test_cli import run

JOB = dict(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", workers=1)


def test_rank_answers_one_type_and_points_a_model_to_plan(tiny):
    """Two nodes of 8: rank over data alone ties tensor across the nodes ([[1 2] [1 2] [2 2]]) with the
    data reduction inside one; rank refuses a model when its request is built, and plan --model, which it
    points to, counts tensor's 2 x 2 x 2 x 32 = 256 AllReduces of 4 MiB a step (seq 2048 x hidden 1024 x 2
    bytes) too: its best keeps tensor's 4 inside a node."""
    alone = p2sim.rank(**JOB, reduce="data")
    assert isinstance(alone, RankResult) and alone.best.matrix[2] == (2, 2)  # tensor split over the 2 nodes
    with pytest.raises(InputError, match=r"^model: rank ranks the programs of one reduction .*p2sim plan --model"):
        p2sim.rank(**JOB, model=tiny, train="seq=2048,global_batch=64")
    planned = p2sim.plan(**JOB, model=tiny, train="seq=2048,global_batch=64")
    assert planned.best.matrix[2] == (1, 4)
    tensor = next(c for c in planned.best.choices if c.reduction.axes == (2,))
    assert (tensor.reduction.bytes, tensor.reduction.count) == (2048 * 1024 * 2, 256)


def test_rank_model_on_the_command_line_points_to_plan(capsys, tiny):
    rc, out, err = run(capsys, "rank", "--system", "dgx-h100", "--nodes", "2", "--axes", "data=2,pipeline=2,tensor=4",
                       "--model", tiny, "--train", "seq=2048,global_batch=64", "--workers", "1")
    assert rc == 2 and out == "" and "p2sim plan --model" in err and "Traceback" not in err
    rc, out, _ = run(capsys, "plan", "--system", "dgx-h100", "--nodes", "2", "--axes", "data=2,pipeline=2,tensor=4",
                     "--model", tiny, "--train", "seq=2048,global_batch=64", "--workers", "1", "--json")
    assert rc == 0 and json.loads(out)["step"]["best_axes"][0]["axis"] == "tensor"


def _structure_builds(monkeypatch) -> list[tuple]:
    """Each structure built, by the caches it went to and what it was built of."""
    from p2sim.collectives import structure

    built: list[tuple] = []
    build = structure.Structures.build

    def counted(self, algo, op, members, segs, used, share):
        built.append((id(self._structures), algo, op, tuple(members), used, share))
        return build(self, algo, op, members, segs, used, share)

    monkeypatch.setattr(structure.Structures, "build", counted)
    return built


def test_both_algorithms_and_every_reduction_share_one_topologys_structures(monkeypatch):
    # issue 34 item 2: rank --algo both runs each algorithm's tasks, plan each reduction's, on one topology's
    # caches (studies.contexts.context_of): every structure goes to one cache and none is built twice
    from p2sim.studies.plan import PlanRequest, run_plan
    from p2sim.studies.rank import RankRequest, run_rank

    def rank() -> None:
        run_rank(RankRequest.build(system="h100", nodes=4, axes="data=8,tensor=4", reduce="data", algo="both",
                                   workers=1))

    def plan() -> None:
        run_plan(PlanRequest.build(system="h100", nodes=4, axes="data=8,tensor=4",
                                   reductions=("data:1GiB", "tensor:64MiB x 4"), workers=1))

    for algos, run_job in ((2, rank), (1, plan)):
        built = _structure_builds(monkeypatch)
        run_job()
        monkeypatch.undo()
        assert len({b[1] for b in built}) >= algos and len({b[0] for b in built}) == 1
        assert len(set(built)) == len(built)
