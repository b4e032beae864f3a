"""``--emit nccl-tuner``: lines NCCL's example tuner plugin reads, with the predicted gain said above each."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from p2sim.formalism.hierarchy import LoweredStep
from p2sim.formalism.semantics import Op
from p2sim.report.tuner import COLUMNS, tuner_text
from p2sim.sim import SimSettings, Simulator
from p2sim.studies.tuner import Communicator, TunerRange
from p2sim.topology import load_system

from .test_cli import run

# NCCL's example tuner plugin (plugins/tuner/example/plugin.c), unchanged, and p2sim's harness that
# loads a file with it and prints what the plugin hands NCCL (tests/data/nccl_tuner/README.md)
PLUGIN = Path(__file__).parent / "data" / "nccl_tuner"

# what NCCL's example tuner accepts (plugins/tuner/example/README.md): names and field counts
COLLS = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}
ALGOS = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
PROTOS = {"ll", "ll128", "simple"}


def parse_like_the_example_tuner(text: str) -> list[list[str]]:
    rules = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split(",")
        assert len(f) in (8, 9, 10), line
        assert f[0] in COLLS and f[3] in ALGOS and f[4] in PROTOS, line
        lo, hi, ch, nodes, ranks = int(f[1]), int(f[2]), int(f[5]), int(f[6]), int(f[7])
        assert 0 <= lo <= hi and (ch == -1 or ch > 0) and (nodes == -1 or nodes > 0) and (ranks == -1 or ranks > 0)
        rules.append(f)
    return rules


def _range(lo, hi, algo="ring", proto="LL128", nodes=2, ranks=16, channels=8, kept=False):
    seconds = 2e-3 if kept else 1e-3
    return TunerRange("AllReduce", lo, hi, algo, proto, channels, nodes, ranks, "tree/LL", 2e-3, seconds,
                      tuple(range(ranks)))


def test_rules_are_the_example_tuners_columns_with_the_gain_above():
    c = Communicator("step 1", "AllReduce", tuple(range(16)), 2,
                     (_range(0, 1024), _range(4097, 65536, "nvls", channels=16)),
                     (_range(1025, 4096, "tree", "LL", channels=4, kept=True),))
    text = tuner_text(["context"], [c], 1.05)
    assert f"# {COLUMNS}" in text
    assert parse_like_the_example_tuner(text) == [
        ["allreduce", "0", "1024", "ring", "ll128", "8", "2", "16", "-1", "-1"],
        ["allreduce", "1025", "4096", "tree", "ll", "4", "2", "16", "-1", "-1"],
        ["allreduce", "4097", "65536", "nvls", "ll128", "16", "2", "16", "-1", "-1"]]
    assert "NCCL picks tree/LL (2 ms at 1 KiB), ring/LL128 on 8 channels predicted 1 ms (2.00x)" in text
    assert "1 KiB < size <= 4 KiB: NCCL's own tree/LL on 4 channels (2 ms at 4 KiB)" in text
    assert "4 KiB < size <= 64 KiB" in text and "0 <= size <= 1 KiB" in text


def test_communicators_the_tuner_cannot_tell_apart_are_said_not_written():
    a = Communicator("step 1", "AllReduce", (0, 8), 2, (_range(0, 1024, ranks=2),))
    b = Communicator("step 3", "AllReduce", (1, 9), 2, (_range(0, 2048, ranks=2),))
    same = Communicator("step 5", "AllReduce", (2, 10), 2, (_range(0, 1024, ranks=2),))
    text = tuner_text([], [a, b, same], 1.05)
    assert len(parse_like_the_example_tuner(text)) == 1 and "cannot tell the two apart" in text
    assert "step 5" not in text  # same rules as step 1: nothing to say
    none = tuner_text([], [Communicator("s", "AllGather", (0, 1), 1, (), (_range(0, 8, kept=True),))], 1.05)
    assert "no rules" in none and "do not load the plugin" in none and not parse_like_the_example_tuner(none)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """NCCL's example tuner with p2sim's harness, compiled; skipped only where there is no C compiler."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build NCCL's example tuner plugin")
    exe = tmp_path_factory.mktemp("tuner") / "harness"
    subprocess.run([cc, "-I", str(PLUGIN / "nccl"), "-o", str(exe), str(PLUGIN / "harness.c")], check=True)
    return exe


def ask_plugin(exe: Path, conf: Path, queries: list[tuple[str, int, int, int]]) -> tuple[int, list[tuple]]:
    """The rules the plugin loaded from ``conf``, and per query the (algorithm, protocol, channels) it gives NCCL."""
    text = "".join(f"{c} {b} {n} {r}\n" for c, b, n, r in queries)
    out = subprocess.run([str(exe), str(conf)], input=text, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    configs = int(lines[0].split()[1])
    return configs, [(a, p, int(ch)) for a, p, ch in (line.split() for line in lines[1:])]


@pytest.mark.parametrize("argv", [
    # dgx-h100: p5 at 4 nodes has no range where p2sim differs from NCCL since EFA's control message (issue 33)
    ("sweep", "--system", "dgx-h100", "--nodes", "4", "-b", "1M", "-e", "256M", "-f", "4"),
    ("rank", "--system", "p5", "--nodes", "4", "--axes", "data=32", "--reduce", "data", "--workers", "1"),
])
def test_nccls_example_plugin_runs_each_rule_on_the_channels_p2sim_predicted(capsys, tmp_path, plugin, argv):
    rc, out, err = run(capsys, *argv, "--emit", "nccl-tuner")
    assert rc == 0, err
    conf = tmp_path / "tuner.conf"
    conf.write_text(out)
    rules = parse_like_the_example_tuner(out)
    queries = [(f[0], int(b), int(f[6]), int(f[7])) for f in rules for b in (f[1], f[2])]
    configs, answers = ask_plugin(plugin, conf, queries)
    assert configs == len(rules)  # every line the plugin took for a rule is one p2sim wrote
    assert [a for a in answers] == [(f[3], f[4], int(f[5])) for f in rules for _ in "ab"]
    assert any(int(f[5]) > 1 for f in rules)  # -1 was one channel
    if argv[0] == "sweep":  # one communicator, all 32 GPUs: each range's count is the simulator's at its largest size
        topo = load_system("p5", 4)
        protos = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
        for f in rules:
            step = Simulator(topo, SimSettings(f[3], proto=protos[f[4]])).step(LoweredStep(Op.ALL_REDUCE, (tuple(range(32)),)),
                                                                  (float(f[2]),))
            assert step.choices[0] == (f[3], protos[f[4]], int(f[5]))
    # every size of each communicator up to its largest has a rule: none runs on the plugin's one channel
    for key in {(f[0], f[6], f[7]) for f in rules}:
        ends = sorted((int(f[1]), int(f[2])) for f in rules if (f[0], f[6], f[7]) == key)
        assert ends[0][0] == 0 and all(b[0] == a[1] + 1 for a, b in zip(ends, ends[1:])), key


def test_long_comments_stay_comments_for_the_plugin(tmp_path, plugin):
    # the plugin reads 255 characters at a time: a longer comment's rest would be read as a rule
    program = " ; ".join(["ReduceScatter(slice=1, Inside)", "AllReduce(slice=1, Parallel(0))"] * 8)
    c = Communicator("step 1 " + program, "AllReduce", tuple(range(16)), 2, (_range(0, 1024),))
    conf = tmp_path / "long.conf"
    conf.write_text(tuner_text([f"program {program}", "placement " + ",".join(["0"] * 200)], [c], 1.05))
    configs, answers = ask_plugin(plugin, conf, [("allreduce", 512, 2, 16)])
    assert configs == 1 and answers == [("ring", "ll128", 8)]


@pytest.mark.parametrize("argv", [
    ("sweep", "--system", "dgx-h100", "-b", "1K", "-e", "1G", "-g", "8"),
    ("rank", "--system", "p5", "--nodes", "4", "--axes", "data=32", "--reduce", "data", "--workers", "1"),
    ("plan", "--system", "dgx-h100", "--axes", "data=4,tensor=4", "--reduction", "data:1GiB", "--workers", "1"),
])
def test_every_command_emits_rules_the_tuner_reads(capsys, argv):
    rc, out, err = run(capsys, *argv, "--emit", "nccl-tuner")
    assert rc == 0, err
    rules = parse_like_the_example_tuner(out)
    assert out.startswith("# NCCL example tuner configuration")
    assert all(line.startswith("#") or line.count(",") == 9 for line in out.splitlines())
    if argv[0] == "sweep":
        assert rules and all(r[6] == "2" and r[7] == "16" for r in rules)  # 2 nodes x -g 8


def test_sweep_refuses_other_forms(capsys):
    rc, out, err = run(capsys, "sweep", "--emit", "jax")
    assert rc == 2 and out == "" and "nccl-tuner" in err and len(err.splitlines()) == 1
