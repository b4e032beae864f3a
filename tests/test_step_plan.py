"""plan --model: every collective of a model's step charged per matrix, checked against its single simulations."""

from __future__ import annotations

import json

import pytest

import p2sim
from p2sim.formalism.hierarchy import Lowering, LoweredStep
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program
from p2sim.formalism.semantics import Op
from p2sim.sim.simulator import Simulator
from p2sim.studies.step_plan import part_groups
from p2sim.studies.step_workload import ENDS, PAIRS, StepPart, step_workload
from p2sim.topology import load_system
from p2sim.util.errors import InputError



@pytest.fixture(scope="module")
def tiny_plan(tiny):
    return p2sim.plan(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", model=tiny,
                      train="seq=2048,global_batch=8", workers=1)


def test_each_axis_is_the_sum_of_its_single_simulations_times_counts(tiny_plan):
    """By hand: each reduction's program and each other collective simulated alone, as one step of all its
    groups, times its count, add up to the plan's per-axis times and its total."""
    r = tiny_plan
    topo = load_system("dgx-h100", nodes=2)
    sim = Simulator(topo)
    job = r.request.job
    total = 0.0
    for plan in (r.best, r.default_plan):
        by_axis = plan.axis_seconds()
        expect: dict[tuple[int, ...], float] = {}
        for c in plan.choices:
            lw = Lowering.of(Placement.of(topo.hierarchy, job.axes, plan.matrix), c.reduction.axes)
            t = sim.simulate(lw, parse_program(c.program), float(c.reduction.bytes)).total_seconds
            assert t == pytest.approx(c.seconds, rel=1e-9)
            expect[c.reduction.axes] = expect.get(c.reduction.axes, 0.0) + t * c.reduction.count
        for pt in plan.parts:
            groups = part_groups(pt.part, topo.hierarchy, job.axes, plan.matrix)
            t = sim.step(LoweredStep(Op(pt.part.op), groups), (float(pt.part.size),) * len(groups)).seconds
            assert t == pytest.approx(pt.seconds, rel=1e-9)
            expect[pt.part.axes] = expect.get(pt.part.axes, 0.0) + t * pt.part.count
        assert by_axis.keys() == expect.keys()
        for axes, seconds in expect.items():
            assert by_axis[axes] == pytest.approx(seconds, rel=1e-9)
        assert plan.total_seconds == pytest.approx(sum(expect.values()), rel=1e-9)
        total = plan.total_seconds
    assert total > 0


def test_the_tiny_steps_collectives_by_hand(tiny_plan):
    """tiny at data=2, pipeline=2, tensor=4, seq 2048, global batch 8: micro-batches 8 / (1 x 2) = 4, layers per
    stage 2.  Tensor: 2 AllReduces x 2 layers x 4 micro-batches, forward and backward, of 2048 x 1024 x 2 B;
    pipeline: 4 boundary exchanges of 4 MiB (activations forward, gradients back), and the tied embeddings'
    AllReduce of 32768 x 1024 / 4 x 4 B between the first and last stage; data: the AllReduce of the
    weights a rank holds in fp32."""
    r = tiny_plan
    names = r.request.job.axis_names
    reductions = {(tuple(names[a] for a in x.axes), x.bytes, x.count) for x in r.request.reductions}
    held = -(-r.request.demand.workload.model.dense_parameters // 8)  # tensor x pipeline = 8 shards
    assert reductions == {(("tensor",), 2048 * 1024 * 2, 32), (("data",), held * 4, 1)}
    parts = {(tuple(names[a] for a in p.axes), p.op, p.size, p.count, p.pattern) for p in r.request.demand.parts}
    assert parts == {(("pipeline",), "SendRecv", 2048 * 1024 * 2, 4, PAIRS),
                     (("pipeline",), "AllReduce", 32768 * 1024 // 4 * 4, 1, ENDS)}


def test_pipeline_pairs_do_not_wrap_and_ends_are_first_and_last():
    part = StepPart((0,), "SendRecv", 8, 1, PAIRS, ("forward",))
    assert part_groups(part, (4, 8), (4, 8), ((4, 1), (1, 8))) == ((0, 8), (8, 16), (16, 24)) + tuple(
        pair for g in range(1, 8) for pair in ((g, g + 8), (g + 8, g + 16), (g + 16, g + 24)))
    ends = StepPart((0,), "AllReduce", 8, 1, ENDS, ("optimizer",))
    assert part_groups(ends, (4, 8), (4, 8), ((4, 1), (1, 8)))[:2] == ((0, 24), (1, 25))


def test_tensor_stays_inside_the_node_on_a_superpod_with_a_real_batch():
    """llama3-70b on 16 SuperPOD nodes with Megatron-LM's usual batch (32 micro-batches per step): the tensor
    axis's 2 x 2 x 20 x 32 AllReduces a step keep it inside a node, and the answer says so by axis."""
    r = p2sim.plan(system="superpod-h100", nodes=16, axes="data=4,pipeline=4,tensor=8", model="llama3-70b",
                   train="seq=4096,global_batch=128", workers=1, top_matrices=4)
    rows = {row["axis"]: row for row in r.to_json()["step"]["best_axes"]}
    assert rows["tensor"]["tier"] == "inside a node"
    assert rows["tensor"]["collectives"][0]["count"] == 2 * 2 * 20 * 32
    assert set(rows) == {"tensor", "pipeline", "data"}


def test_json_keys(tiny_plan):
    doc = json.loads(json.dumps(tiny_plan.to_json()))
    step = doc["step"]
    assert {"model", "training", "collectives", "overlap", "best_axes", "default_axes", "best_seconds",
            "default_seconds", "hidden_seconds", "compute_per_layer_seconds"} <= set(step)
    assert step["model"] == "tiny" and step["overlap"].startswith("overlap: none")
    row = step["best_axes"][0]
    assert {"axis", "axes", "seconds", "tier", "bound", "collectives"} <= set(row)
    assert {"parts", "hidden_seconds"} <= set(doc["best"])
    assert doc["best"]["total_seconds"] == pytest.approx(sum(r["seconds"] for r in step["best_axes"]), rel=1e-9)


def test_compute_per_layer_hides_the_data_reduction_behind_backward(tiny):
    """exposed = max(0, data - L/p x 2/3 x compute per layer): with 1 s per layer it is all hidden."""
    kw = dict(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", model=tiny,
              train="seq=2048,global_batch=8", workers=1)
    plain, overlapped = p2sim.plan(**kw), p2sim.plan(**kw, compute_per_layer=1.0)
    assert overlapped.request.demand.workload.backward_seconds == pytest.approx(2 * 2 / 3)
    for pl in overlapped.plans:
        data = sum(c.seconds * c.reduction.count for c in pl.choices if c.reduction.axes == (0,))
        others = sum(pl.axis_seconds().values()) - data
        assert pl.hidden_seconds == pytest.approx(data) and pl.total_seconds == pytest.approx(others)
    assert plain.best.hidden_seconds == 0.0


def test_model_and_reduction_add_up(tiny):
    """In the request (check --model and whatif's points build it so); p2sim.plan refuses the pair: it ranks by
    the step's time, which an added reduction is not part of."""
    from p2sim.studies.plan import PlanRequest
    kw = dict(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", model=tiny,
              train="seq=2048,global_batch=8", workers=1)
    both = PlanRequest.build(**kw, reductions=["tensor:4MiB x 3", "data,pipeline:1MiB"])
    counts = {(x.axes, x.bytes): x.count for x in both.reductions}
    assert counts[((2,), 4 * 2**20)] == 32 + 3 and counts[((0, 1), 2**20)] == 1
    with pytest.raises(InputError, match="^reduction: with --model the placements are ranked by the model's step"):
        p2sim.plan(**kw, reduction=["tensor:4MiB x 3"])


def test_a_model_plans_summary_and_answer_speak_of_the_step_time(tiny):
    """summary() (repr, notebooks) compares the best step with the default's, not their communication (which
    can be more for the fastest step); with --top-matrices the answer says the fastest of those listed."""
    from p2sim.report.plan import plan_answer
    kw = dict(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", model=tiny,
              train="seq=2048,global_batch=8", workers=1)
    r = p2sim.plan(**kw)
    steps = {p.matrix: p.step_seconds for p in r.step_times}
    assert "'s step: best " in r.summary() and "-" not in r.summary().split("a step, ")[1][:2]
    assert steps[r.best.matrix] <= steps[r.default]
    assert "Its step is the fastest, as p2sim step" in plan_answer(r).text
    few = p2sim.plan(**kw, top_matrices=1)
    assert "Its step is the fastest of the placements listed (kept by their communication)" in plan_answer(few).text


@pytest.mark.parametrize("kw, message", [
    (dict(axes="data=2,foo=8"), "axes: 'foo' is not an axis a training step uses with --model"),
    (dict(axes="dp=2,data=8"), "axes: dp and data are both the data axis"),
    (dict(train="seq=0"), "train: seq_length: 0 should be a positive integer"),
    (dict(train="zero=5"), "train: zero: '5' should be 0, 1, 2 or 3"),
    (dict(train="colour=red"), "train: 'colour' is not a training setting"),
    (dict(compute_per_layer="-1"), "compute-per-layer"),
    (dict(model="no-such-model"), "model: 'no-such-model' is neither a preset"),
])
def test_bad_model_inputs_are_one_line(kw, message):
    args = dict(system="dgx-h100", nodes=2, axes="data=2,tensor=8", model="llama3-8b", workers=1)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        p2sim.plan(**{**args, **kw})


def test_train_without_a_model_is_refused():
    with pytest.raises(InputError, match="^train: describes the training step of a --model"):
        p2sim.plan(system="dgx-h100", axes="data=2,tensor=8", reduction="data:1GiB", train="seq=8192")


def test_a_preset_trains_with_its_published_sequence_and_batch_unless_train_gives_them(tiny):
    """llama3-70b without --train: Dubey et al. 2024's 8192-token sequences and 16M-token batch (2048
    sequences), said in the answer; what --train gives wins; a TOML model keeps TrainingSpec's defaults."""
    names, sizes = ("data", "pipeline", "tensor"), (32, 4, 8)
    work = step_workload("llama3-70b", None, names, sizes)
    assert (work.training.seq_length, work.training.global_batch) == (8192, 2048)
    assert work.assumed.startswith("seq and global batch as published for llama3-70b (Dubey et al. 2024")
    given = step_workload("llama3-70b", "seq=4096", names, sizes)
    assert (given.training.seq_length, given.training.global_batch) == (4096, 2048)
    assert given.assumed.startswith("global batch as published")
    assert step_workload("llama3-70b", "seq=4096,gbs=64", names, sizes).assumed == ""
    own = step_workload(tiny, None, ("data", "tensor"), (2, 4))
    assert (own.training.seq_length, own.training.global_batch, own.assumed) == (4096, None, "")


def test_a_published_batch_that_does_not_split_says_where_it_came_from():
    with pytest.raises(InputError, match=r"^train: global_batch: 2048 should be a multiple of .* = 3 "
                                         r"\(llama3-70b's published value, not given in --train: give it there\)$"):
        step_workload("llama3-70b", None, ("data", "tensor"), (3, 8))


def test_matrices_whose_step_cannot_be_fastest_are_cut_and_the_best_is_the_exhaustive_ones():
    """llama3-8b, tensor=8 on 4 dgx-h100 nodes: the 3 matrices that split tensor over nodes have a least step
    (each collective alone) above the best's step, so they are cut; the fastest step is what timing every matrix
    (``--exhaustive``: nothing cut) finds, and the table is ranked by it."""
    kw = dict(system="dgx-h100", nodes=4, axes="data=2,pipeline=2,tensor=8", model="llama3-8b",
              train="seq=2048,global_batch=256", workers=1)
    cut, every = p2sim.plan(**kw), p2sim.plan(**kw, exhaustive=True)
    assert (cut.cut, len(cut.plans), every.cut, len(every.plans)) == (3, 1, 0, 4)
    assert cut.best.matrix == every.best.matrix == ((2, 1), (2, 1), (1, 8))
    assert cut.step_times[0].step_seconds == every.step_times[0].step_seconds
    for r in (cut, every):  # the table (and --json's plans) by the step's time, leading with it
        assert [p.matrix for p in r.step_times] == [pl.matrix for pl in r.plans]
        steps = [row["step_seconds"] for row in r.to_json()["plans"]]
        assert steps == sorted(steps) and list(r.to_json()["plans"][0])[0] == "step_seconds"
    assert cut.to_json()["search"]["cut_matrices"] == 3


@pytest.mark.parametrize("system, nodes, axes, train, model", [
    ("dgx-h100", 2, "data=2,pipeline=2,tensor=4", "seq=8192,global_batch=64", "llama3-8b"),
    ("dgx-h100", 4, "data=2,pipeline=2,tensor=8", "seq=2048,global_batch=256", "llama3-8b"),
    ("dgx-h100", 2, "pipeline=4,data=2,tensor=2", "seq=4096,global_batch=32", "llama3-8b"),
    ("dgx-h100", 2, "context=2,data=2,tensor=4", "seq=8192,global_batch=16,zero=1", "llama3-8b"),
    ("a100", 2, "data=4,pipeline=2,tensor=4", "seq=4096,global_batch=64", "llama3-8b"),
    ("dgx-h100", 2, "expert=4,data=2,tensor=2", "seq=4096,global_batch=16,sp=on", "mixtral-8x7b"),
])
def test_the_step_cut_keeps_every_matrix_whose_step_can_be_fastest(system, nodes, axes, train, model):
    """step_cut against timing every matrix: the fastest step is kept (and timed exactly), every matrix cut has a
    step above it, and each least time is at most the matrix's step (below it where contention between axes
    lengthens the step: every case here has such a matrix)."""
    from p2sim.studies.plan import PlanRequest
    from p2sim.studies.step_placements import step_timer
    from p2sim.studies.step_plan import step_cut, step_matrices

    req = PlanRequest.build(system=system, nodes=nodes, axes=axes, model=model, train=train, workers=1)
    timer = step_timer(req)
    mats = step_matrices(req)
    exact = {m: timer.time(m).step_seconds for m in mats}
    fastest = min(exact.values())
    alive, times = step_cut(req, mats, mats[-1], timer)
    assert all(timer.lower(m) <= exact[m] for m in mats) and any(timer.lower(m) < exact[m] for m in mats)
    assert mats[-1] in alive and {m for m in mats if exact[m] == fastest} <= set(alive)
    assert all(exact[m] > fastest for m in mats if m not in alive)
    assert min(t.step_seconds for t in times.values()) == fastest
    assert all(t.step_seconds == exact[m] for m, t in times.items())


def test_a_whole_step_plan_says_its_estimate_first_and_is_refused_before_anything_is_simulated(capsys, monkeypatch):
    """Issue 43: at 14,336 SuperPOD nodes plan --model simulated every matrix's other collectives and bounded
    its reductions (minutes) before the search said an estimate; now the whole step's is said, and checked,
    before anything is simulated."""
    from p2sim.cli.main import main

    simulated = []
    import p2sim.studies.step_plan as sp
    real = sp.simulate_parts
    monkeypatch.setattr(sp, "simulate_parts", lambda *a, **k: simulated.append(1) or real(*a, **k))
    argv = ["plan", "--model", "llama3-8b", "--system", "dgx-h100", "--nodes", "2", "--axes",
            "data=4,pipeline=2,tensor=2", "--workers", "1"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("p2sim plan: 3 matrices, the whole step of llama3-8b: estimated")
    assert simulated
    simulated.clear()
    monkeypatch.setattr("p2sim.studies.jobsize.memory_limit", lambda: 1.0)  # any job is past the limit
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "p2sim plan: error: job: plan on dgx-h100 with 2 nodes (3 matrices) would take about" in err
    assert "--yes runs it anyway" in err and not simulated


def test_a_whole_step_plan_says_its_synthesis_once(capsys, monkeypatch):
    """The synthesis is said before the whole step's estimate, and not again when the search counts its programs
    (they are synthesized by then)."""
    from p2sim.cli.main import main

    monkeypatch.setattr("p2sim.studies.jobsize.SAY_SYNTHESIS_SECONDS", 0.0)  # every synthesis said
    assert main(["plan", "--model", "llama3-8b", "--system", "dgx-h100", "--nodes", "2", "--axes",
                 "data=4,pipeline=2,tensor=2", "--workers", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [i for i, line in enumerate(err) if "counting programs first" in line] == [0]
    assert err[1].startswith("p2sim plan: 3 matrices, the whole step of llama3-8b: estimated")


def test_run_plan_of_a_model_step_is_refused_clearly():
    """ZeRO-1 with sequence parallelism has no AllReduce: run_plan raised a bare ValueError (max of nothing);
    a model's step is run_step_plan's (as p2sim.api.plan runs it), and run_plan says so."""
    from p2sim.studies.plan import PlanRequest, run_plan
    from p2sim.studies.step_plan import run_step_plan
    from p2sim.util.errors import InputError
    req = PlanRequest.build(system="dgx-h100", nodes=2, axes={"data": 2, "tensor": 8}, model="llama3-8b",
                            train="zero=1,sp=on,global_batch=16", workers=1, engine="analytic")
    assert req.reductions == ()
    with pytest.raises(InputError, match="llama3-8b.s whole step: run_plan plans AllReduces only; run it with .*run_step_plan"):
        run_plan(req)
    result = run_step_plan(req)
    assert result.plans and all(not p.choices for p in result.plans)
    assert {pt.part.op for pt in result.plans[0].parts} >= {"AllGather", "ReduceScatter"}


def test_a_model_plans_table_leads_with_the_step_time_and_named_reductions_keep_theirs():
    """plan --model --axes: the table (text, page and --json) ranks by the step's time, the communication beside;
    Meta's order (the pipeline inside a node) is first though it communicates more than the default.  A plan of
    named reductions keeps its table."""
    from p2sim.report.plan import plan_answer, plan_text

    r = p2sim.plan(model="llama3-8b", system="dgx-h100", axes="data=2,pipeline=2,tensor=4",
                   train="seq=8192,global_batch=64", workers=1)
    lines = plan_text(r).splitlines()
    head = lines.index("rank   step time  communication  AllReduce only  matrix")
    rows = lines[head + 1:head + 1 + len(r.plans)]
    assert [row.split()[1:3] for row in rows] == [["4.371", "s"], ["4.45", "s"]]
    assert r.best.matrix == r.step_times[0].matrix == ((2, 1), (1, 2), (1, 4))
    assert r.best.total_seconds > r.default_plan.total_seconds  # the fastest step communicates more
    assert "its communication is 4.9% more than the default placement" in plan_text(r)
    assert "Its step is the fastest, as p2sim step times it: 4.371 s, 1.02x faster than" in plan_answer(r).text
    named = p2sim.plan(system="dgx-h100", axes="data=2,pipeline=2,tensor=4", reduction=["data:1GiB"], workers=1)
    assert "rank   step time  AllReduce only  matrix" in plan_text(named) and not named.step_times
    assert "step_seconds" not in named.to_json()["plans"][0]


def test_a_plan_cut_by_the_step_time_is_estimated_without_the_communication_cuts_bounds():
    """The timed cut bounds no reduction on every matrix (cut_matrices' work): its estimate counts each matrix's
    step collectives simulated alone instead (the other collectives again, each reduction once)."""
    from p2sim.studies.jobsize import StepCount
    from p2sim.studies.plan import PlanRequest, plan_cost
    from p2sim.studies.step_plan import _skipped, step_matrices, step_plan_cost

    req = PlanRequest.build(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", model="llama3-8b",
                            train="seq=8192,global_batch=64", workers=1)
    mats = step_matrices(req)
    assert _skipped(req, mats) is not None  # the communication's cut bounds a reduction on every matrix
    parts = len(req.demand.parts)  # one SendRecv: weight 1
    devices = req.job.topology.devices
    timed = plan_cost(req, mats, StepCount(simulated=devices * len(mats) * (2 * parts + len(req.reductions))), [],
                      say=False)[0]
    assert step_plan_cost(req, mats, timed=True) == timed
    assert step_plan_cost(req, mats) != timed
