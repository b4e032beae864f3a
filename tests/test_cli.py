from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from p2sim.cli import main
from p2sim.formalism.program import parse_program

from .conftest import config_of


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as e:  # argparse exits for usage errors and --help
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def test_synth_json_matches_every_appendix_row(capsys, count_row):
    h, axes, red = config_of(count_row)
    rc, out, _ = run(capsys, "synth", "--hierarchy", ",".join(map(str, h)), "--axes", ",".join(map(str, axes)),
                     "--reduce", ",".join(map(str, red)), "--profile", "paper", "--json")
    assert rc == 0
    doc = json.loads(out)
    assert len(doc["matrices"]) == int(count_row["matrices"])
    assert doc["total_programs"] == int(count_row["programs_total"])
    assert doc["total_programs"] == sum(len(m["programs"]) for m in doc["matrices"])


def test_synth_json_programs_parse_back(capsys):
    rc, out, _ = run(capsys, "synth", "--hierarchy", "4,16", "--axes", "4,16", "--reduce", "0",
                     "--matrix", "[[2 2] [2 8]]", "--profile", "full", "--json", "--lower")
    doc = json.loads(out)
    (m,) = doc["matrices"]
    assert m["matrix"] == [[2, 2], [2, 8]]
    assert len(m["programs"]) == 93
    for p in m["programs"]:
        assert parse_program(p["text"]).text == p["text"]
        assert len(p["steps"]) == len(parse_program(p["text"]))
    step = m["programs"][0]["steps"][0]
    assert step["op"] == "AllReduce" and step["group_size"] == 4
    assert len(step["devices"]) == 16  # 16 reduction groups of 4 devices each


def test_synth_table_and_placements(capsys):
    rc, out, _ = run(capsys, "synth", "--hierarchy", "2,16", "--axes", "2,16", "--reduce", "1")
    assert rc == 0 and "total: 50 programs over 2 matrices" in out
    rc, out, _ = run(capsys, "placements", "--hierarchy", "4,16", "--axes", "4,16", "--json")
    assert json.loads(out)["matrices"] == [[[1, 4], [4, 4]], [[2, 2], [2, 8]], [[4, 1], [1, 16]]]
    rc, out, _ = run(capsys, "placements", "--hierarchy", "4,16", "--axes", "4,16")
    assert "[[2 2] [2 8]]" in out


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["synth", "--hierarchy", "4,16", "--axes", "3,4"], "product"),
        (["synth", "--hierarchy", "4,16", "--axes", "8,8", "--reduce", "2"], "out of range"),
        (["synth", "--hierarchy", "4,16", "--axes", "8,x"], "not an integer"),
        (["synth", "--hierarchy", "4,16", "--axes", ""], "empty"),
        (["synth", "--hierarchy", "4,16", "--axes", "8,8", "--reduce", ""], "empty"),
        (["synth", "--hierarchy", "4,0"], "below 1"),
        (["synth", "--profile", "best"], "profile"),
        (["synth", "--max-size", "0"], "max-size"),
        (["synth", "--hierarchy", "4,16", "--axes", "4,16", "--matrix", "[[2 2] [1 8]]"], "matrix"),
        (["synth", "--unknown-flag"], "unrecognized"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(capsys, argv, msg):
    rc, out, err = run(capsys, *argv)
    assert rc != 0
    assert msg in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and out == ""


def test_console_entry_point_exit_status():
    r = subprocess.run([sys.executable, "-m", "p2sim", "synth", "--axes", "3,4"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.startswith("p2sim synth: error: axes:")


FULL = "/dev/full"


@pytest.mark.slow  # a p2sim subprocess per command
@pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full here")
@pytest.mark.parametrize("argv", [
    ["p2sim", "systems"],
    ["p2sim", "--help"],
    ["p2sim", "sweep", "-e", "1MiB", "--engine", "analytic", "--json"],
    ["p2sim", "sweep", "-e", "1MiB", "--engine", "analytic", "--csv", "-"],
    ["p2sim", "sweep", "--system", "dgx-h100", "-e", "1GiB", "--engine", "analytic", "--emit", "nccl-tuner"],
    ["p2sim", "rank", "--system", "a100", "--axes", "data=4,tensor=8", "--reduce", "data", "--engine", "analytic",
     "--workers", "1", "--emit", "jax", "-q"],
    ["bench_nccl", "summary", "LOG"],
])
def test_a_full_disk_behind_stdout_is_one_line(argv, tmp_path):
    log = tmp_path / "one.jsonl"
    log.write_text(json.dumps({"system": "a100", "nodes": 2, "axes": [2, 16], "reduce_axes": [1],
                               "matrix": [[1, 2], [2, 8]], "program": "AllReduce(slice=0, Inside)", "algo": "ring",
                               "bytes": 2**20, "backend": "nccl", "order": "aligned", "iteration": 0,
                               "seconds": 1.0, "pass": True}) + "\n")
    with open(FULL, "w") as full:
        r = subprocess.run([sys.executable, "-m", *(str(log) if a == "LOG" else a for a in argv)], stdout=full,
                           stderr=subprocess.PIPE, text=True)
    prog = argv[0] if argv[0] == "bench_nccl" or argv[1].startswith("-") else " ".join(argv[:2])
    assert r.returncode == 2 and r.stderr == f"{prog}: error: stdout: cannot write (No space left on device)\n", \
        r.stderr


def _close_stdout() -> None:
    os.close(1)  # as a shell's >&- does: Python then starts with sys.stdout None


@pytest.mark.parametrize("argv", [["p2sim", "systems"], ["p2sim", "--help"], ["p2sim", "nosuch"],
                                  ["p2sim", "placements", "--hierarchy", "2,4", "--axes", "8", "--json"],
                                  ["bench_nccl", "summary", "LOG"]])
def test_a_closed_stdout_is_refused_in_one_line_before_any_work(argv, tmp_path):
    r = subprocess.run([sys.executable, "-m", *(str(tmp_path / "no.jsonl") if a == "LOG" else a for a in argv)],
                       stderr=subprocess.PIPE, text=True, preexec_fn=_close_stdout)
    assert r.returncode == 2, r.stderr
    assert r.stderr.endswith("error: stdout: is closed (started with >&-?): the answer is printed there; send it to "
                             "a file (or to /dev/null to drop it)\n") and len(r.stderr.splitlines()) == 1, r.stderr


def test_stdout_failing_only_when_flushed_is_one_line(capsys, monkeypatch):
    """A file on a full disk takes writes into its buffer and fails when it is flushed: at the end of the
    command, not at the interpreter's exit (where Python prints "Exception ignored" and exits 120)."""
    import io

    class FullOnFlush(io.StringIO):
        def flush(self) -> None:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(sys, "stdout", FullOnFlush())
    rc = main(["placements", "--hierarchy", "2,4", "--axes", "8"])
    assert rc == 2
    assert capsys.readouterr().err == "p2sim placements: error: stdout: cannot write (No space left on device)\n"


# -- systems, topo, simulate -------------------------------------------------------

BLUE = "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"


def test_systems_and_topo(capsys, tmp_path):
    rc, out, _ = run(capsys, "systems", "--json")
    names = {s["name"] for s in json.loads(out)["systems"]}
    assert {"a100", "v100", "h100", "p2-16gpu"} <= names
    rc, out, _ = run(capsys, "topo", "v100", "--nodes", "4", "--json")
    doc = json.loads(out)
    assert doc["devices"] == 32 and doc["links"]["nic"]["directed_edges"] == 8
    assert doc["bisection_GBps"]["nodes"] == pytest.approx(16.0)
    png = tmp_path / "g.png"
    rc, out, _ = run(capsys, "topo", "p2-16gpu", "--draw", str(png))
    assert rc == 0 and png.read_bytes()[:4] == b"\x89PNG" and "bisection" in out


def test_simulate_single_program_json(capsys, tmp_path):
    trace = tmp_path / "t.json"
    rc, out, _ = run(capsys, "simulate", "--system", "a100", "--nodes", "2", "--axes", "2,16", "--reduce", "1",
                     "--matrix", "[[1 2] [2 8]]", "--program", BLUE, "--algo", "ring", "--bytes", "2GiB",
                     "--json", "--trace", str(trace))
    assert rc == 0
    doc = json.loads(out)
    (p,) = doc["programs"]
    assert p["text"] == BLUE
    assert [s["op"] for s in p["steps"]] == ["ReduceScatter", "AllReduce", "AllGather"]
    assert p["total_seconds"] == pytest.approx(sum(s["seconds"] for s in p["steps"]))
    assert doc["bytes_per_gpu"] == 2**31
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["ph"] == "X" for e in events) and any(e["ph"] == "C" for e in events)


def test_simulate_all_programs_and_models(capsys):
    rc, out, _ = run(capsys, "simulate", "--system", "v100", "--axes", "4,4", "--reduce", "1",
                     "--matrix", "[[1 4] [2 2]]", "--program", "all", "--algo", "tree", "--json")
    des = json.loads(out)
    assert len(des["programs"]) == 47
    assert des["bytes_per_gpu"] == 2**29 * 2 * 4  # P2's default
    rc, out, _ = run(capsys, "simulate", "--system", "v100", "--axes", "4,4", "--reduce", "1",
                     "--matrix", "[[1 4] [2 2]]", "--engine", "analytic", "--json")
    assert json.loads(out)["model"] == "analytic"
    rc, out, _ = run(capsys, "simulate", "--system", "a100", "--axes", "32", "--program", "AllReduce(slice=0, Inside)")
    assert rc == 0 and "across 2 nodes" in out


@pytest.mark.parametrize("command", [
    ["simulate", "--system", "a100", "--axes", "32", "--program", "AllReduce(slice=0, Inside)"],
    ["sweep", "-b", "1MiB", "-e", "1MiB"],
])
def test_model_no_longer_names_the_engine(capsys, command):
    """--model was --engine's old name; it names a training model now, and a command without one refuses it as
    an unknown option (one line, exit 2) rather than reading it as an engine."""
    rc, out, err = run(capsys, *command, "--model", "analytic", "--json")
    assert rc == 2 and out == "" and "unrecognized arguments: --model analytic" in err and len(err.splitlines()) == 1
    rc, out, _ = run(capsys, *command, "--engine", "analytic", "--json")
    assert rc == 0 and json.loads(out)["model"] == "analytic"


def test_simulate_one_program_synthesizes_nothing(capsys, monkeypatch):
    import p2sim.studies.simulate as cmd

    def refuse(*args, **kwargs):
        raise AssertionError("simulate --program must not synthesize every program")

    monkeypatch.setattr(cmd, "synthesize", refuse)
    monkeypatch.setattr(cmd, "program_counts", refuse)
    rc, out, _ = run(capsys, "simulate", "--system", "a100", "--nodes", "4", "--axes", "64", "--program", BLUE)
    assert rc == 0 and "16 x 4 GPUs, across 4 nodes" in out
    rc, _, err = run(capsys, "simulate", "--system", "a100", "--axes", "32", "--program",
                     "AllReduce(slice=1, Inside) ; AllReduce(slice=0, Inside)")
    assert rc == 2 and "step 2 AllReduce(slice=0, Inside) is invalid here" in err


EXAMPLE = ["--axes", "8,2,4", "--reduce", "0,2", "--matrix", "[[2 4] [1 2] [2 2]]"]


def test_synth_lower_states_and_uses_the_order(capsys):
    groups = {}
    for order in ("aligned", "p2"):
        rc, out, err = run(capsys, "synth", "--hierarchy", "4,16", *EXAMPLE, "--json", "--lower", "--order", order)
        assert rc == 0, err
        doc = json.loads(out)
        (m,) = doc["matrices"]
        assert doc["order"] == order and m["synthesis_hierarchy"] == [1, 4, 8] and len(m["programs"]) == 47
        groups[order] = m["reduction_groups"][0]
    # the README's worked example, by hand: node n holds devices 16n .. 16n+15
    assert groups["aligned"][:8] == [0, 1, 4, 5, 8, 9, 12, 13]
    assert groups["p2"][:8] == [0, 1, 16, 17, 4, 5, 20, 21]
    assert sorted(groups["aligned"]) == sorted(groups["p2"])
    rc, out, _ = run(capsys, "synth", "--hierarchy", "4,16", "--axes", "4,16", "--reduce", "0", "--json")
    assert json.loads(out)["order"] == "aligned"


def test_simulate_in_either_order(capsys):
    spans = {}
    for order in ("aligned", "p2"):
        rc, out, err = run(capsys, "simulate", "--system", "a100", "--nodes", "4", *EXAMPLE, "--program", BLUE,
                           "--order", order, "--json")
        assert rc == 0, err
        doc = json.loads(out)
        assert doc["order"] == order
        spans[order] = [s["nodes_spanned"] for s in doc["programs"][0]["steps"]]
        if order == "p2":
            # each node holds 4 GPUs of 4 ReduceScatter rings of 8 spanning 2 nodes: each ring crosses each
            # NIC direction once with 7/8 of the 8 GiB buffer, at 8 GB/s
            assert doc["programs"][0]["steps"][0]["seconds"] == pytest.approx(4 * 7 / 8 * 8 * 2**30 / 8e9, rel=0.01)
    assert spans == {"aligned": [1, 4, 1], "p2": [2, 2, 2]}
    rc, out, _ = run(capsys, "simulate", "--system", "a100", "--nodes", "4", *EXAMPLE, "--program", BLUE)
    assert rc == 0 and "reduce [0, 2]; aligned order;" in out
    rc, out, _ = run(capsys, "simulate", "--system", "a100", "--axes", "32", "--program", "AllReduce(slice=0, Inside)")
    assert "order" not in out  # one reduction axis: the orders agree, the header does not mention them


def _system_file(tmp_path, text):
    f = tmp_path / "sys.toml"
    f.write_text(text)
    return str(f)


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["simulate", "--system", "z100"], "unknown system 'z100'"),
        (["simulate", "--system", "a100", "--nodes", "0"], "nodes"),
        (["simulate", "--system", "a100", "--axes", "2,16", "--matrix", "[[2 2] [1 8]]"], "matrix"),
        (["simulate", "--system", "a100", "--axes", "2,16", "--program", "AllReduce(slice=0, Inside)"], "name one with --matrix"),
        (["simulate", "--system", "a100", "--axes", "32", "--program", "AllReduce(slice=2, Inside)"], "slice 2"),
        (["simulate", "--system", "a100", "--axes", "32", "--bytes", "lots"], "bytes"),
        (["simulate", "--system", "a100", "--axes", "32", "--engine", "magic"], "engine"),
        (["simulate", "--system", "a100", "--algo", "butterfly"], "algo"),
        (["simulate", "--system", "a100", "--order", "xla"], "--order: invalid choice: 'xla'"),
        (["synth", "--order", "row-major"], "--order: invalid choice"),
        (["topo", "nonesuch"], "unknown system"),
    ],
)
def test_simulate_bad_input(capsys, argv, msg):
    rc, out, err = run(capsys, *argv)
    assert rc != 0 and msg in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("edit", "msg"),
    [
        (lambda s: s.replace("nic      = { bandwidth = 8.0,   latency = 7.0, efficiency = 1.0 }", "nic = { latency = 7.0 }"),
         "classes.nic.bandwidth: missing"),
        (lambda s: s.replace("bandwidth = 8.0", "bandwidth = 0.0"), "must be positive"),
        (lambda s: s.replace("bandwidth = 8.0", "bandwidth = -8.0"), "must be positive"),
        (lambda s: s.replace('["gpu[12-15]", "pcie3"]', '["gpu[12-14]", "pcie3"]')
                   .replace('{ class = "nvswitch", pairs = [["gpu[0-15]", "nvswitch"]] },',
                            '{ class = "nvswitch", pairs = [["gpu[0-14]", "nvswitch"]] },'),
         "gpu15"),
    ],
)
def test_bad_system_files(capsys, tmp_path, edit, msg):
    from p2sim.topology import system_paths

    text = edit(system_paths()["a100"].read_text())
    rc, out, err = run(capsys, "simulate", "--system", _system_file(tmp_path, text), "--axes", "32")
    assert rc != 0 and msg in err and "sys.toml" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["simulate", "sweep", "check", "rank", "plan", "whatif"])
def test_algo_help_lists_every_value(capsys, command):
    """--algo's help lists every value it takes (collnet_direct, collnet_chain and collnet were missing from
    simulate's), from the one table the checks use; the studies also take both."""
    rc, out, _ = run(capsys, command, "--help")
    text = " ".join(out.split())
    assert rc == 0
    values = ["auto", "ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "collnet"]
    values += ["both"] if command in ("rank", "plan", "whatif") else []
    for v in values:
        assert re.search(rf"\b{v} \(", text), (command, v)
    assert ("both (" in text) == (command in ("rank", "plan", "whatif"))


@pytest.mark.parametrize("argv", [
    ["sweep", "--system", "superpod-h100", "--nodes", "248", "-b", "1G", "-e", "1G", "--json"],
    ["simulate", "--system", "gb200-nvl72-pod", "--nodes", "20", "--program", "AllReduce(slice=0, Inside)",
     "--json"],
    ["check", "--system", "gb200-nvl72-pod", "--nodes", "20", "--matrix", "[[1 20 18 4]]", "--program",
     "AllReduce(slice=0, Inside)", "--json"],
])
def test_commands_that_place_nothing_run_on_a_partial_last_unit(capsys, argv):
    """nccl-tests runs on any node count (a cluster's last scalable unit is often partly filled)."""
    rc, out, err = run(capsys, *argv, "-q")
    assert rc == 0, err
    assert json.loads(out)


# each command's API function, and the least arguments that reach it
THROUGH_API = {
    "rank": ("rank", []), "plan": ("plan", ["--reduction", "0:1GiB"]), "whatif": ("whatif", ["--vary", "nodes=2"]),
    "simulate": ("simulate", []), "sweep": ("sweep", []),
    "step": ("step", ["--model", "llama3-8b", "--axes", "data=8", "--nodes", "1"]), "check": ("check", []), "synth": ("synthesize", []),
    "placements": ("placements", []), "systems": ("systems", []), "topo": ("topo", ["a100"]),
    "validate": ("validate", ["--measurements", "validation/data/measurements_2node.csv"]),
    "calibrate": ("calibrate", ["--measurements", "validation/data/measurements_2node.csv", "--system", "a100",
                                "--out", "OUT.toml"]),
}


class _Called(Exception):
    pass


def test_every_command_goes_through_the_api(capsys, monkeypatch, tmp_path):
    """The command line is a shell over p2sim.api: each command calls its API function, never a study itself."""
    from p2sim import api
    from p2sim.cli.parser import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(THROUGH_API) == set(sub.choices), "a command without its API function here"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for command, (function, argv) in THROUGH_API.items():
        def called(*args, _name=function, **kwargs):
            raise _Called(_name)

        monkeypatch.setattr(api, function, called)
        argv = [os.path.join(root, a) if a.startswith("validation/") else str(tmp_path / a) if a == "OUT.toml"
                else a for a in argv]
        with pytest.raises(_Called, match=f"^{function}$"):
            main([command, *argv])
        monkeypatch.undo()
    capsys.readouterr()


@pytest.mark.slow  # validates every published point
def test_validate_csv_on_stdout_is_the_csv_only(capsys, tmp_path):
    """``--csv -`` prints the table as CSV and nothing else, --out's report line included (as rank, plan,
    whatif and sweep do)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rc, out, err = run(capsys, "validate", "--measurements",
                       os.path.join(root, "validation", "data", "measurements_2node.csv"), "--engine", "analytic",
                       "--workers", "1", "--csv", "-", "--out", str(tmp_path / "report"))
    assert rc == 0, err
    assert "report:" not in out and out.splitlines()[0].count(",") > 2


def test_emit_megatron_prints_the_launch_for_rank_and_plan(capsys):
    job = ["--system", "dgx-h100", "--nodes", "2", "--axes", "data=2,tensor=8"]
    quick = ["--engine", "analytic", "--workers", "1", "-q"]
    rc, out, err = run(capsys, "rank", *job, "--reduce", "data", "--matrix", "[[2 1] [1 8]]", *quick,
                       "--emit", "megatron")
    assert rc == 0 and out.startswith("#!/bin/bash\n"), err
    assert "    --tensor-model-parallel-size 8\n" in out and "rank order tp-cp-ep-dp-pp (its default)" in out
    rc, out, err = run(capsys, "plan", *job, "--reduction", "data:1GiB", "--reduction", "tensor:256MiB x 8", *quick,
                       "--emit", "megatron")
    assert rc == 0 and "# reduce over tensor: auto" in out and "RANK_OF=(" in out, err
    assert out.rstrip().endswith('./megatron_rank.sh "${MODEL_PARALLEL_ARGS[@]}" "$@"')


def test_plan_model_prints_the_step_by_axis(capsys, tmp_path):
    """plan --model: the settings, the overlap model, each axis with its tier and bound; the report draws the
    step by axis."""
    rc, out, _ = run(capsys, "plan", "--model", "llama3-8b", "--system", "dgx-h100", "--axes",
                     "dp=2,pp=2,tp=4", "--train", "seq=4096,global_batch=8", "--workers", "1", "--out",
                     str(tmp_path))
    assert rc == 0
    assert "model llama3-8b: seq 4096, micro-batch 1, global batch 8" in out
    assert "overlap: none" in out
    assert "  tp: " in out and "inside a node; bound by" in out and "  pp: " in out
    assert (tmp_path / "step.png").is_file() and "step.png" in (tmp_path / "plan.md").read_text()


def test_validate_split_by_sizes_needs_single_collective_rows_to_calibrate_on(capsys):
    """``--split sizes`` without ``--calibrate-on`` (or on program rows only) is one line naming the option."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    table = os.path.join(root, "validation", "data", "measurements_2node.csv")
    log = os.path.join(root, "tests", "data", "nccltests", "all_reduce_perf_2node_h100.txt")
    for scored, extra in ((table, []), (table, ["--calibrate-on", table]), (log, ["--calibrate-on", table])):
        rc, out, err = run(capsys, "validate", "--measurements", scored, "--system", "h100", "--split", "sizes",
                           "--workers", "1", *extra)
        assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("p2sim validate: error: split: 'sizes'"), err
