"""``--emit nccl-tuner``: lines NCCL's example tuner plugin reads, with the predicted gain said above each."""

from __future__ import annotations

import pytest

from p2sim.report.tuner import COLUMNS, tuner_text
from p2sim.studies.tuner import Communicator, TunerRange

from .test_cli import run

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


def _range(lo, hi, algo="ring", proto="LL128", nodes=2, ranks=16):
    return TunerRange("AllReduce", lo, hi, algo, proto, nodes, ranks, "tree/LL", 2e-3, 1e-3, tuple(range(ranks)))


def test_rules_are_the_example_tuners_columns_with_the_gain_above():
    c = Communicator("step 1", "AllReduce", tuple(range(16)), 2, (_range(0, 1024), _range(4097, 65536, "nvls")))
    text = tuner_text(["context"], [c], 1.05)
    assert f"# {COLUMNS}" in text
    assert parse_like_the_example_tuner(text) == [
        ["allreduce", "0", "1024", "ring", "ll128", "-1", "2", "16", "-1", "-1"],
        ["allreduce", "4097", "65536", "nvls", "ll128", "-1", "2", "16", "-1", "-1"]]
    assert "NCCL picks tree/LL (2 ms at 1 KiB), ring/LL128 predicted 1 ms (2.00x)" in text
    assert "4 KiB < size <= 64 KiB" in text


def test_communicators_the_tuner_cannot_tell_apart_are_said_not_written():
    a = Communicator("step 1", "AllReduce", (0, 8), 2, (_range(0, 1024, ranks=2),))
    b = Communicator("step 3", "AllReduce", (1, 9), 2, (_range(0, 2048, ranks=2),))
    same = Communicator("step 5", "AllReduce", (2, 10), 2, (_range(0, 1024, ranks=2),))
    text = tuner_text([], [a, b, same], 1.05)
    assert len(parse_like_the_example_tuner(text)) == 1 and "cannot tell the two apart" in text
    assert "step 5" not in text  # same rules as step 1: nothing to say
    assert "no rules" in tuner_text([], [Communicator("s", "AllGather", (0, 1), 1, ())], 1.05)


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
