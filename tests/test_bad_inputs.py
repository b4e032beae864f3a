"""Bad inputs, one by one: each gets exit status 2 and one line naming the file or field.

The commands run in this process through ``main``: an exception that escapes them (a
traceback) fails the test instead of passing it, and every case also checks that
stderr holds exactly one line without "Traceback" -- besides the progress lines a command prints
while it works (every few seconds: on a loaded machine, a count that takes 0.1 s alone prints some).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from bench_nccl.cli import main as bench_main

from .test_cli import run
from p2sim.measurements.program_rows import load_measurements

DATA = Path(__file__).resolve().parents[1] / "validation" / "data" / "measurements_2node.csv"
BAD_BYTES = b"\xff\xfe"




# a progress line (p2sim.util.log.progress): "p2sim whatif: counting ...: 3/7 (42%), 5 s" or "...: 5 s"
PROGRESS = re.compile(r"p2sim \w+: .+: (\d+/\d+ \(\d+%\), )?\d+ s")


def refused(capsys, *argv: str, says: tuple[str, ...]) -> str:
    """Run a command that must be refused; return its one error line (progress lines aside)."""
    rc, out, err = run(capsys, *argv)
    lines = [line for line in err.strip().splitlines() if not PROGRESS.fullmatch(line)]
    assert rc == 2 and "Traceback" not in err and len(lines) == 1, err
    for s in says:
        assert s in lines[0], lines[0]
    return lines[0]


def log_records(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def program_record(program: str, seconds: float, **kw) -> dict:
    rec = {"system": "a100", "nodes": 2, "axes": [2, 16], "reduce_axes": [1], "matrix": [[1, 2], [2, 8]],
           "program": program, "algo": "ring", "bytes": 2**20, "seconds": seconds, "pass": True}
    rec.update(kw)
    return rec


# ---------------------------------------------------------------- item 1: output paths, checked first

@pytest.fixture
def a_file(tmp_path) -> Path:
    f = tmp_path / "afile"
    f.write_text("not a directory")
    return f


@pytest.fixture
def no_work(monkeypatch):
    """Every simulation and fit fails the test: output checks must come before any work."""
    refuse_work(monkeypatch)


def refuse_work(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("work started before the output path was checked")

    import p2sim.measurements.calibration as calibration
    import p2sim.measurements.fit as fit
    import p2sim.studies.executor as executor
    import p2sim.measurements.program_predict as predict
    import p2sim.studies.ranking as rank
    import p2sim.studies.search as search
    import p2sim.studies.step_plan as step_plan

    # every module that bound run_all or calibrate by name at import time gets the refusal too (imported here
    # first, so that none binds it while it is patched and keeps it after the test: calibration, imported first
    # under this fixture, kept the refusal, and a later test's calibrate failed with it)
    for module in (executor, predict, rank, search, step_plan):
        monkeypatch.setattr(module, "run_all", refuse)
    for module in (fit, calibration):  # calibrated_specs calls fit's through its module; run_calibrate its own
        monkeypatch.setattr(module, "calibrate", refuse)


def test_no_work_leaves_no_refusal_behind():
    # a command run under no_work imported p2sim.measurements.calibration first, which bound the patched calibrate
    # by name and kept it: a later test's calibrate failed with "work started before ..." (its order decided)
    import importlib
    import sys

    import p2sim.measurements as package
    import p2sim.measurements.fit as fit

    name = "p2sim.measurements.calibration"
    old = importlib.import_module(name)
    del sys.modules[name]  # as if no test had imported it yet
    try:
        with pytest.MonkeyPatch.context() as mp:
            refuse_work(mp)
            importlib.import_module(name)  # as the first command to calibrate under the fixture does
        assert sys.modules[name].calibrate is fit.calibrate
    finally:
        sys.modules[name] = old
        package.calibration = old


@pytest.mark.parametrize("command", [
    ["rank", "--system", "a100", "--axes", "4,8"],
    ["whatif", "--vary", "nodes=2,4"],
    ["validate", "--measurements", str(DATA)],
    ["sweep", "--system", "h100"],
])
def test_out_that_is_a_file(capsys, no_work, a_file, command):
    refused(capsys, *command, "--out", str(a_file), says=("out:", str(a_file), "not a directory"))
    refused(capsys, *command, "--out", str(a_file / "report"), says=("out:", "is a file"))


def test_calibrate_out_is_checked_before_the_fit(capsys, no_work, tmp_path):
    refused(capsys, "calibrate", "--measurements", str(DATA), "--system", "a100", "--out",
            str(tmp_path / "missing" / "a100-cal.toml"), says=("out:", "missing", "does not exist"))
    refused(capsys, "calibrate", "--measurements", str(DATA), "--system", "a100", "--out", str(tmp_path / "cal.txt"),
            says=("out:", "cal.txt", ".toml"))
    refused(capsys, "calibrate", "--measurements", str(DATA), "--system", "a100", "--out", str(tmp_path),
            says=("out:", "should end in .toml"))


def test_trace_and_draw_paths(capsys, tmp_path, a_file):
    sim = ["simulate", "--system", "a100", "--axes", "32", "--program", "AllReduce(slice=0, Inside)"]
    refused(capsys, *sim, "--trace", str(tmp_path / "missing" / "t.json"), says=("trace:", "does not exist"))
    refused(capsys, *sim, "--trace", str(tmp_path), says=("trace:", "is a directory"))
    refused(capsys, *sim, "--trace", str(a_file / "t.json"), says=("trace:", "is not a directory"))
    refused(capsys, "topo", "a100", "--draw", str(tmp_path / "out.txt"), says=("draw:", "out.txt", ".png"))
    refused(capsys, "topo", "a100", "--draw", str(tmp_path / "missing" / "t.png"), says=("draw:", "does not exist"))


def test_a_late_write_failure_keeps_the_printed_answer(capsys, monkeypatch, tmp_path):
    import p2sim.report.files as files

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full_disk)
    rc, out, err = run(capsys, "rank", "--system", "a100", "--axes", "4,8", "--engine", "analytic", "--workers", "1",
                       "--out", str(tmp_path / "report"))
    assert rc == 2 and "best program per matrix:" in out and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (f"p2sim rank: error: out: cannot write {tmp_path / 'report'} "
                                            "(No space left on device)")
    assert list((tmp_path / "report").iterdir()) == []  # nothing half-written


# ---------------------------------------------------------------- item 1: files that are not UTF-8

def test_system_file_not_utf8(capsys, tmp_path):
    f = tmp_path / "sys.toml"
    f.write_bytes(b'name = "x"\n' + b'description = "' + BAD_BYTES + b'"\n')
    refused(capsys, "topo", str(f), says=(f"{f}:2: encoding: byte 0xff at column 16 is not UTF-8",))
    refused(capsys, "rank", "--system", str(f), says=(f"{f}:2: encoding",))
    refused(capsys, "topo", str(tmp_path), says=(str(tmp_path), "is a directory"))


@pytest.mark.parametrize("name", ["p2.csv", "run.jsonl"])
def test_measurements_not_utf8(capsys, tmp_path, name):
    f = tmp_path / name
    f.write_bytes(DATA.read_bytes()[:200] + BAD_BYTES + b"\n")
    # a CSV's header is read first to tell P2's table from single-collective measurements
    line = DATA.read_bytes()[:200].count(b"\n") + 1
    where = f"{f}: not UTF-8" if name.endswith(".csv") else f"{f}:{line}: encoding"
    refused(capsys, "validate", "--measurements", str(f), says=(where, "UTF-8"))
    refused(capsys, "calibrate", "--measurements", str(f), "--system", "a100", "--out", str(tmp_path / "c.toml"),
            says=(where,))


def test_bench_nccl_logs_not_utf8(capsys, tmp_path, monkeypatch):
    log = tmp_path / "run.jsonl"
    log.write_bytes(json.dumps(program_record("AllReduce(slice=0, Inside)", 1.0)).encode() + b"\n" + BAD_BYTES + b"\n")
    assert bench_main(["summary", str(log)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bench_nccl: error: {log}:2: encoding: byte 0xff at column 1 is not UTF-8 "
                   "(is this a bench_nccl log?)"]
    import bench_nccl.cli as cli

    def no_launch(*args, **kwargs):
        raise AssertionError("ranks launched before the log was checked")

    monkeypatch.setattr(cli, "launch_local", no_launch)
    for extra in (["--resume"], []):  # --resume reads it back; a plain run appends to it
        rc = bench_main(["run", "--system", "h100", "--nodes", "1", "--axes", "8", "--backend", "numpy",
                         "--bytes", "1KiB", "--log", str(log), *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and f"{log}:2: encoding" in err[0]
    rc = bench_main(["run", "--system", "h100", "--nodes", "1", "--backend", "numpy", "--log",
                     str(tmp_path / "missing" / "run.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "log: the directory" in err[0]
    other = tmp_path / "list.jsonl"
    other.write_text("[1, 2]\n{}\n")
    assert bench_main(["summary", str(other)]) == 2
    assert "list.jsonl:1: record: is not a JSON object" in capsys.readouterr().err


# ---------------------------------------------------------------- item 2: combinatorial limits

def test_placements_of_twelve_levels_are_counted_and_refused(capsys):
    twelve = ",".join(["2"] * 12)
    refused(capsys, "placements", "--hierarchy", twelve, "--axes", twelve,
            says=("matrices:", "479001600 parallelism matrices", "--max-matrices", "--yes"))
    refused(capsys, "placements", "--hierarchy", "4,16", "--axes", "4,16", "--max-matrices", "2",
            says=("matrices:", "3 parallelism matrices", "limit of 2"))
    rc, out, _ = run(capsys, "placements", "--hierarchy", "4,16", "--axes", "4,16", "--max-matrices", "3")
    assert rc == 0 and out.startswith("hierarchy [4, 16]  axes [4, 16]: 3 parallelism matrices")


def test_deep_synthesis_is_refused_unless_yes(capsys):
    refused(capsys, "synth", "--hierarchy", ",".join(["2"] * 7), "--axes", "128",
            says=("synthesis:", "7 levels", "--yes"))


def test_simulations_are_counted_before_they_start_and_limited(capsys):
    refused(capsys, "rank", "--system", "a100", "--axes", "4,8", "--algo", "both", "--max-simulations", "99",
            says=("simulations:", "100 simulations", "limit of 99", "--max-simulations"))
    refused(capsys, "plan", "--system", "a100", "--axes", "2,16", "--reduction", "0:1GiB", "--reduction", "1:1MiB",
            "--max-simulations", "10", says=("simulations:", "56 simulations"))
    refused(capsys, "whatif", "--vary", "nodes=2,4", "--max-simulations", "10", says=("simulations:", "2 points"))
    refused(capsys, "validate", "--measurements", str(DATA), "--max-simulations", "10",
            says=("simulations:", "60 rows in 32 groups"))
    refused(capsys, "simulate", "--system", "a100", "--axes", "4,8", "--max-simulations", "49",
            says=("simulations:", "50 programs"))
    rc, out, err = run(capsys, "rank", "--system", "a100", "--axes", "4,8", "--engine", "analytic",
                       "--workers", "10000", "--yes")
    assert rc == 0, err
    (line,) = err.strip().splitlines()
    cores = len(os.sched_getaffinity(0))
    workers = "in this process" if min(cores, 2) == 1 else f"on {min(cores, 2)} worker processes"
    # the job's estimate too: each process's 100 MiB, the CPU time (under a second here)
    assert line == (f"p2sim rank: 2 matrices, 50 programs, 1 algorithm: 50 simulations in 2 tasks {workers}, "
                    f"estimated under 1 s of CPU and {100 * min(cores, 2)} MiB of memory")


@pytest.mark.slow  # estimates a whatif on a fabric of 16,384 nodes
def test_an_ecmp_whatif_is_refused_up_front_with_its_estimate(capsys, monkeypatch):
    from p2sim.studies import whatif

    # a progress line every 0.01 s, as a loaded machine's count taking over 5 s prints them: the refusal is still
    # the one line that is not progress (the test failed under load when it counted every line)
    monkeypatch.setenv("P2SIM_PROGRESS_S", "0.01")

    # issue 34: 2:1 ECMP against adaptive routing.  At 256 nodes its estimate was once 142 s (ECMP's GPU-steps at
    # adaptive's cost, though hashed routes leave no two groups alike) and it ran > 8 min; its bounded search is
    # now counted as its bounds build it (every ECMP group a collective of its own), and at 1,024 nodes the search
    # must not start (it would take minutes before it could fail; at 512 nodes it now runs in about 4.5 min)
    def no_search(*args, **kwargs):
        raise AssertionError("the search started")

    monkeypatch.setattr(whatif, "run_searches", no_search)
    # on a loaded machine the count of programs takes long enough for a progress line before the refusal
    monkeypatch.setenv("P2SIM_PROGRESS_S", "3600")
    line = refused(capsys, "whatif", "--system", "roce-h100", "--nodes", "1024", "--axes", "data=256,pipeline=4,tensor=8",
                   "--reduce", "data", "--bytes", "4GiB", "--vary", "routing=ecmp,adaptive", "--workers", "1",
                   says=("job: whatif on roce-h100 over 2 points (1024 nodes at the largest) would take about 485 s "
                         "of CPU time", "2,373,182 collectives built", "more than the limit of 300 "
                         "s; fewer --vary values, fewer --nodes or a smaller --max-size make it smaller, --yes runs "
                         "it anyway"))
    assert line.startswith("p2sim whatif: error: job: ")


def test_plan_and_whatif_announce_their_estimate(capsys):
    # the figure a job that starts is to answer within (before, only rank's, plan's and whatif's refusals had it)
    for argv in (("plan", "--system", "a100", "--axes", "2,16", "--reduction", "0:1GiB", "--reduction", "1:1MiB"),
                 ("whatif", "--system", "h100", "--vary", "nic.bandwidth=25,50")):
        rc, out, err = run(capsys, *argv, "--workers", "1")
        assert rc == 0, err
        assert err.splitlines()[0].endswith(" in this process, estimated under 1 s of CPU and 100 MiB of memory"), err


def test_whatif_varies_a_target_once(capsys):
    refused(capsys, "whatif", "--vary", "nodes=2", "--vary", "nodes=4", says=("vary: nodes is varied twice",))
    refused(capsys, "whatif", "--vary", "nic.bandwidth=8,8", says=("vary: nic.bandwidth lists the value 8 twice",))


def test_whatif_queue_pairs_are_refused_outside_their_range_and_transport(capsys):
    refused(capsys, "whatif", "--system", "roce-h100", "--vary", "qps_per_connection=0,4",
            says=("--vary: qps_per_connection: 0 must be a whole number in 1..128", "NCCL_IB_QPS_PER_CONNECTION"))
    refused(capsys, "whatif", "--system", "a100", "--vary", "qps_per_connection=2",
            says=("--vary: qps_per_connection: a100 has no [fabric]",))


def test_whatif_matrix_and_program_are_refused_as_simulate_refuses_them(capsys):
    whatif = ("whatif", "--system", "h100", "--nodes", "2", "--vary", "nic.bandwidth=25")
    refused(capsys, *whatif, "--axes", "16", "--matrix", "[[4 8]]",
            says=("matrix: [[4 8]] row 0 multiplies to 32, not axis size 16",))
    refused(capsys, *whatif, "--axes", "2,8", "--program", "AllReduce(slice=0, Inside)",
            says=("matrix: axes 2,8 have 2 matrices; a --program needs one", '"[[2 1] [1 8]]"'))
    refused(capsys, *whatif, "--axes", "2,8", "--matrix", "[[2 1] [1 8]]", "--program", "AllReduce(slice=1, Inside)",
            says=("program: slice 1 of AllReduce(slice=1, Inside)",))


@pytest.mark.parametrize(("argv", "says"), [
    (["simulate", "--system", "dgx-h100", "--algo", "collnet_direct"], ("collnet_direct", "no SHARP tier")),
    (["simulate", "--system", "dgx-a100", "--algo", "nvls"], ("nvls cannot run on dgx-a100", "ampere")),
    (["sweep", "--system", "dgx-a100", "--algo", "nvls"], ("nvls", "ampere")),
    (["sweep", "--system", "dgx-h100", "--nodes", "2", "--algo", "collnet"], ("collnet", "no SHARP tier")),
    (["sweep", "--system", "h100", "-C", "AllGather", "--algo", "tree"], ("runs AllReduce only", "not AllGather")),
    (["sweep", "--system", "h100", "--nodes", "1", "--algo", "nvls_tree"], ("nvls_tree", "1 node here")),
    (["sweep", "--system", "h100", "--nodes", "1", "--algo", "nvls", "--proto", "LL"], ("Simple protocol only",)),
    (["rank", "--system", "dgx-a100", "--algo", "nvls"], ("nvls", "ampere")),
    (["plan", "--system", "dgx-h100", "--algo", "collnet_chain", "--reduction", "0:1GiB"], ("no SHARP tier",)),
    (["whatif", "--system", "h100", "--algo", "nvls_tree", "--vary", "nodes=1,2"], ("nvls_tree", "1 node here")),
    (["check", "--system", "dgx-a100", "--algo", "nvls"], ("nvls", "ampere")),
    (["simulate", "--system", "h100", "--nodes", "2", "--algo", "nvls"],
     ("nvls cannot run step 1 AllReduce(slice=0, Inside)", "spans 2 nodes")),
    (["simulate", "--system", "superpod-h100", "--nodes", "2", "--algo", "collnet_direct"],
     ("collnet_direct cannot run step", "lies in one node")),
    (["simulate", "--system", "h100", "--nodes", "1", "--algo", "tree",
      "--program", "ReduceScatter(slice=0, Inside) ; AllGather(slice=0, Inside)"],
     ("tree runs none of the program's collectives (ReduceScatter, AllGather)",)),
])
def test_a_forced_algorithm_that_cannot_run_is_refused(capsys, argv, says):
    """NCCL refuses an NCCL_ALGO it cannot honour ("no algorithm/protocol available"): so does every command
    that takes --algo, before simulating, saying why (it used to print a ring's time)."""
    refused(capsys, *argv, says=("algo: ",) + says)


def test_a_forced_row_that_cannot_run_is_refused_with_its_line(capsys, tmp_path):
    src = Path(__file__).resolve().parents[1] / "validation" / "collectives" / "nccl_tests_dev.csv"
    lines = src.read_text().splitlines()
    (tmp_path / "m.csv").write_text(lines[0] + "\n" + next(x for x in lines if x.startswith("23,")) + "\n")
    (tmp_path / "m.systems.csv").write_text("id,system,hca,algo,note\n23,dgx-a100,,nvls,\n")  # NVLS on an A100
    refused(capsys, "validate", "--measurements", str(tmp_path / "m.csv"), "--workers", "1", "-q",
            says=(f"{tmp_path / 'm.csv'}:2: algo: nvls cannot run AllReduce over 8 GPUs on dgx-a100", "ampere"))


@pytest.mark.parametrize("argv", [
    ["rank", "--system", "superpod-h100", "--nodes", "248"],
    ["plan", "--system", "gb200-nvl72-pod", "--nodes", "20", "--reduction", "0:1GiB"],
    ["whatif", "--system", "gb200-nvl72-pod", "--vary", "nodes=16,20"],
    ["check", "--system", "gb200-nvl72-pod", "--nodes", "20"],
])
def test_placements_on_a_partial_last_unit_are_refused_with_the_way_out(capsys, argv):
    """sweep, simulate and check --matrix run on a partial last scalable unit (tests/test_size_sweep.py); a search
    over placements puts axes on whole units and says so."""
    refused(capsys, *argv, says=("nodes: ", "is not a whole number of the leaf tier's groups", "the last has",
                                 "sweep, simulate, and check with --matrix, run on any node count"))


ROCE_WHATIF = ("whatif", "--system", "roce-h100", "--nodes", "16", "--axes", "data=128", "--reduce", "data",
               "--bytes", "1GiB")


@pytest.mark.parametrize(("vary", "says"), [
    ("leaf.oversubscription=inf", "inf must be a number in [0.000976562, 1024]"),  # was a ZeroDivisionError
    ("leaf.oversubscription=1e-300", "1e-300 must be a number"),  # was an OverflowError
    ("leaf.oversubscription=1e300", "1e+300 must be a number"),  # was a time of 300 digits
    ("leaf.oversubscription=nan", "nan must be a number"),
    ("leaf.oversubscription=0", "0.0 must be a number"),
    ("leaf.oversubscription=0.001", "=0.001 gives each leaf group 16,000 uplink ports"),
    ("leaf.uplinks=65", "=65 gives each leaf group 65 uplink ports of 25 GB/s for the 8 NICs under it, above the "
                        "bound of 64"),
    ("leaf.uplinks=2.5", "2.5 must be a whole number"),
    ("leaf.nodes=1e12", "1e+12 must be a whole number in 1..16384 (nodes)"),
    ("leaf.bandwidth=0.001", "=0.001 gives each leaf group 200,000 uplink ports"),
    ("nic.bandwidth=1e-9", "1e-09 GB/s is not a real link's rate (between 0.001 and 1e+06)"),
    ("nic.bandwidth=inf", "inf GB/s is not a real link's rate"),
    ("nic.bandwidth=-1", "-1.0 must be positive"),
    ("nic.latency=inf", "inf must be a finite number >= 0"),
    ("nic.latency=nan", "nan must be a finite number >= 0"),
    ("nic.latency=1e300", "1e+300 us is more than a second per traversal"),
    ("node3.nvswitch.bandwidth=1e-9", "1e-09 GB/s is not a real link's rate"),  # predicted 3.4e9 s
    ("node3.nic0.bandwidth=1e300", "1e+300 GB/s is not a real link's rate"),
    ("node3.speed=1e-9", "1e-09 makes the node's 50 GB/s links 5e-08 GB/s, not a real link's rate"),
    ("node3.speed=inf", "inf must be a factor in (0, 1000]"),
    ("node3.speed=0", "0.0 must be positive"),
    ("leaf2.uplinks=0.5", "0.5 must be a whole number in 1..8 (uplink ports of the group, which has 8)"),
    ("leaf2.uplinks=9", "9 must be a whole number in 1..8"),
    ("nodes=1e300", "1e+300 must be a whole number in 1..16384 (nodes)"),
    ("nodes=0", "0 must be a whole number in 1..16384"),
])
def test_vary_values_obey_the_ranges_of_the_system_files_fields(capsys, vary, says):
    target = vary.split("=")[0]
    line = refused(capsys, *ROCE_WHATIF, "--vary", vary, says=(f"error: --vary: {target}", says))
    assert "roce-h100.toml" not in line


def test_absurd_sizes(capsys):
    refused(capsys, "placements", "--hierarchy", "1000000007,1000000009", "--axes", "1000000007,1000000009",
            says=("hierarchy:", "2^24"))
    refused(capsys, "topo", "a100", "--nodes", "100000000", says=("nodes",))


# ---------------------------------------------------------------- item 4: validation inputs

def test_emulated_logs_are_refused_by_calibrate_and_flagged_by_validate(capsys, tmp_path):
    ar = "AllReduce(slice=0, Inside)"
    log = log_records(tmp_path / "emu.jsonl", [program_record(ar, 1e-3, emulated=True, iteration=i) for i in range(2)])
    refused(capsys, "calibrate", "--measurements", str(log), "--system", "a100", "--out", str(tmp_path / "c.toml"),
            says=(f"{log}:1: emulated:", "--backend numpy", "--allow-emulated"))
    refused(capsys, "validate", "--measurements", str(DATA), "--calibrate-on", str(log),
            says=(f"{log}:1: emulated:",))
    rc, out, err = run(capsys, "validate", "--measurements", str(log), "--workers", "1")
    assert rc == 0 and f"WARNING {log}:1: 1 row of this file timed bench_nccl's CPU emulation" in out
    rc, out, err = run(capsys, "validate", "--measurements", str(log), "--workers", "1", "--json")
    assert rc == 0 and json.loads(out)["warnings"] and "warning:" in err
    rc, out, err = run(capsys, "validate", "--measurements", str(log), "--workers", "1", "--allow-emulated")
    assert rc == 0 and "WARNING" not in out and "warning" not in err
    # a sweep log's emulated rows carry bench_nccl's name for the numpy backend
    from bench_nccl.backends import NumpyBackend
    from p2sim.measurements.emulated import EMULATED_GPU, is_emulated
    from p2sim.measurements.sweep_log import read_sweep_log

    assert NumpyBackend(0, 1, 0, None, 1.0).versions()["gpu_name"] == EMULATED_GPU

    sweep = log_records(tmp_path / "sweep.jsonl", [{
        "kind": "sweep", "collective": "AllReduce", "size": 4096, "count": 1024, "in_place": False, "seconds": 1e-4,
        "wrong": 0, "ranks": 2, "nodes": 1, "gpus_per_node": 2, "system": "h100", "algo": "auto",
        "gpu_name": "cpu (numpy emulation)", "emulated": True}])
    assert all(is_emulated(r) for r in read_sweep_log(sweep))


def test_log_programs_are_parsed(capsys, tmp_path):
    log = log_records(tmp_path / "a2a.jsonl", [program_record("AllReduce(slice=0, Inside)", 1.0),
                                               program_record("AllToAll(slice=0, Inside)", 0.5)])
    refused(capsys, "validate", "--measurements", str(log),
            says=(f"{log}:2: program: 'AllToAll(slice=0, Inside)': AllToAll in 'AllToAll(slice=0, Inside)' is not a "
                  "reduction",))
    log = log_records(tmp_path / "bad.jsonl", [program_record("AllReduce(slice=3, Inside)", 1.0)])
    refused(capsys, "validate", "--measurements", str(log), says=(f"{log}:1: program:",))
    # any spelling the parser accepts is the same program
    from p2sim.measurements.program_rows import load_measurements

    log = log_records(tmp_path / "case.jsonl", [program_record("AllReduce(slice=0, Inside)", 1.0),
                                                program_record("allreduce(0, inside)", 3.0)])
    (row,) = load_measurements(log)
    assert row.programs == (("AllReduce(slice=0, Inside)", 2.0),)


def test_duplicate_rows(capsys, tmp_path):
    lines = DATA.read_text().splitlines()
    f = tmp_path / "dup.csv"
    # the same row twice: counted once, with a warning naming both lines
    f.write_text("\n".join([lines[0], lines[1], lines[2], lines[1]]) + "\n")
    rc, out, err = run(capsys, "validate", "--measurements", str(f), "--workers", "1", "--json")
    assert rc == 0, err
    assert f"{f}:4: repeats line 2" in err and "counted once" in err
    assert len(json.loads(out)["rows"]) == 2
    # the same configuration with other figures: refused, both places named
    other = lines[1].replace("4.74,3.18,1.49", "4.74,3.10,1.53", 1)
    assert other != lines[1]
    f.write_text("\n".join([lines[0], lines[1], lines[2], other]) + "\n")
    refused(capsys, "validate", "--measurements", str(f),
            says=(f"{f}:4: row: measures the same configuration as line 2", "with other figures"))
    d = tmp_path / "two"
    d.mkdir()
    (d / "a.csv").write_text(DATA.read_text())
    (d / "b.csv").write_text(DATA.read_text())
    rc, out, err = run(capsys, "validate", "--measurements", str(d), "--workers", "1", "--json")
    assert rc == 0 and f"{d / 'b.csv'}:2: repeats {d / 'a.csv'}:2" in err
    assert len(json.loads(out)["rows"]) == len(lines) - 1
    rec = program_record("AllReduce(slice=0, Inside)", 1.0, run_id="r1", iteration=0)
    log = log_records(tmp_path / "twice.jsonl", [rec, rec])
    (row,) = load_measurements(log)
    assert row.programs == (("AllReduce(slice=0, Inside)", 1.0),)
    log = log_records(tmp_path / "differ.jsonl", [rec, dict(rec, seconds=2.0)])
    refused(capsys, "validate", "--measurements", str(log),
            says=(f"{log}:2: iteration: 0 of run 'r1'", "already on line 1 with 1.0 s, here 2.0 s"))


def test_speedup_must_follow_from_the_times(capsys, tmp_path):
    f = tmp_path / "m.csv"
    f.write_text(DATA.read_text().replace("4.74,3.18,1.49", "4.74,3.18,1.26", 1))
    refused(capsys, "validate", "--measurements", str(f),
            says=(f"{f}:2: speedup: 1.26 is not allreduce_s / optimal_s = 4.74 / 3.18 = 1.49",))


@pytest.mark.parametrize(("old", "new", "says"), [
    ("4.74,3.18,1.49", "3.18,4.74,1.49", ":2: optimal_s: 4.74 s is slower than allreduce_s 3.18 s"),
    ("4.74,3.18,1.49", "4.74,0,1.49", ":2: optimal_s: '0' must be positive"),
    ("4.74,3.18,1.49", "-1,3.18,1.49", ":2: allreduce_s: '-1' must be positive"),
    ("4.74,3.18,1.49", "4.74,3.18,0.9", ":2: speedup: 0.9 is below 1"),
    ("1.49,9,47", "1.49,-1,47", ":2: programs_better: -1 is negative"),
    ("1.49,9,47", "1.49,48,47", ":2: programs_better: 48 is more than programs_total 47"),
    ("1.49,9,47", "1.49,0,0", ":2: programs_total: 0 is below 1: the AllReduce is always one of the programs"),
    ("1.49,9,47", "1.49,0,-2", ":2: programs_total: -2 is below 1"),
    ("1.49,9,47", "1.49,9,4x", ":2: programs_total: '4x' is not a whole number"),
])
def test_impossible_rows(capsys, tmp_path, old, new, says):
    f = tmp_path / "m.csv"
    f.write_text(DATA.read_text().replace(old, new, 1))
    refused(capsys, "validate", "--measurements", str(f), says=(str(f) + says,))
    log = log_records(tmp_path / "t.jsonl", [program_record("AllReduce(slice=0, Inside)", 0.0)])
    refused(capsys, "validate", "--measurements", str(log), says=(f"{log}:1: seconds: 0.0 must be positive",))


def test_system_file_fields(capsys, tmp_path):
    text = Path(__file__).resolve().parents[1].joinpath("topologies", "a100.toml").read_text()
    f = tmp_path / "s.toml"
    f.write_text(text.replace("memory_gib = 40", "memory_gib = -1"))
    refused(capsys, "topo", str(f), says=(f"{f}: gpu.memory_gib: -1",))
    f.write_text("typo_key = 1\n" + text)
    refused(capsys, "topo", str(f), says=(f"{f}: typo_key: unknown top-level key",))


# ---------------------------------------------------------------- item 5: answers a person can read

def test_default_buffer_beyond_gpu_memory_is_a_warning(capsys):
    one = ["simulate", "--system", "a100", "--nodes", "32", "--axes", "512", "--program", "AllReduce(slice=0, Inside)",
           "--engine", "analytic"]
    rc, out, err = run(capsys, *one)
    assert rc == 0 and err.strip() == (
        "p2sim simulate: warning: the default buffer (P2's 2^29 x 32 nodes float32) of 64 GiB per GPU exceeds the "
        "40 GiB of GPU memory of a100 ([gpu] memory_gib): no real GPU holds it; give --bytes")
    rc, out, err = run(capsys, *one, "--bytes", "1GiB")
    assert rc == 0 and err == ""


def test_axis_names_reach_every_answer(capsys):
    named = ["--system", "a100", "--axes", "data=4,tensor=8", "--reduce", "data"]
    rc, out, _ = run(capsys, "rank", *named, "--engine", "analytic", "--workers", "1")
    assert rc == 0 and "axes data=4 tensor=8 reduce data;" in out
    assert "optimises the reduction over data only: the traffic of tensor is not counted" in out
    assert "matrix rows: data, tensor (axes); columns: node, gpu (levels, outermost first)" in out
    assert "best placement [[1 4] [2 4]]: data: 4 GPUs inside a node; tensor: 2 nodes x 4 GPUs" in out
    rc, out, _ = run(capsys, "rank", *named, "--engine", "analytic", "--workers", "1", "--json")
    doc = json.loads(out)
    assert doc["axis_names"] == ["data", "tensor"] and doc["level_names"] == ["node", "gpu"]
    assert doc["best_placement"]["placement"] == "data: 4 GPUs inside a node; tensor: 2 nodes x 4 GPUs"
    rc, out, _ = run(capsys, "rank", *named, "--engine", "analytic", "--workers", "1", "--emit", "torch")
    assert "MESH_AXES = ('tensor_node', 'data_gpu', 'tensor_gpu')" in out and "def reduce_data(x):" in out
    rc, out, _ = run(capsys, "plan", "--system", "a100", "--axes", "data=2,tensor=16", "--reduction", "data:1GiB",
                     "--reduction", "tensor:1MiB x 4", "--data-axis", "data", "--engine", "analytic", "--workers", "1")
    assert rc == 0 and "reductions: axes data 1 GiB x 1; axes tensor 1 MiB x 4" in out
    refused(capsys, "rank", "--system", "a100", "--axes", "data=4,8", says=("axes: name every axis",))
    refused(capsys, "rank", *named[:4], "--reduce", "pipeline",
            says=("reduce: 'pipeline' is neither an axis index nor an axis name (data, tensor)",))
    refused(capsys, "rank", "--system", "a100", "--axes", "data=4,data=8", says=("given twice",))



def test_emit_megatron_refuses_axes_it_has_no_dimension_for_before_any_work(capsys):
    # one line on stderr: the ranking's progress line (stderr, no -q) never came
    job = ["--system", "dgx-h100", "--nodes", "2", "--engine", "analytic", "--workers", "1", "--emit", "megatron"]
    refused(capsys, "rank", *job, "--axes", "data=2,batch=8", "--reduce", "data",
            says=("emit megatron: axes: no Megatron-LM dimension is named batch",))
    refused(capsys, "plan", *job, "--axes", "2,8", "--reduction", "0:1GiB",
            says=("emit megatron: axes: no Megatron-LM dimension is named axis0",))
    refused(capsys, "rank", *job, "--axes", "expert=2,context=2,tensor=4", "--reduce", "expert",
            says=("emit megatron: axes expert=2,context=2,tensor=4: Megatron-LM folds expert parallelism",))
    refused(capsys, "rank", *job, "--axes", "data=2,tensor=8", "--reduce", "data", "--json",
            says=("emit: --emit replaces the table and --json",))

# ---------------------------------------------------------------- outputs never replace inputs

def _same_file_spellings(tmp_path: Path, monkeypatch, f: Path) -> list[str]:
    """``f`` as the user may name it: absolute, ./relative, through a symbolic link."""
    monkeypatch.chdir(tmp_path)
    link = tmp_path / "link.csv"
    link.symlink_to(f)
    return [str(f), f"./{f.name}", f"sub/../{f.name}", str(link)]


def test_validate_csv_never_replaces_its_measurements(capsys, no_work, tmp_path, monkeypatch):
    f = tmp_path / "m.csv"
    f.write_text(DATA.read_text())
    (tmp_path / "sub").mkdir()
    for spelling in _same_file_spellings(tmp_path, monkeypatch, f):
        refused(capsys, "validate", "--measurements", "m.csv", "--csv", spelling,
                says=("csv:", "an input (--measurements)", "--force"))
        refused(capsys, "validate", "--measurements", str(tmp_path), "--csv", spelling,
                says=("csv:", "an input (--measurements)"))
        assert f.read_text() == DATA.read_text()


def test_every_output_option_refuses_an_input(capsys, no_work, tmp_path, monkeypatch):
    mine = tmp_path / "mine.toml"
    mine.write_text(Path(__file__).resolve().parents[1].joinpath("topologies", "a100.toml").read_text())
    log = tmp_path / "log.txt"
    log.write_text("# nccl-tests\n")
    sim = ["simulate", "--system", str(mine), "--axes", "32", "--program", "AllReduce(slice=0, Inside)"]
    refused(capsys, *sim, "--trace", str(mine), says=("trace:", "an input (--system)"))
    refused(capsys, "check", str(log), "--system", "a100", "--axes", "32", "--csv", str(log),
            says=("csv:", "an input (LOG)"))
    refused(capsys, "validate", "--measurements", str(DATA), "--calibrate-on", str(tmp_path), "--csv", str(log),
            says=("csv:", "an input (--calibrate-on)"))
    # a system given by name is its catalogue file
    from p2sim.topology import system_paths

    monkeypatch.setenv("P2SIM_TOPOLOGIES", str(tmp_path))
    assert system_paths()["mine"] == mine
    refused(capsys, "simulate", "--system", "mine", "--axes", "32", "--program", "AllReduce(slice=0, Inside)",
            "--trace", str(mine), says=("trace:", "an input (--system)"))
    assert mine.read_text() == Path(__file__).resolve().parents[1].joinpath("topologies", "a100.toml").read_text()


def test_force_lets_an_output_replace_an_input(capsys, tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text(Path(__file__).resolve().parents[1].joinpath("topologies", "a100.toml").read_text())
    rc, out, err = run(capsys, "simulate", "--system", str(mine), "--axes", "32", "--program",
                       "AllReduce(slice=0, Inside)", "--trace", str(mine), "--force")
    assert rc == 0, err
    assert json.loads(mine.read_text())["traceEvents"]


def test_bench_nccl_log_never_appends_to_its_system_file(capsys, tmp_path, monkeypatch):
    import bench_nccl.cli as cli

    def no_launch(*args, **kwargs):
        raise AssertionError("ranks launched before the log was checked")

    monkeypatch.setattr(cli, "launch_local", no_launch)
    text = Path(__file__).resolve().parents[1].joinpath("topologies", "h100.toml").read_text()
    mine = tmp_path / "mine.toml"
    mine.write_text(text)
    monkeypatch.chdir(tmp_path)
    for argv in (["run", "--axes", "16"], ["sweep"]):
        rc = bench_main([*argv, "--system", str(mine), "--backend", "numpy", "--log", "./mine.toml"])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "log: mine.toml is" in err[0] and "an input (--system)" in err[0], err
    assert mine.read_text() == text


@pytest.mark.parametrize("argv, says", [
    (["--axes", "data=2,foo=8"], ("axes: 'foo' is not an axis a training step uses with --model",)),
    (["--axes", "2,8"], ("axes: --model needs the job's axes named, and --axes gave sizes only",
                         "e.g. --axes data=2,tensor=8")),
    (["--axes", "data=2,tensor=8", "--train", "seq=8192,micro=2"], ("train: 'micro' is not a training setting",)),
    (["--axes", "data=2,tensor=8", "--train", "sp=maybe"], ("train: sp: 'maybe' should be on or off",)),
    (["--axes", "data=2,tensor=8", "--train", "tp_overlap=on"],
     ("train: tp_overlap: on needs sequence parallelism (sp=on) and tensor > 1", "tensor=8, sp off")),
    (["--axes", "data=2,tensor=8", "--train", "schedule=interleaved"], ("train: schedule: interleaved",)),
    (["--axes", "data=2,tensor=8", "--compute-per-layer", "soon"], ("compute-per-layer",)),
    (["--axes", "data=16,tensor=1", "--train", "global_batch=24"], ("train: global_batch: 24 should be a multiple",)),
    # sizes no step has, refused as --bytes refuses one above 1 PiB (they were ranked, or an OverflowError)
    (["--axes", "data=2,tensor=8", "--train", "seq=1000000000000000"],
     ("llama3-8b: the step's AllReduce over tensor", "more than 1 PiB", "seq_length=1000000000000000")),
    (["--axes", "data=2,tensor=8", "--train", "global_batch=100000000000000000000"],
     ("train: global_batch: 100000000000000000000 is more than 2^50",)),
    # an added reduction is not part of the step plan --model --axes ranks by (its time): refused, whatever it is
    (["--axes", "data=2,tensor=8", "--reduction", "data:1GiB x 1" + "0" * 400],
     ("reduction: with --model the placements are ranked by the model's step",)),
    (["--axes", "data=2,tensor=8", "--compute-per-layer", "1e300"], ("compute-per-layer: 1e+300 s is more than 10^6 s",)),
])
def test_plan_model_inputs(capsys, argv, says):
    """plan --model: each bad axis name, training setting or compute time is one line, exit 2, before any work."""
    refused(capsys, "plan", "--system", "dgx-h100", "--model", "llama3-8b", *argv, says=says)


def test_plan_reduction_count_past_a_pib_is_refused(capsys):
    """A 401-digit count (an OverflowError once): one line, as --bytes above 1 PiB is."""
    refused(capsys, "plan", "--system", "dgx-h100", "--axes", "data=2,tensor=8", "--reduction",
            "data:1GiB x 1" + "0" * 400, says=("reduction: 1 GiB x a 401-digit number is more than 1 PiB in one step",))


def test_plan_model_without_axes_searches_the_configuration_on_the_systems_nodes(capsys):
    """No --axes, what a newcomer types first: once blamed on 'axis0', an axis the user never typed; now the
    configuration search, on the system file's node count as every command's --nodes."""
    rc, out, err = run(capsys, "plan", "--system", "dgx-h100", "--model", "llama3-8b", "--top", "1")
    assert rc == 0 and "Traceback" not in err and "axis0" not in out + err
    assert "llama3-8b on 16 GPUs of dgx-h100" in out and "best: " in out


def test_train_needs_a_model(capsys):
    refused(capsys, "plan", "--system", "dgx-h100", "--axes", "data=2,tensor=8", "--reduction", "data:1GiB",
            "--train", "seq=8192", says=("train: describes the training step of a --model",))


@pytest.mark.parametrize("argv, says", [
    # issue 44: a model's whole step is plan's question; rank refuses it when its request is built, pointing there
    (["--model", "llama3-8b"], ("model: rank ranks the programs of one reduction (--reduce, --bytes); a model's "
                                "whole step is p2sim plan's question: give the same options to p2sim plan --model",)),
    (["--model", "llama3-8b", "--reduce", "tensor"], ("model: rank ranks the programs of one reduction",)),
    (["--model", "llama3-8b", "--train", "zero=7"], ("model: rank ranks the programs of one reduction",)),
    (["--train", "seq=8192"], ("train: describes the training step of a --model",)),
    (["--compute-per-layer", "0.01"], ("compute-per-layer: describes the training step of a --model",)),
])
def test_rank_model_inputs(capsys, argv, says):
    """rank --model is refused, one line pointing to plan --model, exit 2, before any work; --train and
    --compute-per-layer without it are refused as before."""
    args = ["--axes", "data=2,tensor=8"] if "--axes" not in argv else []
    refused(capsys, "rank", "--system", "dgx-h100", *args, *argv, says=says)


@pytest.mark.parametrize("argv, says", [
    (["--model", "llama3-8b", "--reduce", "tensor"], ("reduce: with --model the step's collectives say what is reduced",)),
    (["--model", "llama3-8b", "--bytes", "1GiB"], ("bytes: with --model",)),
    (["--model", "llama3-8b", "--program", "AllReduce(slice=0, Inside)"], ("program: with --model",)),
    (["--model", "llama3-8b", "--out", "somewhere"], ("out: whatif --model writes no page",)),
    (["--model", "llama3-8b", "--train", "zero=7"], ("train: zero: '7' should be 0, 1, 2 or 3",)),
    (["--model", "llama3-8b", "--axes", "data=2,foo=8"], ("axes: 'foo' is not an axis a training step uses",)),
    (["--model", "no-such-model"], ("model: 'no-such-model' is neither a preset",)),
    (["--train", "seq=8192"], ("train: describes the training step of a --model",)),
    (["--compute-per-layer", "0.01"], ("compute-per-layer: describes the training step of a --model",)),
])
def test_whatif_model_inputs(capsys, argv, says):
    """whatif --model: the options the step decides, and each bad setting, are one line, exit 2, before any work."""
    args = ["--axes", "data=2,tensor=8"] if "--axes" not in argv else []
    refused(capsys, "whatif", "--system", "dgx-h100", "--nodes", "2", "--vary", "nic.bandwidth=25,50", *args, *argv,
            says=says)


@pytest.mark.parametrize("argv, says", [
    (["--model", "llama3-8b", "--reduce", "tensor"], ("reduce: with --model the step's collectives say what is reduced",)),
    (["--model", "llama3-8b", "--bytes", "1GiB"], ("bytes: with --model",)),
    (["--model", "llama3-8b", "--matrix", "[[2 1] [1 8]]", "--program", "AllReduce(slice=0, Inside)"],
     ("program: with --model",)),
    (["--model", "llama3-8b", "--train", "zero=7"], ("train: zero: '7' should be 0, 1, 2 or 3",)),
    (["--model", "llama3-8b", "--axes", "data=2,foo=8"], ("axes: 'foo' is not an axis a training step uses",)),
    (["--train", "seq=8192"], ("train: describes the training step of a --model",)),
    (["--compute-per-layer", "0.01"], ("compute-per-layer: describes the training step of a --model",)),
])
def test_check_model_inputs(capsys, argv, says):
    """check --model: the options the step decides, and each bad setting, are one line, exit 2, before any work."""
    args = ["--axes", "data=2,tensor=8"] if "--axes" not in argv else []
    refused(capsys, "check", "--system", "dgx-h100", "--nodes", "2", *args, *argv, says=says)


# ---------------------------------------------------------------- every input option: files, looked at first

def _model_copy(tmp_path: Path, name: str) -> Path:
    from p2sim.workload.model_files import preset_path

    f = tmp_path / name
    f.write_text(preset_path("llama3-8b").read_text())
    return f


def test_csv_never_replaces_the_model_it_reads(capsys, no_work, tmp_path, monkeypatch):
    f = _model_copy(tmp_path, "m.csv")  # a config.json by any name is read as one
    text = f.read_text()
    (tmp_path / "sub").mkdir()
    job = ["--system", "dgx-h100", "--nodes", "2", "--axes", "data=2,tensor=8"]
    for spelling in _same_file_spellings(tmp_path, monkeypatch, f):
        for command in ("plan", "rank", "whatif", "check"):
            refused(capsys, command, *job, "--model", "m.csv", "--csv", spelling,
                    says=("csv:", "an input (--model)", "--force"))
    assert f.read_text() == text


def test_an_input_that_is_no_regular_file_is_refused_before_it_is_opened(capsys, no_work, tmp_path):
    fifo = tmp_path / "m.json"
    os.mkfifo(fifo)  # nobody writes it: opening it would block for ever
    job = ["--system", "dgx-h100", "--nodes", "2", "--axes", "data=2,tensor=8"]
    refused(capsys, "plan", *job, "--model", str(fifo), says=(str(fifo), "is a pipe, not a regular file"))
    refused(capsys, "check", str(fifo), "--system", "a100", "--axes", "32",
            says=(str(fifo), "is a pipe, not a regular file"))
    refused(capsys, "rank", "--system", "a100", "--axes", "32", "--scheduler-file", str(fifo),
            says=(str(fifo), "is a pipe, not a regular file"))
    refused(capsys, "simulate", "--system", "/dev/null", "--axes", "32", says=("/dev/null: is a device",))
    refused(capsys, "plan", *job, "--model", "/dev/zero", says=("/dev/zero: is a device",))


@pytest.mark.parametrize("argv, says", [
    (["plan", "--system", "dgx-h100", "--axes", "data=2,tensor=8", "--nodes", "2", "--model", ""],
     ("model: --model '' is empty",)),
    (["validate", "--measurements", ""], ("measurements: --measurements '' is empty",)),
    (["check", "", "--system", "a100", "--axes", "32"], ("logs: LOG '' is empty",)),
    (["simulate", "--system", " ", "--axes", "32"], ("system: --system ' ' is empty",)),
    (["rank", "--system", "a100", "--axes", "32", "--scheduler-file", ""], ("scheduler-file: --scheduler-file '' is empty",)),
])
def test_an_empty_input_name_is_refused_as_empty(capsys, no_work, argv, says):
    """``Path("")`` is the current directory: an empty value was read as one (``.: is a directory``)."""
    refused(capsys, *argv, says=says)


@pytest.mark.parametrize("argv, says", [
    (["--axes", "data=2,tensor=8", "--reduce", "data", "--vary", "nodes=2,3"],
     ("axes: the product of 2,8 is 16, but the hierarchy 3,8 has 24 devices (at the --vary point nodes=3)",)),
    (["--axes", "data=2,tensor=8", "--model", "llama3-8b", "--vary", "nodes=2,3"],
     ("(at the --vary point nodes=3)",)),
    (["--axes", "data=*,tensor=16", "--reduce", "data", "--vary", "nodes=2,3"],
     ("reduce: the reduction axes have size 1, so there is nothing to reduce (at the --vary point nodes=2)",)),
    (["--axes", "data=*,tensor=8", "--reduce", "data", "--matrix", "[[2 1] [1 8]]", "--vary", "nodes=2,4"],
     ("matrix: [[2 1] [1 8]] row 0 multiplies to 2, not axis size 4 (at the --vary point nodes=4)",)),
])
def test_a_whatif_point_the_axes_do_not_fit_is_named(capsys, argv, says):
    refused(capsys, "whatif", "--system", "dgx-h100", *argv, says=says)


@pytest.mark.parametrize("argv, says", [
    (["plan", "--model", "llama3-8b", "--axes", "data=2,tensor=8", "--train", ""], ("train: '' gives no setting",)),
    (["plan", "--model", "llama3-8b", "--axes", "data=2,tensor=8", "--train", " , "], ("train: ' , ' gives no setting",)),
    (["whatif", "--axes", "data=2,tensor=8", "--reduce", "data", "--matrix", "[[2 1] [1 8]]", "--program", "",
      "--vary", "nic.bandwidth=25,50"], ("program: '' has an empty instruction",)),
])
def test_an_empty_setting_is_refused_not_taken_as_the_default(capsys, no_work, argv, says):
    refused(capsys, argv[0], "--system", "dgx-h100", *argv[1:], says=says)


@pytest.mark.parametrize("name", ["deep.jsonl", "deep.json"])
def test_a_measurement_log_python_cannot_parse_is_one_line(capsys, tmp_path, name):
    f = tmp_path / name
    f.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n")  # a RecursionError traceback before
    refused(capsys, "validate", "--measurements", str(f), says=(f"{f}:1: record: not valid JSON (nested too deeply",))


def test_what_no_whatif_point_decides_is_refused_without_a_point(capsys, tmp_path):
    f = _model_copy(tmp_path, "m.json")
    f.write_text(f.read_text().replace('"hidden_size": 4096,', '"hidden_size": 4096, "head_dim": 0,'))
    job = ["whatif", "--system", "dgx-h100", "--axes", "data=*,tensor=8", "--vary", "nodes=2,4"]
    line = refused(capsys, *job, "--model", str(f), says=(f"{f}: head_dim: 0 should be a positive integer",))
    assert "--vary point" not in line
    line = refused(capsys, *job, "--model", "llama3-8b", "--train", "seq=x", says=("train: seq: 'x' should be",))
    assert "--vary point" not in line


def test_a_report_page_never_replaces_an_input_of_the_same_name(capsys, tmp_path):
    """--out DIR writes pages of fixed names; a --model file may have any name, plan.md too."""
    out = tmp_path / "out"
    out.mkdir()
    f = _model_copy(out, "plan.md")
    text = f.read_text()
    rc, stdout, err = run(capsys, "plan", "--system", "dgx-h100", "--nodes", "2", "--axes", "data=2,tensor=8",
                          "--engine", "analytic", "--workers", "1", "--model", str(f), "--out", str(out))
    lines = err.strip().splitlines()
    assert rc == 2 and "Traceback" not in err and f"out: {f} is {f}, an input (--model)" in lines[-1], err
    assert "the best placement" in stdout  # the answer stands
    assert f.read_text() == text and sorted(p.name for p in out.iterdir()) == ["plan.md"]
