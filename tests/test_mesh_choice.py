"""What ``--emit`` writes out: the fastest program a framework runs, and a note when it is not the fastest."""

from __future__ import annotations

from types import SimpleNamespace as NS

from p2sim.formalism.hierarchy import Order
from p2sim.formalism.placement import Placement
from p2sim.report.mesh_choice import _pick, plan_mesh_choice, rank_mesh_choice
from p2sim.studies.rank import RankRequest, run_rank

PL = Placement.of([2, 4], [8], [[2, 4]])
MASTER = "Reduce(slice=1, Inside) ; AllReduce(slice=1, Master(0)) ; Broadcast(slice=1, Inside)"
HIER = "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"


def _entry(text: str, seconds: float) -> NS:
    return NS(timing=NS(text=text), algo="ring", seconds=seconds, matrix=PL.matrix)


def test_the_fastest_program_that_runs_is_picked_with_its_cost():
    entries = [_entry(MASTER, 1.0), _entry(HIER, 1.25)]
    cand, steps, note = _pick(entries, lambda e: PL, (0,), Order.ALIGNED, "jax")
    assert cand is entries[1] and [s.op.value for s in steps] == ["ReduceScatter", "AllReduce", "AllGather"]
    assert "Reduce has no JAX or PyTorch mesh collective" in note and "1.250x its time" in note


def test_the_fastest_program_is_kept_when_it_runs():
    entries = [_entry(HIER, 1.0), _entry(MASTER, 2.0)]
    cand, steps, note = _pick(entries, lambda e: PL, (0,), Order.ALIGNED, "torch")
    assert cand is entries[0] and note == "" and len(steps) == 3


def test_rank_choice_carries_names_levels_and_steps():
    result = run_rank(RankRequest.build(system="a100", axes={"data": 4, "tensor": 8}, reduce=["data"], workers=1, top=3))
    c = rank_mesh_choice(result, "jax")
    assert c.placement.matrix == result.best.matrix and c.levels == ("node", "gpu")
    assert c.reductions[0].program == result.best.timing.text and c.reductions[0].steps
    assert all(d.name.split("_")[0] in ("data", "tensor") for d in c.dims)


def _plan(program: str) -> NS:
    topo = NS(hierarchy=(2, 4), spec=NS(name="toy"), node_count=2, gpus_per_node=4, level_names=("node", "gpu"))
    job = NS(axes=(8,), axis_names=("data",), topology=topo, spec=NS(node_level=0))
    choice = NS(reduction=NS(axes=(0,)), algo="ring", program=program, seconds=1.0, allreduce_seconds=1.5)
    return NS(request=NS(job=job, settings=NS(order=Order.ALIGNED, proto="auto")), best=NS(matrix=PL.matrix, choices=(choice,)),
              warnings=())


def test_plan_falls_back_to_one_allreduce_with_its_time():
    c = plan_mesh_choice(_plan(MASTER), "torch")
    r = c.reductions[0]
    assert r.program == "AllReduce(slice=0, Inside)" and r.seconds == 1.5 and "1.500x its time" in r.note
    assert [s.dims for s in r.steps] == [(0, 1)]
    kept = plan_mesh_choice(_plan(HIER), "torch").reductions[0]
    assert kept.program == HIER and kept.note == ""
    assert plan_mesh_choice(_plan(MASTER), "json").reductions[0].steps is None  # json: the program as chosen


def test_when_no_ranked_program_runs_one_allreduce_is_emitted(monkeypatch):
    import p2sim.report.mesh_choice as mc

    result = run_rank(RankRequest.build(system="a100", axes={"data": 4, "tensor": 8}, reduce=["data"], workers=1, top=3))
    second = result.ranking.entries[1]  # ReduceScatter ; AllGather on the best matrix
    # as if no ranked program ran on the framework's mesh
    monkeypatch.setattr(mc, "_pick", lambda *a: (second, None, "no ranked program runs on a jax mesh (...)"))
    r = rank_mesh_choice(result, "jax").reductions[0]
    assert r.program == "AllReduce(slice=0, Inside)" and [s.op.value for s in r.steps] == ["AllReduce"]
    assert r.note.startswith("no ranked program runs") and "one AllReduce over the reduction" in r.note
    summary = next(m for m in result.ranking.matrices if m.matrix == second.matrix)
    assert r.seconds == summary.allreduce.seconds
