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
