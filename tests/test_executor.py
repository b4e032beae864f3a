"""Executors: serial, process pool and Dask give the same results in the same order."""

from __future__ import annotations

import importlib.metadata
import logging
import time

import pytest

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
    import p2sim

    # the in-process workers report the installed version; pretend this client is another one
    monkeypatch.setattr(p2sim, "__version__", "0.0.0-other")
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
