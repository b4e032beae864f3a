"""bench_nccl sweep logs as measurements."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from p2sim.collectives.busbw import bus_factor
from p2sim.measurements.sweep_log import is_sweep_log, read_sweep_log
from p2sim.util.errors import MeasurementError

ROOT = Path(__file__).resolve().parents[1]
# every test reads the log of a bench_nccl sweep that the module's fixture runs in a subprocess
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    log = tmp_path_factory.mktemp("sweep") / "sweep.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    r = subprocess.run([sys.executable, "-m", "bench_nccl", "sweep", "--backend", "numpy", "--system", "v100",
                        "--nodes", "1", "-C", "AllGather", "-b", "1KiB", "-e", "16KiB", "-f", "4", "-w", "0",
                        "-n", "1", "--log", str(log)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return log


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def write(path: Path, recs: list, tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) + tail)
    return path


def test_a_sweep_log_reads_back(sweep):
    assert is_sweep_log(sweep)
    rows = read_sweep_log(sweep)
    recs = records(sweep)
    assert len(rows) == len(recs) == 6
    for row, rec in zip(rows, recs):
        assert (row.system, row.nodes, row.gpus_per_node, row.collective, row.algo) == ("v100", 1, 8, "AllGather",
                                                                                          "auto")
        assert (row.size_bytes, row.seconds, row.in_place) == (rec["size"], rec["seconds"], rec["in_place"])
        assert row.busbw == pytest.approx(rec["busbw_GBps"] * 1e9)
        assert row.busbw == pytest.approx(row.size_bytes / row.seconds * bus_factor("AllGather", 8))
        assert row.gpu == "cpu (numpy emulation)" and row.ident.startswith("sweep.jsonl:")
    assert {r.system for r in read_sweep_log(sweep, system="h100")} == {"h100"}


def test_program_records_are_skipped_and_a_cut_last_line_dropped(sweep, tmp_path):
    recs = records(sweep)
    mixed = write(tmp_path / "m.jsonl", [{"system": "v100", "program": "AllReduce(slice=0, Inside)"}, *recs],
                  '{"kind": "sweep", "coll')
    assert len(read_sweep_log(mixed)) == 6
    assert not is_sweep_log(mixed)  # its first record is a program's
    only = write(tmp_path / "p.jsonl", [{"system": "v100"}])
    with pytest.raises(MeasurementError, match="no sweep records"):
        read_sweep_log(only)


@pytest.mark.parametrize("change, field, message", [
    ({"wrong": 3}, "wrong", "3 wrong elements"),
    ({"system": None}, "system", "the sweep named no system"),
    ({"nodes": 0}, "nodes", "0 must be positive"),
    ({"seconds": "fast"}, "seconds", "'fast' is not a number"),
    ({"collective": "AllToAll"}, "collective", "'AllToAll' is not one of"),
    ({"algo": "Ring"}, "algo", "'Ring' is not one of"),
    ({"size": None}, "size", "None is not a whole number"),
    ({"ranks": 16}, "ranks", "16, but 1 nodes x 8 GPUs per node"),
])
def test_bad_records_name_line_and_field(sweep, tmp_path, change, field, message):
    recs = records(sweep)
    recs[2].update(change)
    bad = write(tmp_path / "bad.jsonl", recs)
    with pytest.raises(MeasurementError) as e:
        read_sweep_log(bad)
    assert str(e.value).startswith(f"{bad}:3: {field}: ") and message in str(e.value)


def test_missing_fields_and_broken_json(sweep, tmp_path):
    recs = records(sweep)
    del recs[1]["gpus_per_node"]
    with pytest.raises(MeasurementError, match=r":2: gpus_per_node: missing"):
        read_sweep_log(write(tmp_path / "a.jsonl", recs))
    text = sweep.read_text().splitlines()
    text[1] = text[1][:30]
    (tmp_path / "b.jsonl").write_text("\n".join(text) + "\n")
    with pytest.raises(MeasurementError, match=r":2: record: not valid JSON"):
        read_sweep_log(tmp_path / "b.jsonl")
    with pytest.raises(MeasurementError, match="none.jsonl: no such bench_nccl sweep log"):
        read_sweep_log(tmp_path / "none.jsonl")
    assert not is_sweep_log(tmp_path / "none.jsonl")
