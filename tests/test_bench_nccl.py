"""bench_nccl without a GPU: the numpy backend, the launcher, the store and the log."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench_nccl.env import from_environment, store_address
from bench_nccl.errors import BenchError
from bench_nccl.logfile import completed, read_log, record_key
from bench_nccl.plan import plan_programs
from bench_nccl.store import StoreClient, StoreServer
from p2sim.util.errors import InputError
from p2sim.formalism.semantics import Op

ROOT = Path(__file__).resolve().parents[1]
TINY3 = str(ROOT / "tests" / "data" / "tiny3.toml")
TIMING = {"seconds", "fastest_rank_seconds", "run_id", "time", "steps"}


LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                 "TORCHELASTIC_RUN_ID", "P2SIM_BENCH_ADDR", "P2SIM_BENCH_PORT", "MASTER_ADDR", "MASTER_PORT")


def bench(*args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    r = subprocess.run([sys.executable, "-m", "bench_nccl", *args], cwd=ROOT, env=dict(base, **(env or {})),
                       capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def strip(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_two_level_configuration_every_program_verified(tmp_path):
    log = tmp_path / "run.jsonl"
    r = bench("run", "--system", "p2-16gpu", "--nodes", "1", "--backend", "numpy", "--bytes", "1KiB",
              "--warmup", "1", "--iters", "2", "--log", str(log))
    records = read_log(log)
    assert len(records) == 47 * 2 and all(x["pass"] is True for x in records)
    assert all(x["emulated"] is True and x["world_size"] == 8 for x in records)
    assert {x["program"] for x in records} == {p.text for p in plan_programs((1, 1, 2, 4), (8,), (0,), None, "all")}
    for field in ("system", "nodes", "matrix", "program", "algo", "bytes", "seconds", "host", "gpu_name",
                  "nccl_version", "cupy_version", "run_id", "iteration", "pass"):
        assert field in records[0]
    assert "records=94 programs=47 passed=94 failed=0" in r.stdout

    # validation reads the emulated log end to end, with per-program top-k accuracy
    v = subprocess.run([sys.executable, "-m", "p2sim", "validate", "--measurements", str(log), "--workers", "1",
                        "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert v.returncode == 0, v.stderr
    doc = json.loads(v.stdout)
    assert doc["groups"] == 1 and len(doc["rows"]) == 1
    assert {"top1_program", "top3_program", "top5_program", "top10_program"} <= set(doc["metrics"])
    s = bench("summary", str(log))
    assert "PASS (emulated)" in s.stdout


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_three_level_configuration_every_program_verified(tmp_path):
    log = tmp_path / "run3.jsonl"
    bench("run", "--system", TINY3, "--backend", "numpy", "--bytes", "512B", "--warmup", "0", "--iters", "1",
          "--log", str(log))
    records = read_log(log)
    assert len(records) == 825 and all(x["pass"] is True for x in records)
    assert {x["system"] for x in records} == {str(Path(TINY3).resolve())}  # found again by its path


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_logs_record_their_device_order_and_validate_reads_it_back(tmp_path):
    # axes 2,2,2 on 2 CPUs x 4 GPUs, reduce 0 and 2: axis 2 across the CPUs, axis 0 inside, so the orders differ
    args = ["run", "--system", "p2-16gpu", "--nodes", "1", "--axes", "2,2,2", "--reduce", "0,2",
            "--matrix", "[[1 1 1 2] [1 1 1 2] [1 1 2 1]]", "--backend", "numpy", "--bytes", "1KiB",
            "--warmup", "0", "--iters", "1"]
    bench(*args, "--order", "p2", "--log", str(tmp_path / "p2.jsonl"))
    bench(*args, "--log", str(tmp_path / "aligned.jsonl"))
    p2, aligned = read_log(tmp_path / "p2.jsonl"), read_log(tmp_path / "aligned.jsonl")
    assert len(p2) == len(aligned) == 47 and all(x["pass"] is True for x in p2 + aligned)
    assert {x["order"] for x in p2} == {"p2"} and {x["order"] for x in aligned} == {"aligned"}
    assert "(p2 order)" in bench("summary", str(tmp_path / "p2.jsonl")).stdout
    v = subprocess.run([sys.executable, "-m", "p2sim", "validate", "--measurements", str(tmp_path), "--workers", "1",
                        "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert v.returncode == 0, v.stderr
    doc = json.loads(v.stdout)
    assert doc["groups"] == 2  # one configuration, measured in each order: two groups
    assert sorted(r["order"] for r in doc["rows"]) == ["aligned", "p2"]
    assert sorted((o["order"], Path(o["source"]).name, o["from"]) for o in doc["orders"]) == [
        ("aligned", "aligned.jsonl", "recorded by bench_nccl"), ("p2", "p2.jsonl", "recorded by bench_nccl")]


def test_logs_without_an_order_were_run_in_the_aligned_order():
    rec = {"system": "a", "nodes": 1, "axes": [2], "reduce_axes": [0], "matrix": [[2]], "program": "p",
           "algo": "ring", "bytes": 1, "backend": "numpy", "iteration": 0}
    assert record_key(rec) == record_key(dict(rec, order="aligned")) != record_key(dict(rec, order="p2"))
    assert completed([rec]) == {record_key(dict(rec, order="aligned")): {0}}


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_interrupted_run_resumes_to_the_same_log(tmp_path):
    args = ["run", "--system", "v100", "--nodes", "1", "--axes", "2,4", "--reduce", "1", "--backend", "numpy",
            "--bytes", "2KiB", "--warmup", "1", "--iters", "3", "--algo", "tree"]
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    bench(*args, "--log", str(full))
    bench(*args, "--log", str(part), "--max-records", "4")
    assert len(read_log(part)) == 4
    # a record cut short by the interruption is dropped on resume
    with part.open("a") as f:
        f.write('{"system": "v100", "nod')
    bench(*args, "--log", str(part), "--resume")
    assert strip(read_log(part)) == strip(read_log(full))
    bench(*args, "--log", str(part), "--resume")  # nothing left to do
    assert len(read_log(part)) == len(read_log(full))


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_a_dying_rank_stops_the_others_and_the_log_keeps_its_records(tmp_path):
    log = tmp_path / "dead.jsonl"
    r = bench("run", "--system", "v100", "--nodes", "1", "--axes", "8", "--backend", "numpy", "--bytes", "1KiB",
              "--warmup", "0", "--iters", "2", "--log", str(log), "--timeout", "20", "--inject-failure", "3:4",
              check=False)
    assert r.returncode != 0
    assert "rank 3" in r.stderr and "injected failure" in r.stderr
    assert "Traceback" not in r.stderr
    # the launcher blames the rank that failed, not one its failure stopped
    assert r.stderr.strip().splitlines()[-1].startswith("bench_nccl: error: rank 3 failed"), r.stderr
    records = read_log(log)
    assert len(records) == 4 and all(x["pass"] for x in records)


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
@pytest.mark.parametrize("slow", [0, 1, 3])
def test_a_record_every_rank_measured_is_kept_when_a_rank_dies_before_it_is_logged(tmp_path, slow):
    # as on a loaded machine: one rank (rank 0, which logs, or another) reports its results late, after rank 3
    # has reported its last one and failed; what every rank measured must still reach the log
    log = tmp_path / "dead.jsonl"
    r = bench("run", "--system", "v100", "--nodes", "1", "--axes", "8", "--backend", "numpy", "--bytes", "1KiB",
              "--warmup", "0", "--iters", "2", "--log", str(log), "--timeout", "20", "--inject-failure", "3:4",
              "--inject-slow", f"{slow}:1.5", check=False)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("bench_nccl: error: rank 3 failed"), r.stderr
    records = read_log(log)
    assert len(records) == 4 and all(x["pass"] for x in records)


@pytest.mark.slow  # bench_nccl in subprocesses, signalled
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups, prctl")
@pytest.mark.parametrize("sig,status,word,group", [(signal.SIGTERM, 143, "terminated", False),
                                                   (signal.SIGINT, 130, "interrupted", True)])
def test_a_signal_stops_every_rank_in_one_line(tmp_path, sig, status, word, group):
    # SIGTERM to the launcher (a scheduler's time limit) killed it silently and left its ranks running to the end,
    # still writing the log; Ctrl-C (the whole process group) printed a KeyboardInterrupt traceback per rank
    log = tmp_path / "long.jsonl"
    base = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench_nccl", "run", "--system", "v100", "--nodes", "1", "--axes", "8", "--backend",
         "numpy", "--bytes", "1KiB", "--warmup", "0", "--iters", "100000", "--log", str(log)],
        cwd=ROOT, env=base, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: (os.setsid(), signal.signal(signal.SIGINT, signal.SIG_DFL)))  # as a terminal's job
    try:
        while not (log.exists() and log.read_text().count("\n") >= 1):  # the ranks are measuring
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.1)
        os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == status, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert err == f"bench_nccl: error: {word}; stopped every rank; the log keeps every completed record\n"
    kept = log.read_text()
    time.sleep(1)
    assert log.read_text() == kept  # no rank goes on writing


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_missing_cupy_says_how_to_install_it(tmp_path):
    block = tmp_path / "block"
    block.mkdir()
    (block / "cupy.py").write_text("raise ImportError('No module named cupy')\n")  # CuPy absent, even where installed
    for args in (["run", "--system", "v100", "--nodes", "1", "--log", str(tmp_path / "x.jsonl")], ["single"],
                 ["sweep", "--log", str(tmp_path / "y.jsonl")]):
        r = bench(*args, check=False, env={"PYTHONPATH": str(block)})
        assert r.returncode != 0 and "pip install cupy-cuda12x nvidia-nccl-cu12" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_bad_arguments_are_one_line(tmp_path):
    for args, msg in [
        (["run", "--system", "v100", "--nodes", "1", "--axes", "3,3", "--backend", "numpy"], "axes"),
        (["run", "--system", "v100", "--nodes", "1", "--programs", "AllReduce(slice=9)", "--backend", "numpy"],
         "program"),
        (["run", "--system", "nope", "--backend", "numpy"], "unknown system"),
        (["summary", str(tmp_path / "none.jsonl")], "no records"),
    ]:
        r = bench(*args, check=False)
        assert r.returncode != 0 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_store_serves_only_its_token_on_loopback():
    server = StoreServer("127.0.0.1", 0, "secret").start()
    try:
        assert server._server.server_address[0] == "127.0.0.1"
        good = StoreClient("127.0.0.1", server.port, "secret")
        good.set("k", "v")
        assert good.get("k") == "v" and good.add("n", 2) == 2
        assert good.wait(["k"], 1.0) == ["v"]
        with pytest.raises(BenchError, match="did not arrive"):
            good.wait(["never"], 0.2, "a peer")
        bad = StoreClient("127.0.0.1", server.port, "guess")
        with pytest.raises(BenchError, match="bad token"):
            bad.get("k")
    finally:
        server.close()
    with pytest.raises(BenchError, match="token"):
        StoreServer("127.0.0.1", 0, "")


def test_after_a_failure_a_wait_ends_only_when_no_rank_can_set_what_it_waits_for():
    import threading

    from bench_nccl.errors import StoppedByPeer

    server = StoreServer("127.0.0.1", 0, "t").start()
    try:
        waiter, worker = (StoreClient("127.0.0.1", server.port, "t") for _ in range(2))
        worker.set("b/start/1", "1")  # both take part
        got: list = []
        thread = threading.Thread(target=lambda: got.append(waiter.wait(["r/1"], 30)))
        thread.start()
        StoreClient("127.0.0.1", server.port, "t").set("abort", "rank 2: failed")
        thread.join(0.5)
        assert thread.is_alive()  # the worker still works: what it sets may be what the waiter waits for
        worker.set("r/1", "late")  # a result reported late, after the failure
        thread.join(10)
        assert got == [["late"]]
        # now both wait for what no one will set: both stop at once, not at their timeout
        done: list = []
        threads = [threading.Thread(target=lambda c=c: done.append(_stopped(c, StoppedByPeer))) for c in (waiter, worker)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert done == ["stopping: rank 2: failed"] * 2
    finally:
        server.close()


def _stopped(client, error) -> str:
    try:
        client.wait(["never"], 30)
    except error as e:
        return str(e)
    return "not stopped"


def test_the_launcher_kills_rank_zero_last():
    # rank 0 serves the store: killed first, the ranks still running each printed "rank 0 closed the connection"
    # before their own kill arrived (seen under CI's load after a SIGTERM to the launcher)
    from bench_nccl.launch import _kill_rank_zero_last

    events: list[tuple[str, int]] = []

    class Rank:
        def __init__(self, rank: int, running: bool) -> None:
            self.rank, self.running = rank, running

        def poll(self):
            return None if self.running else 0

        def kill(self) -> None:
            events.append(("kill", self.rank))
            self.running = False

        def wait(self) -> int:
            events.append(("wait", self.rank))
            return 0

    _kill_rank_zero_last([Rank(0, True), Rank(1, True), Rank(2, False), Rank(3, True)])
    assert events == [("kill", 1), ("kill", 3), ("wait", 1), ("wait", 2), ("wait", 3), ("kill", 0), ("wait", 0)]


def test_rank_from_launcher_variables(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "P2SIM_BENCH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    assert from_environment() is None
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("SLURM_NTASKS", "16")
    monkeypatch.setenv("SLURM_LOCALID", "1")
    with pytest.raises(InputError, match="P2SIM_BENCH_TOKEN"):
        from_environment()
    monkeypatch.setenv("P2SIM_BENCH_TOKEN", "t")
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.1")
    p = from_environment()
    assert (p.rank, p.world, p.local_rank, p.address) == (3, 16, 1, "10.0.0.1")


def test_plans_keep_chunks_packed_in_order():
    plans = plan_programs((1, 1, 2, 4), (8,), (0,), None, "all")
    for plan in plans:
        for rank, steps in plan.steps.items():
            rows = tuple(range(plan.chunks))
            for s in steps:
                assert s.rows_in == rows
                rows = s.rows_out
                if s.op is Op.ALL_GATHER and s.group:
                    assert sorted(s.gathered) == list(s.rows_out)
            assert rows == tuple(range(plan.chunks))  # every program ends with every chunk
    assert record_key({"system": "a", "nodes": 1, "axes": [2], "reduce_axes": [0], "matrix": [[2]],
                       "program": "p", "algo": "ring", "bytes": 1, "backend": "numpy"})


FAKEGPU = str(ROOT / "tests" / "fakegpu")


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
@pytest.mark.parametrize("split", ["1", "0"])
def test_nccl_backend_bookkeeping_with_a_stand_in_for_cupy(tmp_path, monkeypatch, split):
    """The nccl backend's calls, counts, roots and communicators, checked against a fake NCCL."""
    monkeypatch.setenv("PYTHONPATH", FAKEGPU + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("FAKE_GPUS", "8")
    monkeypatch.setenv("FAKE_NCCL_SPLIT", split)  # 0: CuPy without commSplit, one unique id per group
    log = tmp_path / "nccl.jsonl"
    bench("run", "--system", "p2-16gpu", "--nodes", "1", "--backend", "nccl", "--bytes", "1KiB", "--warmup", "1",
          "--iters", "1", "--algo", "tree", "--log", str(log))
    records = read_log(log)
    # every result right although the stand-in runs NCCL on the backend's own non-blocking stream (F1)
    assert len(records) == 47 and all(r["pass"] is True for r in records)
    # NCCL 2.27 (the stand-in's default): AllReduce as a tree, the rest as rings (F7)
    assert records[0]["backend"] == "nccl" and records[0]["nccl_algo"] == "Ring;allreduce:Tree"
    assert records[0]["emulated"] is False and records[0]["comm_split"] is (split == "1")


# --- the stand-in for CuPy, and the defects F1-F7 of issue 13 -------------------------------------------------

def fake_env(**kw: str) -> dict:
    """Environment of a run against the stand-in for CuPy and NCCL."""
    return {"PYTHONPATH": FAKEGPU + os.pathsep + os.environ.get("PYTHONPATH", ""), "FAKE_GPUS": "8", **kw}


def one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode != 0, r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    err = [x for x in r.stderr.strip().splitlines() if x.startswith("bench_nccl: error:")]
    assert len(err) == 1, r.stderr
    for n in needles:
        assert n in err[0], err[0]


def test_the_stand_in_sees_a_fill_racing_nccl():
    """F1's pattern fails under the stand-in: a fill on the default stream, NCCL on a non-blocking one."""
    code = """
import numpy as np, cupy
from cupy.cuda import nccl
comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
s = cupy.cuda.Stream(non_blocking=True)
def allreduce(make):
    x = make(); y = cupy.empty(x.shape, cupy.float32)
    comm.allReduce(x.data.ptr, y.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s.ptr)
    return bool((cupy.asnumpy(y, stream=s) == 3).all())
race = allreduce(lambda: cupy.zeros(4, cupy.float32) + 3)          # filled on the default stream
def synced():
    x = cupy.zeros(4, cupy.float32) + 3; cupy.cuda.Stream.null.synchronize(); return x
with s:
    same = allreduce(lambda: cupy.zeros(4, cupy.float32) + 3)      # filled on the NCCL stream
print(race, allreduce(synced), same)
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, **fake_env()),
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["False", "True", "True"], r.stderr


def test_single_goes_through_the_backend_on_one_gpu(tmp_path):
    """F6: single uses the backend, a one-rank commSplit, every collective as a step and as sweep calls."""
    calls = tmp_path / "calls.jsonl"
    r = bench("single", "--bytes", "4KiB", env=fake_env(FAKE_NCCL_LOG=str(calls)))
    lines = r.stdout.strip().splitlines()
    assert "communicator by commSplit of a one-rank world communicator" in lines[0]
    assert len(lines) == 16 and all(x.endswith("PASS") for x in lines[1:])
    made = [json.loads(x) for x in calls.read_text().splitlines()]
    assert [c["call"] for c in made[:3]] == ["init", "commSplit", "init"] and made[1]["n"] == 1
    assert {c["call"] for c in made} >= {"allReduce", "reduceScatter", "allGather", "reduce", "broadcast"}
    calls.unlink()
    r = bench("single", "--bytes", "4KiB", env=fake_env(FAKE_NCCL_LOG=str(calls), FAKE_NCCL_SPLIT="0"))
    assert "communicator by ncclCommInitRank" in r.stdout
    assert "commSplit" not in calls.read_text()


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_comm_split_only_with_nccl_2_18_at_build_and_run_time(tmp_path):
    """F4: CuPy 14 built against NCCL < 2.18 raises from commSplit: the per-group path runs instead."""
    for build, runtime in (("21703", "22703"), ("22703", "21703")):
        log, calls = tmp_path / f"{build}.jsonl", tmp_path / f"calls{build}.jsonl"
        bench("run", "--system", "v100", "--nodes", "1", "--axes", "2,4", "--reduce", "1", "--bytes", "1KiB",
              "--warmup", "0", "--iters", "1", "--log", str(log),
              env=fake_env(FAKE_NCCL_BUILD=build, FAKE_NCCL_VERSION=runtime, FAKE_NCCL_LOG=str(calls)))
        records = read_log(log)
        assert records and all(x["pass"] is True and x["comm_split"] is False for x in records)
        assert "commSplit" not in calls.read_text()


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_slurm_one_gpu_per_task(tmp_path):
    """F2: under srun --gpus-per-task 1 each task sees one GPU; local ranks 0 and 1 both use device 0."""
    log = tmp_path / "slurm.jsonl"
    port = free_port()
    env = fake_env(FAKE_GPUS="1", SLURM_NTASKS="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   P2SIM_BENCH_TOKEN="t0ken")
    procs = [start(["sweep", "-b", "1KiB", "-e", "4KiB", "-w", "0", "-n", "1", "--log", str(log)],
                   dict(env, SLURM_PROCID=str(r), SLURM_LOCALID=str(r))) for r in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    rows = read_log(log)
    assert len(rows) == 6 and all(x["wrong"] == 0 and x["ranks"] == 2 for x in rows)


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_torchrun_keeps_its_master_port(tmp_path):
    """F3: torchrun's store listens on MASTER_PORT; bench_nccl's store takes P2SIM_BENCH_PORT, else the next port."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = held.getsockname()[1]
    try:
        for extra in ({"P2SIM_BENCH_PORT": str(free_port())}, {}):
            if not extra and not port_free(taken + 1):
                continue
            log = tmp_path / f"t{len(extra)}.jsonl"
            env = dict(WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(taken), TORCHELASTIC_RUN_ID="job",
                       P2SIM_BENCH_TOKEN="t0ken", **extra)
            procs = [start(["sweep", "--backend", "numpy", "-b", "1KiB", "-e", "1KiB", "-w", "0", "-n", "1",
                            "--log", str(log)], dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(2)]
            outs = [p.communicate(timeout=120) for p in procs]
            assert [p.returncode for p in procs] == [0, 0], outs
            assert len(read_log(log)) == 2
    finally:
        held.close()


def test_address_is_refused_under_an_external_launcher(tmp_path):
    """--address is the local launcher's; a launched rank that gets another address says where to set it."""
    env = dict(WORLD_SIZE="2", RANK="1", LOCAL_RANK="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               P2SIM_BENCH_TOKEN="t0ken")
    for cmd in (["run", "--system", "h100", "--nodes", "1", "--backend", "numpy"],
                ["sweep", "--backend", "numpy", "-b", "1KiB", "-e", "1KiB"]):
        r = bench(*cmd, "--address", "10.9.9.9", "--log", str(tmp_path / "x.jsonl"), check=False, env=env)
        assert r.returncode == 2 and r.stderr.strip().splitlines() == [
            "bench_nccl: error: address: '10.9.9.9' is for the local launcher; ranks started by torchrun, mpirun "
            "or srun meet at P2SIM_BENCH_ADDR (default MASTER_ADDR): set that instead"], r.stderr


def test_store_address_variables(monkeypatch):
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    assert store_address() == ("127.0.0.1", 29533)
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    assert store_address() == ("10.0.0.1", 29500)
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job")
    assert store_address() == ("10.0.0.1", 29501)
    monkeypatch.setenv("P2SIM_BENCH_PORT", "40000")
    monkeypatch.setenv("P2SIM_BENCH_ADDR", "10.0.0.2")
    assert store_address() == ("10.0.0.2", 40000)
    monkeypatch.setenv("P2SIM_BENCH_PORT", "0x10")
    with pytest.raises(InputError, match="P2SIM_BENCH_PORT: '0x10' is not a port"):
        store_address()


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_gpu_failures_are_one_message(tmp_path):
    """F5: no usable driver, no NCCL, too few GPUs: one line from the preflight, no CUDA traceback."""
    driver = "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"
    log = str(tmp_path / "x.jsonl")
    for args in (["run", "--system", "v100", "--nodes", "1", "--log", log], ["sweep", "--log", log],
                 ["single", "--bytes", "1KiB"]):
        one_line_error(bench(*args, check=False, env=fake_env(FAKE_CUDA_ERROR=driver)), "CUDA", "nvidia-smi")
    one_line_error(bench("single", check=False, env=fake_env(FAKE_NCCL_AVAILABLE="0")), "cannot load NCCL")
    one_line_error(bench("run", "--system", "v100", "--nodes", "1", "--log", log, check=False,
                         env=fake_env(FAKE_GPUS="2")), "shows 2 GPU(s), the run needs 8")
    # a rank started by another launcher checks for itself
    r = bench("sweep", "--log", log, check=False,
              env=fake_env(FAKE_CUDA_ERROR=driver, RANK="0", WORLD_SIZE="1", P2SIM_BENCH_TOKEN="t",
                           P2SIM_BENCH_PORT=str(free_port())))
    one_line_error(r, "rank 0: CUDARuntimeError", "driver")


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_tree_on_old_nccl(tmp_path):
    """F7: before NCCL 2.19, NCCL_ALGO=Tree breaks every collective but AllReduce: refused with one message."""
    args = ["run", "--system", "v100", "--nodes", "1", "--axes", "2,4", "--reduce", "1", "--bytes", "1KiB",
            "--warmup", "0", "--iters", "1", "--algo", "tree"]
    r = bench(*args, "--log", str(tmp_path / "a.jsonl"), check=False, env=fake_env(FAKE_NCCL_VERSION="21503"))
    assert "NCCL 2.15.3 fails on AllGather, Broadcast, Reduce, ReduceScatter under NCCL_ALGO=Tree" in r.stderr
    assert "Traceback" not in r.stderr and r.returncode != 0
    bench(*args, "--log", str(tmp_path / "b.jsonl"), env=fake_env(FAKE_NCCL_VERSION="21903"))
    records = read_log(tmp_path / "b.jsonl")
    assert records and all(x["pass"] and x["nccl_algo"] == "Tree" for x in records)


# --- the sweep ------------------------------------------------------------------------------------------------

@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_sweep_prints_nccl_tests_table_and_logs_rows(tmp_path):
    from p2sim.collectives.busbw import bus_factor
    from p2sim.measurements.nccltests import parse_nccltests

    log = tmp_path / "sweep.jsonl"
    r = bench("sweep", "--backend", "numpy", "--ranks", "4", "-C", "reduce_scatter_perf", "-b", "1KiB",
              "-e", "64KiB", "-f", "4", "-w", "1", "-n", "2", "--log", str(log))
    rows = parse_nccltests(r.stdout, "printed.txt", system="h100")  # the printed table is nccl-tests' own layout
    assert [(x.size_bytes, x.in_place) for x in rows] == [(s, p) for s in (1024.0, 4096.0, 16384.0, 65536.0)
                                                          for p in (False, True)]
    assert {(x.collective, x.nodes, x.gpus_per_node) for x in rows} == {("ReduceScatter", 1, 4)}
    recs = read_log(log)
    assert len(recs) == 8 and all(x["kind"] == "sweep" and x["wrong"] == 0 and x["emulated"] for x in recs)
    for x in recs:
        assert x["count"] * 4 * 4 == x["size"]  # ReduceScatter: count per rank, size = the input
        assert x["algbw_GBps"] == pytest.approx(x["size"] / x["seconds"] / 1e9)
        assert x["busbw_GBps"] == pytest.approx(x["algbw_GBps"] * bus_factor("ReduceScatter", 4))
        assert x["seconds"] <= x["max_rank_seconds"]
    assert "sweep ReduceScatter" in bench("summary", str(log)).stdout


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_sweep_numpy_and_nccl_agree(tmp_path):
    """Every collective, in place and out of place: the stand-in NCCL and the numpy executor give equal results."""
    for coll in ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"):
        a, b = tmp_path / f"{coll}-np.jsonl", tmp_path / f"{coll}-nccl.jsonl"
        common = ["sweep", "-C", coll, "--ranks", "3", "-b", "64", "-e", "4KiB", "-f", "8", "-w", "0", "-n", "1"]
        bench(*common, "--backend", "numpy", "--log", str(a))
        bench(*common, "--log", str(b), env=fake_env())
        r = bench("compare", str(a), str(b))
        assert "all present in both, right, and equal" in r.stdout
    recs = read_log(b)
    recs[0]["checksum"] += 1
    b.write_text("".join(json.dumps(x) + "\n" for x in recs))
    r = bench("compare", str(a), str(b), check=False)
    assert r.returncode == 1 and "DIFFERENT" in r.stdout


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_sweep_catches_wrong_results(tmp_path):
    from p2sim.measurements.sweep_log import read_sweep_log
    from p2sim.util.errors import MeasurementError

    log = tmp_path / "bad.jsonl"
    r = bench("sweep", "--ranks", "2", "-C", "Broadcast", "-b", "1KiB", "-e", "1KiB", "-w", "0", "-n", "1",
              "--log", str(log), check=False, env=fake_env(FAKE_NCCL_CORRUPT="1"))
    assert r.returncode != 0 and "# Out of bounds values : 1024 FAILED" in r.stdout  # 256 floats x 2 ranks x 2
    assert [x["wrong"] for x in read_log(log)] == [512, 512]
    with pytest.raises(MeasurementError, match="wrong: 512 wrong elements"):
        read_sweep_log(log, system="h100")


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_sweep_with_a_system_and_bad_arguments(tmp_path):
    log = tmp_path / "s.jsonl"
    # -b/-e as nccl-tests reads them: 1KB is 1024 bytes (parsesize reads the K only)
    bench("sweep", "--backend", "numpy", "--system", TINY3, "-b", "1KB", "-e", "1kb", "-w", "0", "-n", "1",
          "--log", str(log))
    x = read_log(log)[0]
    # a system file in no catalogue is recorded by its path, so that validate finds it again
    assert (x["system"], x["ranks"], x["nodes"], x["gpus_per_node"], x["size"]) == (
        str(Path(TINY3).resolve()), 8, 2, 4, 1024)
    v = subprocess.run([sys.executable, "-m", "p2sim", "validate", "--measurements", str(log), "--allow-emulated",
                        "--workers", "1"], capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    for args, msg in [(["-C", "alltoall"], "collective: 'alltoall' is not one of"),
                      (["-C", "AllGather", "--algo", "tree"], "NCCL has a tree only for AllReduce"),
                      (["-b", "2KiB", "-e", "1KiB"], "minbytes: 2KiB is above maxbytes 1KiB"),
                      (["-e", "1TiB"], "maxbytes: '1TiB' is not a size nccl-tests reads"),
                      # measured only the first size, with exit 0, before
                      (["-b", "1KiB", "-e", "64KiB", "-f", "1", "--ranks", "2"], "stepfactor: 1 must be at least 2"),
                      ([], "--backend numpy needs --ranks"),
                      (["--system", "v100", "--ranks", "4"], "ranks: 4, but system v100 has 16 GPUs")]:
        r = bench("sweep", "--backend", "numpy", *args, "--log", str(log), check=False)
        one_line_error(r, msg)


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_program_log_has_per_step_bandwidths(tmp_path):
    from p2sim.collectives.busbw import bus_factor

    log = tmp_path / "p.jsonl"
    bench("run", "--system", "v100", "--nodes", "1", "--axes", "2,4", "--reduce", "1", "--backend", "numpy",
          "--bytes", "4KiB", "--warmup", "0", "--iters", "1", "--log", str(log))
    for rec in read_log(log):
        steps = rec["steps"]
        assert len(steps) == len(rec["program"].split(" ; "))
        assert sum(s["seconds"] for s in steps) == pytest.approx(rec["seconds"], rel=0.05)
        for s in steps:
            assert s["algbw_GBps"] == pytest.approx(s["bytes"] / s["seconds"] / 1e9)
            assert s["busbw_GBps"] == pytest.approx(s["algbw_GBps"] * bus_factor(s["op"], s["group_size"]))
        if rec["program"] == "AllReduce(slice=0, Inside)":
            assert [(s["op"], s["group_size"], s["groups"], s["bytes"]) for s in steps] == [("AllReduce", 4, 2, 4096)]


@pytest.mark.slow  # bench_nccl in subprocesses on the stand-in GPUs
def test_sweep_and_single_need_no_simulator(tmp_path):
    """The GPU smoke test runs where simpy is missing: sweep and single never import it."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "simpy.py").write_text("raise ImportError('simpy is blocked in this test')\n")
    env = {"PYTHONPATH": str(block)}
    bench("single", "--backend", "numpy", "--bytes", "1KiB", env=env)
    bench("sweep", "--backend", "numpy", "--ranks", "2", "-b", "1KiB", "-e", "1KiB", "-w", "0", "-n", "1",
          "--log", str(tmp_path / "s.jsonl"), env=env)
    r = bench("run", "--system", "v100", "--nodes", "1", "--backend", "numpy", "--log", str(tmp_path / "r.jsonl"),
              check=False, env=env)
    assert "simpy is blocked" in r.stderr  # the program mode does need it: the block works


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def start(args: list[str], env: dict) -> subprocess.Popen:
    base = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    return subprocess.Popen([sys.executable, "-m", "bench_nccl", *args], cwd=ROOT, env=dict(base, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
