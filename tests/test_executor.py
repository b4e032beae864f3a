"""Executors: serial, process pool and Dask give the same results in the same order."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import socket
import subprocess
import sys
import time
import types

import pytest

from p2sim.studies import executor
from p2sim.studies.executor import DaskExecutor, SerialExecutor, make_executor, run_all
from p2sim.util.errors import InputError

from .test_cli import run

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    """An in-process cluster: two single-threaded workers in this process."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as c:
        yield c


def _slow_square(x: int) -> int:
    time.sleep(0.02 * (5 - x))  # later items finish first
    return x * x


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


def test_dask_map_keeps_item_order(cluster):
    with distributed.Client(cluster) as client:
        assert list(DaskExecutor(client).map(_slow_square, range(5))) == [0, 1, 4, 9, 16]
        assert run_all(DaskExecutor(client), _slow_square, [4, 2]) == [16, 4]


def test_dask_map_raises_a_task_error(cluster):
    with distributed.Client(cluster) as client, pytest.raises(ValueError, match="three"):
        list(DaskExecutor(client).map(_fail_on_three, range(5)))


SWEEPS = [
    ("rank", "--system", "a100", "--axes", "4,8", "--reduce", "0", "--algo", "both", "--top", "100", "--json"),
    ("plan", "--system", "v100", "--axes", "2,8", "--reduction", "0:1GiB", "--reduction", "1:64MiB x 4", "--json"),
    ("whatif", "--system", "h100", "--vary", "nic.bandwidth=12.5,50", "--algo", "ring", "--json"),
]


@pytest.mark.parametrize("argv", SWEEPS, ids=[s[0] for s in SWEEPS])
def test_dask_pool_and_serial_give_identical_json(capsys, cluster, argv):
    outs = []
    for how in (("--workers", "1"), ("--workers", "2"), ("--scheduler", cluster.scheduler_address)):
        rc, out, err = run(capsys, *argv, *how)
        assert rc == 0, err
        outs.append(out)
    assert outs[0] == outs[1] == outs[2]


def test_workers_with_another_p2sim_are_refused(capsys, cluster, monkeypatch):
    from p2sim.util import version

    # the in-process workers report the installed version; pretend this client is another one
    monkeypatch.setattr(version, "__version__", "0.0.0-other")
    rc, out, err = run(capsys, "rank", "--system", "a100", "--axes", "4,8", "--scheduler", cluster.scheduler_address)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    installed = importlib.metadata.version("p2sim")
    assert f"has p2sim {installed}, this is p2sim 0.0.0-other" in err


def test_local_cluster_of_worker_processes(capsys):
    argv = ("rank", "--system", "h100", "--nodes", "1", "--axes", "2,4", "--reduce", "0", "--algo", "both", "--json")
    rc, serial, _ = run(capsys, *argv, "--workers", "1")
    rc, dask, err = run(capsys, *argv, "--scheduler", "local:1")
    assert rc == 0, err
    assert dask == serial


@pytest.mark.parametrize(("extra", "field"), [
    (("--scheduler", "local:0"), "scheduler"),
    (("--scheduler", "local:2", "--workers", "2"), "workers"),
])
def test_bad_scheduler_is_one_line(capsys, extra, field):
    rc, out, err = run(capsys, "rank", "--system", "a100", "--axes", "4,8", *extra)
    assert rc == 2 and out == "" and err.startswith(f"p2sim rank: error: {field}:") and len(err.splitlines()) == 1


def test_make_executor_kinds():
    with make_executor(1) as ex:
        assert isinstance(ex, SerialExecutor)
    with pytest.raises(InputError, match="workers"):
        with make_executor(0):
            pass


# -- a scheduler at an address: every failure is one line, soon -------------------------------------------

RANK = ("rank", "--system", "a100", "--axes", "4,8", "--reduce", "0", "--algo", "both", "--top", "100", "--json")
START_LIMIT_S = 20  # the spec: a scheduler that cannot serve fails within this


@pytest.fixture(scope="module")
def tcp_cluster():
    """An in-process cluster reached over TCP (as a remote one is): the address checks all run."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                                  dashboard_address=":0", silence_logs=logging.ERROR) as c:
        yield c


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_line_error(rc: int, out: str, err: str, field: str = "scheduler") -> str:
    assert rc == 2 and out == "", err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"p2sim rank: error: {field}: "), err
    return err


def _timed_run(capsys, *argv: str) -> tuple[str, float]:
    start = time.monotonic()
    rc, out, err = run(capsys, *argv)
    return _one_line_error(rc, out, err), time.monotonic() - start


@pytest.mark.slow  # waits out the scheduler's limit
def test_scheduler_without_workers_fails_within_the_limit():
    """The command line itself (another process): one line on stderr, no Dask log lines, exit status 2."""
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", dashboard_address=":0",
                                  silence_logs=logging.ERROR) as c:
        address = c.scheduler_address
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "p2sim", *RANK, "--scheduler", address], check=False,
                           capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - start
    assert elapsed < START_LIMIT_S + 2  # the interpreter's start and p2sim's import besides
    err = _one_line_error(r.returncode, r.stdout, r.stderr)
    assert f"no workers joined the scheduler at {address} within {executor.NO_WORKER_WAIT_S} s" in err
    assert f"start workers with dask worker {address}" in err


def test_unresolvable_host_fails_at_once_naming_resolution(capsys):
    err, elapsed = _timed_run(capsys, *RANK, "--scheduler", "tcp://nosuch.invalid:8786")
    assert "cannot resolve host 'nosuch.invalid': " in err
    assert elapsed < START_LIMIT_S


def test_refused_port_fails_at_once(capsys):
    address = f"tcp://127.0.0.1:{_free_port()}"
    err, elapsed = _timed_run(capsys, *RANK, "--scheduler", address)
    assert f"cannot connect to {address}: connection refused" in err
    assert elapsed < START_LIMIT_S


def test_address_defaults_to_tcp_and_port_8786(capsys):
    err, _ = _timed_run(capsys, *RANK, "--scheduler", "nosuch.invalid")
    assert "cannot resolve host 'nosuch.invalid'" in err
    assert executor.check_scheduler("nosuch.invalid") == "tcp://nosuch.invalid:8786"


class _Blackhole:
    """A socket whose connect never hears back (an address that drops packets)."""

    def __init__(self, *args):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def settimeout(self, seconds):
        self.timeout = seconds

    def connect(self, sockaddr):
        raise TimeoutError("timed out")


def test_address_where_nothing_answers_says_timed_out(capsys, monkeypatch):
    fake = types.SimpleNamespace(getaddrinfo=socket.getaddrinfo, SOCK_STREAM=socket.SOCK_STREAM, socket=_Blackhole)
    monkeypatch.setattr(executor, "socket", fake)
    err, _ = _timed_run(capsys, *RANK, "--scheduler", "tcp://127.0.0.1:8786")
    assert f"cannot connect to tcp://127.0.0.1:8786: no answer within {executor.PROBE_TIMEOUT_S} s (timed out" in err


def test_server_that_is_not_a_scheduler_fails_within_the_limit(capsys, monkeypatch):
    """It takes the TCP connection and says nothing: Client would wait for its handshake forever."""
    monkeypatch.setattr(executor, "CONNECT_TIMEOUT_S", 1)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        err, elapsed = _timed_run(capsys, *RANK, "--scheduler", address)
    assert f"{address} took the connection but did not answer as a Dask scheduler within 1 s" in err
    assert elapsed < START_LIMIT_S


@pytest.mark.parametrize("address", ["tcp://host:http", "tcp://[::1", "tcp://:8786", "two words"])
def test_bad_address_is_one_line(capsys, address):
    rc, out, err = run(capsys, *RANK, "--scheduler", address)
    assert "is not a scheduler address" in _one_line_error(rc, out, err)


# -- --scheduler-file ----------------------------------------------------------------------------------------

def _scheduler_file(tmp_path, address: str) -> str:
    path = tmp_path / "scheduler.json"
    # what dask scheduler --scheduler-file writes (abridged)
    path.write_text(json.dumps({"type": "Scheduler", "id": "Scheduler-1", "address": address, "services": {}}))
    return str(path)


def test_scheduler_file_gives_the_results_of_one_worker(capsys, tcp_cluster, tmp_path):
    path = _scheduler_file(tmp_path, tcp_cluster.scheduler_address)
    rc, serial, err = run(capsys, *RANK, "--workers", "1")
    assert rc == 0, err
    rc, dask, err = run(capsys, *RANK, "--scheduler-file", path)
    assert rc == 0, err
    assert dask == serial


def test_scheduler_file_in_the_api(tcp_cluster, tmp_path):
    import p2sim
    from p2sim.studies.rank import RankRequest

    path = _scheduler_file(tmp_path, tcp_cluster.scheduler_address)
    kwargs = {"system": "a100", "axes": "4,8", "reduce": "0", "top": 5}
    assert p2sim.rank(**kwargs, scheduler_file=path).to_json() == p2sim.rank(**kwargs, workers=1).to_json()
    run_options = RankRequest.build(**kwargs, scheduler_file=path).run
    assert run_options.scheduler == tcp_cluster.scheduler_address and run_options.scheduler_file == path
    assert run_options.where(3) == f"on Dask ({tcp_cluster.scheduler_address}, from {path})"
    with pytest.raises(InputError, match="^scheduler-file: give either --scheduler or --scheduler-file"):
        RankRequest.build(**kwargs, scheduler=tcp_cluster.scheduler_address, scheduler_file=path)
    with pytest.raises(InputError, match="^workers: .* with --scheduler-file"):
        RankRequest.build(**kwargs, workers=2, scheduler_file=path)


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such Dask scheduler file"),
    ("", "is empty"),
    ("{not json", ":1: not JSON"),
    ('{"id": "Scheduler-1"}', 'has no "address" text'),
    ('["tcp://127.0.0.1:8786"]', 'has no "address" text'),
    ('{"address": 8786}', 'has no "address" text'),
    ('{"address": "tcp://:8786"}', "is not a scheduler address"),
    ('{"address": "tcp://host:http"}', "is not a scheduler address"),
])
def test_bad_scheduler_file_is_one_line_naming_it(capsys, tmp_path, content, message):
    path = tmp_path / "scheduler.json"
    if content is not None:
        path.write_text(content)
    rc, out, err = run(capsys, *RANK, "--scheduler-file", str(path))
    err = _one_line_error(rc, out, err, "scheduler-file")
    assert str(path) in err and message in err


def test_scheduler_file_naming_a_dead_scheduler_says_so(capsys, tmp_path):
    path = _scheduler_file(tmp_path, f"tcp://127.0.0.1:{_free_port()}")
    rc, out, err = run(capsys, *RANK, "--scheduler-file", path)
    assert "connection refused" in _one_line_error(rc, out, err, "scheduler-file")


@pytest.mark.parametrize("extra", [("--scheduler", "tcp://127.0.0.1:8786"), ("--workers", "2")])
def test_scheduler_file_is_refused_with_scheduler_or_workers(capsys, tmp_path, extra):
    path = _scheduler_file(tmp_path, "tcp://127.0.0.1:8786")
    rc, out, err = run(capsys, *RANK, "--scheduler-file", path, *extra)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert ("not allowed with argument --scheduler" in err if extra[0] == "--scheduler"
            else err.startswith("p2sim rank: error: workers: "))


@pytest.mark.parametrize("command", ["rank", "plan", "whatif", "validate", "calibrate"])
def test_every_command_with_scheduler_has_scheduler_file(capsys, command):
    rc, out, _ = run(capsys, command, "--help")
    assert rc == 0 and "--scheduler-file FILE" in out


def test_help_states_the_executors_limits():
    from p2sim.cli.parser import build_parser

    rank = build_parser()._subparsers._group_actions[0].choices["rank"]
    text = rank._option_string_actions["--scheduler"].help
    assert f"port {executor.DEFAULT_PORT} when not given" in text
    assert f"fails within {executor.START_LIMIT_S} s" in text and f"joins in {executor.NO_WORKER_WAIT_S} s" in text


# -- during the run: no wait is unbounded ---------------------------------------------------------------------

def _sleepy(x: int) -> int:
    time.sleep(0.3)
    return x


def test_run_fails_when_every_worker_leaves(monkeypatch):
    monkeypatch.setattr(executor, "POLL_S", 0.2)
    monkeypatch.setattr(executor, "LOST_WORKERS_WAIT_S", 0.5)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as c, distributed.Client(c) as client:
        results = DaskExecutor(client, hint="start workers").map(_sleepy, range(20))
        assert next(results) == 0
        c.scale(0)
        start = time.monotonic()
        with pytest.raises(InputError, match="^scheduler: every worker left the scheduler at .* and none joined "
                                             "within 0.5 s; start workers"):
            list(results)
        assert time.monotonic() - start < START_LIMIT_S


def test_run_fails_when_the_scheduler_goes(monkeypatch):
    c = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                                 dashboard_address=":0", silence_logs=logging.ERROR)
    with executor._closing(distributed.Client(c.scheduler_address, timeout=2)) as client:
        results = DaskExecutor(client, where="tcp://here").map(_sleepy, range(20))
        assert next(results) == 0
        c.close()
        with pytest.raises(InputError, match="^scheduler: lost the connection to the scheduler at tcp://here"):
            list(results)


def _killed(x: int) -> int:
    raise distributed.KilledWorker(f"task-{x}", types.SimpleNamespace(address="tcp://worker"), 3)


def test_task_whose_workers_died_is_one_error(cluster):
    with distributed.Client(cluster) as client, pytest.raises(InputError, match="died 4 times"):
        list(DaskExecutor(client).map(_killed, range(2)))
