from __future__ import annotations

import json
import subprocess
import sys

import pytest

from p2sim.cli import main
from p2sim.program import parse_program

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
