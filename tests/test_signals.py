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


def _as_from_a_terminal() -> None:
    """A child's Ctrl-C as a terminal's foreground job has it: a shell starts background jobs (``make test &``,
    ``nohup``) with SIGINT ignored, and Python then leaves it ignored, so the run would never see the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_long_rank() -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen([sys.executable, "-m", "p2sim", *LONG_RANK], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_terminal)
    line = ""
    while "simulations in" not in line:  # the job has started its workers
        line = proc.stderr.readline()
        assert line, "rank ended before its job started"
    time.sleep(1.5)
    workers = _children(proc.pid)
    return proc, workers


@pytest.mark.slow  # signals a p2sim run in a subprocess
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl")
def test_a_worker_whose_parent_died_before_it_started_goes_too(tmp_path):
    """The death signal is asked for in worker_init; a parent killed before (a worker slow to start on a loaded
    machine) sends none, and the worker lived on: it now sees its parent gone and goes."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import multiprocessing, os, sys, time\n"
        "from p2sim.util.signals import worker_init\n"
        "def late():\n"
        "    time.sleep(1.0)  # the parent is gone by now\n"
        "    worker_init()\n"
        "    time.sleep(60)\n"
        "if __name__ == '__main__':\n"
        "    child = multiprocessing.get_context('fork').Process(target=late)\n"
        "    child.start()\n"
        "    print(child.pid, flush=True)\n"
        "    os._exit(0)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    worker = int(proc.stdout.readline())
    proc.wait()
    deadline = time.monotonic() + 30
    while _alive([worker]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive([worker]) == []


def test_worker_init_leaves_ctrl_c_to_the_main_process():
    code = ("import signal\nfrom p2sim.util.signals import worker_init\nworker_init()\n"
            "print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout
    assert out.split() == ["True", "True"]
    assert callable(worker_init)


def test_a_stopped_pool_leaves_no_thread_for_the_exit_hooks():
    # concurrent.futures' exit hook wakes every pool thread still registered, through a pipe that thread may be
    # closing at that moment ("Exception ignored in: <module 'threading'>"); a stopped pool's thread is joined
    from p2sim.studies.executor import process_pool

    with terminate_on_sigterm():
        with pytest.raises(Terminated):
            with process_pool(2) as pool:
                assert list(pool.map(int, range(4))) == [0, 1, 2, 3]
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
    thread = pool._executor_manager_thread
    assert thread is None or not thread.is_alive()
    assert all(not p.is_alive() for p in pool._processes.values()) if pool._processes else True


def test_a_signal_while_the_workers_fork_is_not_lost(tmp_path):
    # a signal handled inside os.fork's hooks (logging releases its lock there) raised "Exception ignored in:
    # <function _releaseLock>" and was lost: the run went on to exit 0.  The hook here sends SIGTERM at that
    # moment, every time.
    script = tmp_path / "fork.py"
    script.write_text(
        "import os, signal\n"
        "from p2sim.studies.executor import process_pool\n"
        "from p2sim.util.signals import Terminated, terminate_on_sigterm\n"
        "os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGTERM))\n"
        "with terminate_on_sigterm():\n"
        "    try:\n"
        "        with process_pool(2) as pool:\n"
        "            print('ran', flush=True)\n"
        "    except Terminated:\n"
        "        print('terminated', flush=True)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (r.stdout, r.stderr) == ("terminated\n", "")


@pytest.mark.slow  # signals seven p2sim runs in subprocesses
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig,status,word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_a_signal_at_any_moment_of_a_run_ends_it_with_one_line(sig, status, word):
    # before the pool starts (while programs are counted: progress lines every 0.05 s say so), as its workers
    # fork, and while they run; before, some runs printed an "Exception ignored in" traceback after the line
    # (the pool's exit hook, or os.fork's hooks, where the signal was lost and the run went on to exit 0)
    env = {**os.environ, "P2SIM_PROGRESS_S": "0.05"}
    for after, delay in [("counting", 0.0), ("counting", 0.2), ("simulations in", 0.0), ("simulations in", 0.01),
                         ("simulations in", 0.05), ("simulations in", 0.3), ("simulations in", 1.0)]:
        proc = subprocess.Popen([sys.executable, "-m", "p2sim", *LONG_RANK], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_as_from_a_terminal)
        seen = []
        while not seen or after not in seen[-1]:
            seen.append(proc.stderr.readline())
            assert seen[-1], f"rank ended before {after!r}: {seen}"
        time.sleep(delay)
        proc.send_signal(sig)
        lines = [line for line in seen + proc.stderr.read().splitlines(keepends=True)]
        code = proc.wait(timeout=30)
        # the lines that are not the run's own first: pytest shortens a long message, and these are the news
        stray = [line for line in lines if not line.startswith("p2sim rank: ")]
        assert stray == [], f"{sig.name} {delay} s after {after!r}: exit {code}, stray lines {stray!r}"
        assert code == status, f"{sig.name} {delay} s after {after!r}: exit {code}, last lines {lines[-4:]!r}"
        assert [line for line in lines if not line.startswith(("p2sim rank: counting", "p2sim rank: bounding"))
                ][-1] == f"p2sim rank: {word}\n", (after, delay, lines)


_SIGNAL_ON_IMPORT = """
import os, signal, sys
sig, name = getattr(signal, sys.argv[1]), sys.argv[2]

class SignalOnImport:  # the signal comes as the module named is imported, as a Ctrl-C in a run's first second does
    def find_spec(self, fullname, path=None, target=None):
        if fullname == name:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), sig)
        return None

sys.meta_path.insert(0, SignalOnImport())
from p2sim.cli import main
sys.exit(main(["rank", "--system", "v100", "--nodes", "1", "--axes", "8", "--reduce", "0", "--workers", "2"]))
"""


@pytest.mark.parametrize("module", ["numpy", "datetime"])
@pytest.mark.parametrize("sig,status,word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_a_signal_while_the_command_line_imports_is_one_line(tmp_path, module, sig, status, word):
    # numpy: the first heavy import (a 28-line KeyboardInterrupt, or a silent SIGTERM death before);
    # datetime: imported by numpy's C extension, which turns the signal's exception into an ImportError
    script = tmp_path / "early.py"
    script.write_text(_SIGNAL_ON_IMPORT)
    r = subprocess.run([sys.executable, str(script), sig.name, module], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, preexec_fn=_as_from_a_terminal)
    assert (r.returncode, r.stderr) == (status, f"p2sim rank: {word}\n")


def test_answering_signals_leaves_the_handlers_as_they_were():
    from p2sim.util.signals import answering_signals, ended_by, ending

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with answering_signals():
        with pytest.raises(Terminated):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        assert ended_by(ValueError("raised by a library that was interrupted")) == ("terminated", 143)
        ending()
        os.kill(os.getpid(), signal.SIGINT)  # ignored once the run has said how it ends
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert ended_by(ValueError()) is None


def test_the_entry_stays_the_function_whoever_loads_the_command_line_first():
    # p2sim.cli.main (the module) is loaded on the first run, after the package: loading it must not turn
    # p2sim.cli.main (the package's attribute, the p2sim script's entry) into the module
    code = ("import importlib, p2sim.cli.main\nfrom p2sim.cli import main\n"
            "print(callable(main), importlib.import_module('p2sim.cli.main').__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout
    assert out.split() == ["True", "p2sim.cli.main"]
