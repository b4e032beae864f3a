from __future__ import annotations

import os
import signal

import pytest

from p2sim.report.files import write_report
from p2sim.util.errors import OutputError
from p2sim.util.fileio import replace_file


def test_a_report_lands_whole_and_leaves_no_temporary_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's")
    write_report(out, {"a.md": b"A", "b.html": b"B"})
    assert sorted(p.name for p in out.iterdir()) == ["a.md", "b.html", "mine.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the temporary folder beside it is gone


def test_an_interrupted_report_changes_nothing(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.md").write_text("old")
    real = os.replace
    calls = []

    def interrupted(src, dst):
        calls.append(dst)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_report(out, {"a.md": b"new", "b.md": b"new"})
    monkeypatch.setattr(os, "replace", real)
    assert (out / "a.md").read_text() == "old" and not (out / "b.md").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and len(calls) == 1


def test_signals_wait_for_the_renames(tmp_path):
    got = []
    previous = signal.signal(signal.SIGTERM, lambda s, f: got.append(len(list((tmp_path / "out").glob("*")))))
    real = os.replace
    sent = []

    def slow(src, dst):
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGTERM)  # arrives during the renames: held until both are done
        real(src, dst)

    try:
        os.replace = slow
        write_report(tmp_path / "out", {"a": b"1", "b": b"2"})
    finally:
        os.replace = real
        signal.signal(signal.SIGTERM, previous)
    assert got == [2]


def test_replace_file_is_whole_or_nothing(tmp_path, monkeypatch):
    f = tmp_path / "x.toml"
    f.write_text("before")
    replace_file(f, b"after", "out")
    assert f.read_text() == "after" and [p.name for p in tmp_path.iterdir()] == ["x.toml"]
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(OutputError, match="out: cannot write .*x.toml .No space left on device"):
        replace_file(f, b"lost", "out")
    assert f.read_text() == "after" and [p.name for p in tmp_path.iterdir()] == ["x.toml"]
