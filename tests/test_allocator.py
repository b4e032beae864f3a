from __future__ import annotations

import subprocess
import sys

import pytest

from p2sim.util import allocator


def _in_child(code: str, env_extra: dict[str, str] | None = None) -> str:
    import os

    env = {k: v for k, v in os.environ.items() if k not in allocator.USER_SET}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True).stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_thresholds_are_set_in_a_fresh_process():
    # in a child: the test process's own allocator is left as it was
    assert _in_child("from p2sim.util.allocator import keep_freed_memory; print(keep_freed_memory())") in (
        "True", "False")  # False only without glibc's mallopt (musl)


def test_a_users_thresholds_are_left_alone():
    out = _in_child("from p2sim.util.allocator import keep_freed_memory; print(keep_freed_memory())",
                    {"MALLOC_TRIM_THRESHOLD_": "131072"})
    assert out == "False"


def test_off_linux_nothing_is_set(monkeypatch):
    monkeypatch.setattr(allocator.sys, "platform", "darwin")
    assert allocator.keep_freed_memory() is False


def test_python_m_p2sim_answers_alike_with_and_without_the_thresholds():
    # where memory comes from changes no number: the same output with the thresholds set and with the
    # user's own (which leave them unset)
    import os

    argv = [sys.executable, "-m", "p2sim", "rank", "--system", "h100", "--nodes", "4", "--axes", "4,8",
            "--reduce", "0", "--workers", "1", "-q"]
    base = {k: v for k, v in os.environ.items() if k not in allocator.USER_SET}
    outs = [subprocess.run(argv, capture_output=True, text=True, env={**base, **extra})
            for extra in ({}, {"MALLOC_MMAP_THRESHOLD_": "131072"})]
    assert all(o.returncode == 0 for o in outs), [o.stderr for o in outs]
    assert outs[0].stdout == outs[1].stdout and outs[0].stdout.strip()


def test_the_p2sim_script_sets_them_before_main(monkeypatch):
    """The console script (pyproject's entry) and ``python -m p2sim`` run cli.script: thresholds, then main."""
    import tomllib
    from pathlib import Path

    import p2sim.cli as cli

    scripts = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["p2sim"] == "p2sim.cli:script"
    calls: list[str] = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append("thresholds"))
    monkeypatch.setattr(cli, "main", lambda: calls.append("main") or 0)
    assert cli.script() == 0 and calls == ["thresholds", "main"]
