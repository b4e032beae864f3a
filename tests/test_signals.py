from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p2sim.util.signals import Terminated, deferred_signals, terminate_on_sigterm, worker_init

ROOT = Path(__file__).resolve().parents[1]
LONG_RANK = ["rank", "--system", "superpod-h100", "--nodes", "128", "--axes", "data=16,pipe=8,tensor=8",
             "--reduce", "data", "--bytes", "1GiB", "--workers", "2", "--exhaustive"]


def test_sigterm_raises_terminated_inside_the_block_only():
    with terminate_on_sigterm():
        with pytest.raises(Terminated):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_deferred_signals_arrive_after_the_block():
    got = []
    previous = signal.signal(signal.SIGINT, lambda s, f: got.append(s))
    try:
        with deferred_signals():
            os.kill(os.getpid(), signal.SIGINT)
            assert got == []
        assert got == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pids: list[int]) -> list[int]:
    left = []
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.append(p)
    return left


def _start_long_rank() -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen([sys.executable, "-m", "p2sim", *LONG_RANK], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    line = ""
    while "simulations in" not in line:  # the job has started its workers
        line = proc.stderr.readline()
        assert line, "rank ended before its job started"
    time.sleep(1.5)
    workers = _children(proc.pid)
    return proc, workers


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig,status,word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_a_signal_ends_the_whole_run_with_one_line(sig, status, word):
    proc, workers = _start_long_rank()
    assert len(workers) >= 2
    proc.send_signal(sig)
    rest = proc.stderr.read()
    assert proc.wait(timeout=10) == status
    assert rest.strip().splitlines() == [f"p2sim rank: {word}"]  # no traceback
    deadline = time.monotonic() + 5
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(workers) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl")
def test_workers_die_with_a_killed_parent(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys, time\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from p2sim.util.signals import worker_init\n"
        "pool = ProcessPoolExecutor(2, initializer=worker_init)\n"
        "list(pool.map(int, range(2)))\n"
        "print(' '.join(str(p) for p in pool._processes), flush=True)\n"
        "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    workers = [int(p) for p in proc.stdout.readline().split()]
    proc.kill()  # SIGKILL: no handler runs in the parent
    proc.wait()
    deadline = time.monotonic() + 5
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers and _alive(workers) == []


def test_worker_init_leaves_ctrl_c_to_the_main_process():
    code = ("import signal\nfrom p2sim.util.signals import worker_init\nworker_init()\n"
            "print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout
    assert out.split() == ["True", "True"]
    assert callable(worker_init)
