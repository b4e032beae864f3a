"""bench_nccl without a GPU: the numpy backend, the launcher, the store and the log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench_nccl.env import from_environment
from bench_nccl.errors import BenchError
from bench_nccl.logfile import completed, read_log, record_key
from bench_nccl.plan import plan_programs
from bench_nccl.store import StoreClient, StoreServer
from p2sim.semantics import Op

ROOT = Path(__file__).resolve().parents[1]
TINY3 = str(ROOT / "tests" / "data" / "tiny3.toml")
TIMING = {"seconds", "fastest_rank_seconds", "run_id", "time"}


def bench(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    r = subprocess.run([sys.executable, "-m", "bench_nccl", *args], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def strip(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


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


def test_three_level_configuration_every_program_verified(tmp_path):
    log = tmp_path / "run3.jsonl"
    bench("run", "--system", TINY3, "--backend", "numpy", "--bytes", "512B", "--warmup", "0", "--iters", "1",
          "--log", str(log))
    records = read_log(log)
    assert len(records) == 825 and all(x["pass"] is True for x in records)


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


def test_a_dying_rank_stops_the_others_and_the_log_keeps_its_records(tmp_path):
    log = tmp_path / "dead.jsonl"
    r = bench("run", "--system", "v100", "--nodes", "1", "--axes", "8", "--backend", "numpy", "--bytes", "1KiB",
              "--warmup", "0", "--iters", "2", "--log", str(log), "--timeout", "20", "--inject-failure", "3:4",
              check=False)
    assert r.returncode != 0
    assert "rank 3" in r.stderr and "injected failure" in r.stderr
    assert "Traceback" not in r.stderr
    records = read_log(log)
    assert len(records) == 4 and all(x["pass"] for x in records)


def test_missing_cupy_says_how_to_install_it(tmp_path):
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    r = bench("run", "--system", "v100", "--nodes", "1", "--log", str(tmp_path / "x.jsonl"), check=False)
    assert r.returncode != 0 and "pip install cupy-cuda12x" in r.stderr and "Traceback" not in r.stderr


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


def test_rank_from_launcher_variables(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "P2SIM_BENCH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    assert from_environment() is None
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("SLURM_NTASKS", "16")
    monkeypatch.setenv("SLURM_LOCALID", "1")
    with pytest.raises(BenchError, match="P2SIM_BENCH_TOKEN"):
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
    assert len(records) == 47 and all(r["pass"] is True for r in records)
    assert records[0]["backend"] == "nccl" and records[0]["nccl_algo"] == "Tree"
    assert records[0]["emulated"] is False
