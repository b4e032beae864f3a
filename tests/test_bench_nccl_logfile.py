from __future__ import annotations

import pytest

from bench_nccl.errors import BenchError
from bench_nccl.logfile import LogWriter


def test_a_cut_record_is_dropped_by_reading_only_the_tail(tmp_path):
    log = tmp_path / "r.jsonl"
    good = b'{"a":1}\n' * 20000
    log.write_bytes(good + b'{"cut":')
    w = LogWriter(log)
    w.write({"b": 2})
    w.close()
    assert log.read_bytes() == good + b'{"b":2}\n'
    log.write_bytes(b'{"only cut"')
    LogWriter(log).close()
    assert log.read_bytes() == b""


@pytest.mark.parametrize("dev", ["/dev/full", "/dev/null", "/dev/zero"])
def test_a_log_that_is_not_a_regular_file_is_refused(dev):
    with pytest.raises(BenchError, match=f"log: {dev} is not a regular file"):
        LogWriter(dev)


def test_a_write_that_fails_is_one_message(tmp_path, monkeypatch):
    import os

    w = LogWriter(tmp_path / "r.jsonl")
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(BenchError, match="No space left on device.*records written before are kept"):
        w.write({"a": 1})


def _record(seconds: float, iteration: int = 0) -> dict:
    return {"system": "h100", "nodes": 1, "axes": [8], "reduce_axes": [0], "matrix": [[1, 8]],
            "program": "AllReduce(slice=0, Inside)", "algo": "ring", "bytes": 1024, "backend": "numpy",
            "order": "aligned", "run_id": "r1", "iteration": iteration, "seconds": seconds, "pass": True}


def test_repeated_records_are_said_or_refused_as_validate_does(tmp_path, capsys, caplog, monkeypatch):
    import json

    import bench_nccl.cli as cli

    monkeypatch.setattr(cli, "launch_local", lambda *args, **kwargs: 0)
    log = tmp_path / "dup.jsonl"
    run = ["run", "--system", "h100", "--nodes", "1", "--axes", "8", "--backend", "numpy", "--bytes", "1KiB",
           "--log", str(log), "--resume"]
    log.write_text("".join(json.dumps(r) + "\n" for r in (_record(1.0), _record(1.5, 1), _record(1.0))))
    assert cli.main(run) == 0
    said = (f"{log}:3: repeats line 1 (iteration 0 of run 'r1' of AllReduce(slice=0, Inside)): counted once")
    assert capsys.readouterr().err == f"bench_nccl: warning: {said}\n"
    # the same words as p2sim validate's, for the same log
    from p2sim.measurements.program_rows import load_measurements

    with caplog.at_level("WARNING", logger="p2sim"):
        load_measurements(log)
    assert said in caplog.text
    log.write_text("".join(json.dumps(r) + "\n" for r in (_record(1.0), _record(2.0))))
    assert cli.main(run) == 2
    assert capsys.readouterr().err == (f"bench_nccl: error: {log}:2: iteration: 0 of run 'r1' of "
                                       "AllReduce(slice=0, Inside) is already on line 1 with 1.0 s, here 2.0 s: "
                                       "two different records of one iteration\n")
