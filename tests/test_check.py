"""``p2sim check``: nccl-tests commands for a placement's steps, and verdicts on logs in nccl-tests' layouts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from p2sim.measurements.check import CheckRequest, run_check
from p2sim.measurements.verdict import verdicts
from p2sim.measurements.collective_predict import predict_collectives
from p2sim.measurements.nccltests import read_nccltests
from p2sim.measurements.split import split_colors

from .test_cli import run

DATA = Path(__file__).parent / "data" / "nccltests"
HIER = "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"


def test_each_step_is_one_command_whose_split_gives_its_groups():
    res = run_check(CheckRequest.build(system="dgx-h100", nodes=4, axes="data=32", reduce="data", matrix="[[4 8]]",
                                       program=HIER, bytes="1GiB"))
    rs, ar, ag = res.steps
    assert [s.collective for s in res.steps] == ["ReduceScatter", "AllReduce", "AllGather"]
    assert (rs.groups, rs.group_size, rs.split, rs.nodes_spanned) == (4, 8, "DIV 8", 1)
    assert (ar.groups, ar.group_size, ar.split, ar.nodes_spanned) == (8, 4, "MOD 8", 4)
    assert rs.size == 2**30 and ar.size == 2**30 // 8  # the AllReduce runs on a scattered eighth
    assert rs.command == ('mpirun -np 32 -N 8 -x NCCL_TESTS_SPLIT="DIV 8" ./build/reduce_scatter_perf '
                          '-b 1073741824 -e 1073741824 -g 1 -J step1.json')
    for s in res.steps:  # nccl-tests' colors are exactly the step's groups
        colors = split_colors(s.split, 32)
        assert len(set(colors)) == s.groups
    # NCCL's figure for the GPU's PCIe Gen5 x16 (48 GB/s) is below the 400G NIC's 50 GB/s
    assert (ar.bound.resource, ar.bound.kind) == ("pcie", "link")
    assert sum(s.seconds for s in res.steps) == pytest.approx(res.seconds, rel=1e-9)


def test_groups_that_share_one_nic_are_bound_by_it():
    # a100: one NIC per node; the 16 cross-node pairs of the middle step all go through it
    res = run_check(CheckRequest.build(system="a100", nodes=2, axes="data=32", reduce="data", matrix="[[2 16]]",
                                       program=HIER, bytes="1GiB"))
    ar = res.steps[1]
    assert ar.split == "MOD 16" and (ar.bound.resource, ar.bound.groups) == ("nic", 16)


def test_a_step_of_one_group_needs_no_split_and_sizes_are_whole_floats():
    res = run_check(CheckRequest.build(system="a100", nodes=2, axes="data=32", reduce="data", matrix="[[2 16]]",
                                       program="AllReduce(slice=0, Inside)", bytes="1000B"))
    (s,) = res.steps
    assert s.split is None and "NCCL_TESTS_SPLIT" not in s.command
    assert s.size % 4 == 0 and s.size <= 1000


def test_without_a_program_check_takes_the_best_placement_rank_finds():
    res = run_check(CheckRequest.build(system="a100", axes="data=4,tensor=8", reduce="data", workers=1))
    assert res.program and res.steps and res.matrix == ((1, 4), (2, 4))


def _rewrite(src: Path, dst: Path, factor: float, system: str) -> list:
    """nccl-tests' text log with every time set to p2sim's prediction x factor (columns kept in place)."""
    rows = read_nccltests(src, system=system)
    preds = {(p.row.line, p.row.in_place): p.seconds for p in predict_collectives(rows)}
    out = []
    for n, line in enumerate(src.read_text().splitlines(), 1):
        toks = list(re.finditer(r"\S+", line))
        if line.startswith("#") or len(toks) < 13 or not toks[0].group().isdigit():
            out.append(line)
            continue
        size = int(toks[0].group())
        new = list(line)
        for i, in_place in ((5, False), (9, True)):
            t = preds[(n, in_place)] * factor
            busbw = size / t * 2 * 15 / 16 / 1e9
            for k, text in ((i, f"{t * 1e6:.2f}"), (i + 1, f"{size / t / 1e9:.2f}"), (i + 2, f"{busbw:.2f}")):
                start = toks[k - 1].end() + 1
                new[start:toks[k].end()] = text.rjust(toks[k].end() - start)
        out.append("".join(new))
    dst.write_text("\n".join(out) + "\n")
    return rows


@pytest.mark.parametrize("factor, verdict", [(1.0, "as predicted"), (2.0, "slower"), (0.5, "faster")])
def test_rows_measured_at_the_prediction_are_as_predicted_and_others_say_by_how_much(tmp_path, factor, verdict):
    log = tmp_path / "all_reduce_perf.txt"
    _rewrite(DATA / "all_reduce_perf_mpi_2x8.txt", log, factor, "dgx-h100")
    res = run_check(CheckRequest.build(system="dgx-h100", axes="data=16", reduce="data", matrix="[[2 8]]",
                                       program="AllReduce(slice=0, Inside)", logs=[str(log)]))
    big = [v for v in res.rows if v.prediction.row.size_bytes >= 2**20]  # times printed to 0.01 us: exact enough
    assert big and all(v.verdict == verdict for v in big)
    if verdict != "as predicted":
        assert all(v.factor == pytest.approx(2.0, rel=1e-2) for v in big)
        assert all(f"{verdict} than predicted by 2.00x; bound by " in v.text for v in big)


def test_json_and_split_logs_get_verdicts_naming_the_shared_link():
    res = run_check(CheckRequest.build(system="dgx-h100", axes="data=16", reduce="data", matrix="[[2 8]]",
                                       program="AllReduce(slice=0, Inside)",
                                       logs=[str(DATA / "all_reduce_perf_split_and7_2x8.json")]))
    assert res.rows and all(v.prediction.row.groups == 8 for v in res.rows)
    assert {v.verdict for v in res.rows} <= {"as predicted", "slower", "faster"}
    assert all(v.prediction.bound is not None for v in res.rows)


def test_the_tolerance_sets_the_band():
    rows = read_nccltests(DATA / "all_reduce_perf_mpi_2x8.txt", system="dgx-h100")
    preds = predict_collectives(rows)
    loose = verdicts(preds, 1e6)
    assert all(v.verdict == "as predicted" for v in loose)
    tight = verdicts(preds, 1.0)
    assert all((v.verdict == "as predicted") == (v.prediction.ratio == 1.0) for v in tight)


def test_cli_prints_commands_verdicts_json_and_csv(capsys, tmp_path):
    args = ("check", str(DATA / "all_reduce_perf_mpi_2x8.json"), "--system", "dgx-h100", "--axes", "data=16",
            "--reduce", "data", "--matrix", "[[2 8]]", "--program", HIER)
    rc, out, err = run(capsys, *args)
    assert rc == 0, err
    assert 'NCCL_TESTS_SPLIT="MOD 8"' in out and "verdicts" in out and "rows:" in out
    rc, out, _ = run(capsys, *args, "--json")
    doc = json.loads(out)
    assert len(doc["steps"]) == 3 and doc["rows"] and {"verdict", "factor", "bound"} <= set(doc["rows"][0])
    rc, out, _ = run(capsys, *args, "--csv", "-")
    assert out.splitlines()[0].startswith("id,") and "verdict" in out.splitlines()[0]


def test_a_log_of_a_communicator_that_is_no_step_is_warned_about():
    log = DATA / "all_reduce_perf_mpi_2x8.json"
    # HIER's steps: ReduceScatter and AllGather on 8 ranks of one node, AllReduce on 2 ranks of 2 nodes
    res = run_check(CheckRequest.build(system="dgx-h100", axes="data=16", reduce="data", matrix="[[2 8]]",
                                       program=HIER, logs=[str(log)]))
    first = min(v.prediction.row.line for v in res.rows)
    said = [w for w in res.warnings if "none of the program's steps" in w]
    assert len(said) == 1, res.warnings  # once per log and communicator, not per row
    assert f"{log}:{first}: AllReduce on 16 ranks (2 nodes x 8 GPUs)" in said[0]
    assert "step 2 AllReduce on 2 ranks of 2 nodes" in said[0]
    plain = run_check(CheckRequest.build(system="dgx-h100", axes="data=16", reduce="data", matrix="[[2 8]]",
                                         program="AllReduce(slice=0, Inside)", logs=[str(log)]))
    assert not [w for w in plain.warnings if "none of the program's steps" in w]


def test_verdict_rows_say_out_of_place_or_in_place(capsys):
    args = ("check", str(DATA / "all_reduce_perf_mpi_2x8.txt"), "--system", "dgx-h100", "--axes", "data=16",
            "--reduce", "data", "--matrix", "[[2 8]]", "--program", "AllReduce(slice=0, Inside)")
    rc, out, err = run(capsys, *args)
    assert rc == 0, err
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("source"))
    assert lines[head].split()[:4] == ["source", "place", "collective", "size"]
    rows = [line.split() for line in lines[head + 1:] if line.startswith("all_reduce_perf")]
    assert rows and len({tuple(r) for r in rows}) == len(rows)  # no row twice
    assert sorted(r[1] for r in rows) == sorted(["in", "out"] * (len(rows) // 2))
    rc, out, _ = run(capsys, *args, "--json")
    assert {r["in_place"] for r in json.loads(out)["rows"]} == {False, True}


@pytest.mark.parametrize("extra, says", [
    (("--program", HIER), "program: a program needs its placement"),
    (("--tolerance", "0.5"), "tolerance: 0.5 is a factor"),
    (("--tolerance", "x"), "tolerance: 'x' is not a number"),
])
def test_bad_options_are_one_line(capsys, extra, says):
    rc, out, err = run(capsys, "check", "--system", "a100", "--axes", "data=32", "--reduce", "data", *extra)
    assert rc != 0 and out == "" and says in err and len(err.strip().splitlines()) == 1




def p2sim_plan_text(result) -> str:
    from p2sim.report.plan import plan_text
    return plan_text(result)


def test_check_model_prints_one_command_per_distinct_collective_of_the_step(tiny, capsys):
    """Two DGX H100s, data=2,pipeline=2,tensor=4, 2048-token sequences, 64 a step (32 micro-batches a data
    rank).  By hand: tensor's AllReduce of 1 x 2048 x 1024 x 2 B = 4 MiB, 2 forward + 2 backward per layer,
    2 layers a stage, 32 micro-batches = 256 a step; the pipeline's activations, 4 MiB a send; the tied
    embeddings' fp32 gradient over the pipeline's ends, 32768 x 1024 / 4 (tensor) x 4 B = 32 MiB; the data
    reduction of the fp32 gradients a rank holds (the dense parameters / 8).  The placement is plan --model's
    best."""
    import p2sim
    job = dict(system="dgx-h100", nodes=2, axes="data=2,pipeline=2,tensor=4", model=tiny,
               train="seq=2048,global_batch=64", workers=1)
    r = p2sim.check(**job)
    planned = p2sim.plan(**job)
    assert r.matrix == planned.best.matrix
    held = -(-planned.request.demand.workload.model.dense_parameters // 8)
    got = [(s.instruction, s.size, s.count) for s in r.steps]
    assert got[:2] == [("AllReduce over tensor", 4 * 2**20, 256), ("AllReduce over data", 4 * held, 1)]
    assert ("AllReduce over pipeline (ends)", 32 * 2**20, 1) in got
    assert [(i, size) for i, size, _ in got if i.startswith("SendRecv")] == [("SendRecv over pipeline (pairs)",
                                                                             4 * 2**20)]
    assert len({(s.collective, s.instruction, s.size) for s in r.steps}) == len(r.steps)  # one per distinct
    binaries = {"AllReduce": "all_reduce_perf", "SendRecv": "sendrecv_perf"}
    for s in r.steps:
        assert f"./build/{binaries[s.collective]} -b {s.size} -e {s.size} -g 1 -J step{s.index}.json" in s.command
    # the pipeline's sends are predicted as plan --model charges them under the same placement
    sends = next(pt for pt in planned.best.parts if pt.part.op == "SendRecv")
    assert next(s for s in r.steps if s.collective == "SendRecv").seconds == sends.seconds
    assert r.to_json()["steps"][0]["count"] == 256
    # issue 43: check's total is plan's 'AllReduce only' for the placement (each AllReduce NCCL's own, as
    # nccl-tests measures it), not plan's step time (each reduction by its best program); each says what it charges
    assert r.seconds == pytest.approx(planned.best.allreduce_total_seconds, rel=1e-12)
    assert "AllReduce only: each by NCCL's plain AllReduce (as check --model charges it)" in p2sim_plan_text(planned)
    from p2sim.cli import main
    assert main(["check", "--system", "dgx-h100", "--nodes", "2", "--axes", "data=2,pipeline=2,tensor=4",
                       "--model", tiny, "--train", "seq=2048,global_batch=64", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "the step of tiny (4 distinct collectives, count x time summed; each AllReduce as NCCL's plain " in out
    assert "# step 1 AllReduce over tensor: AllReduce, 4 groups of 4 inside a node, 4 MiB each (at once), 256 a step" \
        in out
    assert out.count("mpirun ") == 4


def test_check_holds_its_demand_and_composes_plans_request(tiny):
    """issue 44: check's request holds a Demand (one reduction, or the model's step), and with a model composes
    plan's request from its own values (the job, the demand, algo and proto, the workers)."""
    one = CheckRequest.build(system="dgx-h100", nodes=2, axes="data=4,tensor=4", reduce="data", bytes="1GiB")
    assert (one.demand.reduce_axes, one.demand.bytes_per_gpu, one.demand.whole_step) == ((0,), 2**30, False)
    step = CheckRequest.build(system="dgx-h100", nodes=2, axes="data=4,tensor=4", model=tiny, proto="Simple",
                              train="seq=2048,global_batch=64", workers=1)
    plan = step.plan_request()
    assert step.demand.whole_step and plan.demand is step.demand and plan.job is step.job
    assert (plan.settings.algo, plan.settings.proto, plan.run.workers) == ("auto", "Simple", 1)


@pytest.mark.parametrize("reduce, why", [("3", "reduce: axis 3 is out of range 0..1"),
                                         ("1", "reduce: the reduction axes have size 1")])
def test_a_reduction_axis_out_of_range_or_of_one_device_is_refused_when_the_request_is_built(reduce, why):
    """It reached rank's tables as an index (IndexError, a traceback); refused as rank refuses it."""
    from p2sim.util.errors import InputError, PlacementError
    with pytest.raises((InputError, PlacementError), match=f"^{re.escape(why)}"):
        CheckRequest.build(system="dgx-h100", nodes=1, axes="tensor=8,data=1", reduce=reduce)
