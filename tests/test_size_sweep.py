"""Size sweeps (``p2sim.studies.size_sweep``) and the ``p2sim sweep`` command."""

from __future__ import annotations

import json

import pytest

from p2sim.sim.sim_settings import SimSettings
from p2sim.studies.size_sweep import SweepRequest, run_sweep, sizes, sweep_cost, sweep_sizes
from p2sim.util.errors import InputError
from p2sim.topology import load_system

from .test_analysis_cli import run


def test_sizes_follow_nccl_tests():
    assert sizes(8, 64, 2) == [8, 16, 32, 64]
    assert sizes(1024, 5000, 4) == [1024, 4096]
    assert sizes(7, 7, 2) == [7]
    with pytest.raises(InputError, match="maxbytes"):
        sizes(64, 8, 2)
    with pytest.raises(InputError, match="stepfactor"):
        sizes(8, 64, 1)


def test_large_ring_reaches_the_nvswitch_port_rate():
    # DGX A100: 12 NVLink 3 links of 25 GB/s per GPU at NCCL's 20 GB/s each = 240 GB/s per
    # direction; a ring AllReduce's bus bandwidth approaches it from below as the size grows
    topo = load_system("dgx-a100", 1)
    pts = sweep_sizes(topo, "AllReduce", range(8), [2**33], SimSettings(algo="ring", proto="Simple"))
    assert 0.99 * 240e9 < pts[0].busbw <= 240e9 + 1e-3
    assert pts[0].algbw == pytest.approx(pts[0].busbw * 8 / 14)
    assert pts[0].count == 2**31 and pts[0].channels == 24


def test_time_grows_and_protocols_switch_with_size():
    topo = load_system("dgx-h100", 2)
    pts = sweep_sizes(topo, "AllReduce", range(16), sizes(8, 2**30, 8))
    secs = [p.seconds for p in pts]
    assert secs == sorted(secs)
    assert pts[0].proto == "LL" and pts[-1].proto == "Simple"
    assert pts[0].seconds > 5e-6  # NCCL's base latencies alone are several microseconds
    assert pts[-1].busbw > 100 * pts[0].busbw


def test_forced_choices_are_kept():
    topo = load_system("dgx-h100", 2)
    for algo in ("ring", "tree"):
        pts = sweep_sizes(topo, "AllReduce", range(16), [2**20, 2**26], SimSettings(algo=algo, proto="LL128"))
        assert {(p.algo, p.proto) for p in pts} == {(algo, "LL128")}


def test_every_collective_sweeps_and_bad_input_is_refused():
    topo = load_system("dgx-a100", 1)
    for c in ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"):
        (p,) = sweep_sizes(topo, c, range(4), [2**24])
        assert p.seconds > 0 and p.algo == "ring"
    with pytest.raises(InputError, match="collective"):
        sweep_sizes(topo, "AllToAllv", range(4), [8])
    with pytest.raises(InputError, match="two GPUs"):
        sweep_sizes(topo, "AllReduce", [0], [8])


def test_sweep_command_text_json_and_files(capsys, tmp_path):
    rc, out, err = run(capsys, "sweep", "--system", "dgx-h100", "--nodes", "1", "-C", "reduce_scatter_perf",
                       "-b", "1KiB", "-e", "1MiB", "-f", "4")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("# p2sim sweep: dgx-h100, 1 node(s) x 8 GPUs, ReduceScatter")
    assert any("algbw" in x and "busbw" in x for x in lines if x.startswith("#"))
    rows = [x for x in lines if x and not x.startswith("#")]
    assert [int(x.split()[0]) for x in rows] == [1024, 4096, 16384, 65536, 262144, 1048576]
    assert [int(x.split()[1]) for x in rows][:2] == [32, 128]  # nccl-tests prints ReduceScatter's count per rank
    rc, out, err = run(capsys, "sweep", "--system", "dgx-h100", "--nodes", "2", "--gpus-per-node", "4",
                       "-b", "1MiB", "-e", "4MiB", "--json", "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["gpus_per_node"] == 4 and doc["collective"] == "AllReduce"
    assert [p["size"] for p in doc["points"]] == [2**20, 2**21, 2**22]
    assert {"seconds", "algbw_GBps", "busbw_GBps", "algo", "proto", "channels"} <= set(doc["points"][0])
    assert sorted(f.name for f in (tmp_path / "rep").iterdir()) == ["sweep.html", "sweep.md", "sweep.png", "sweep.txt"]


def test_sweep_reads_sizes_as_nccl_tests_does(capsys):
    # all_reduce_perf -b 1MB -e 4MB runs 1 MiB to 4 MiB: parsesize reads the M and nothing after it
    rc, out, err = run(capsys, "sweep", "--system", "dgx-h100", "--nodes", "1", "-b", "1MB", "-e", "4mb", "--json")
    assert rc == 0, err
    assert [p["size"] for p in json.loads(out)["points"]] == [2**20, 2**21, 2**22]
    rc, out, err = run(capsys, "sweep", "--system", "dgx-h100", "--nodes", "1", "-b", "1TiB")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and "minbytes: '1TiB'" in err and "K, M or G" in err


def test_sweep_help_says_how_sizes_are_read(capsys):
    rc, out, _ = run(capsys, "sweep", "--help")
    assert rc == 0 and "1MB is 1 MiB" in " ".join(out.split())


@pytest.mark.parametrize("argv,field", [
    (("--gpus-per-node", "9"), "gpus-per-node"),
    (("-C", "alltoallv"), "collective"),
    (("-b", "1MiB", "-e", "1KiB"), "maxbytes"),
    (("-b", "lots"), "minbytes"),
    (("--engine", "baseline"), "engine"),
    (("--algo", "pat"), "algo"),
])
def test_sweep_command_errors(capsys, tmp_path, argv, field):
    rc, out, err = run(capsys, "sweep", "--system", "dgx-h100", "--nodes", "1", "--out", str(tmp_path / "o"), *argv)
    assert rc == 2 and out == "" and field in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("collective", ["AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce"])
def test_the_sweep_table_reads_back_as_an_nccl_tests_log(capsys, tmp_path, collective):
    # what sweep prints is an nccl-tests log: validate reads it and finds its own predictions
    rc, out, err = run(capsys, "sweep", "--system", "dgx-h100", "-C", collective, "-b", "1K", "-e", "64M", "-f", "8")
    assert rc == 0, err
    log = tmp_path / "sweep.txt"
    log.write_text(out)
    rc, out, err = run(capsys, "validate", "--system", "dgx-h100", "--measurements", str(log), "--json")
    assert rc == 0, err
    rows = json.loads(out)["collectives"]["rows"]
    assert len(rows) == 2 * 6 and {r["collective"] for r in rows} == {collective}
    assert {(r["nodes"], r["gpus_per_node"]) for r in rows} == {(2, 8)}
    for r in rows:  # times are printed to 0.01 us
        assert r["predicted_seconds"] == pytest.approx(r["measured_seconds"], abs=6e-9)


def _point(system: str, nodes: int, algo: str = "auto"):
    return run_sweep(SweepRequest.build(system, nodes, minbytes="1GiB", maxbytes="1GiB", algo=algo)).points[0]


@pytest.mark.slow  # sweeps fabrics of up to 1,984 GPUs
@pytest.mark.parametrize(("system", "partial", "below", "above", "algo"), [
    ("superpod-h100", 248, 224, 256, "collnet_chain"),  # 7 scalable units of 32 nodes and one of 24
    ("gb200-nvl72-pod", 20, 16, 24, "nvls_tree"),  # 2 scalable units of 8 racks and one of 4
])
def test_sweep_runs_on_a_partial_last_unit(system, partial, below, above, algo):
    """nccl-tests runs on any node count, so sweep does (it refused what was no whole number of units).

    NCCL's choice at 1 GiB moves each node's buffer once up its NICs and once down (CollNet Chain: the
    SuperPOD's SHARP switches reduce it; NVLS Tree: a tree of racks, each reduced on its NVSwitches): the
    1:1 fabric never binds, so the time depends on the node count only through NVLS Tree's pipeline fill,
    one loop per tree hop (20 and 24 racks: trees 5 deep, 16 racks: 4), and a partial unit's time is that of
    the whole-unit neighbour as deep. Forced to rings, every hop adds its network step latency: the bus
    bandwidth falls with the ring's length, and the partial unit's lies between its neighbours'."""
    p, lo, hi = _point(system, partial), _point(system, below), _point(system, above)
    assert p.algo == lo.algo == hi.algo == algo
    assert p.seconds == pytest.approx(hi.seconds, rel=1e-9) and p.seconds >= lo.seconds * (1 - 1e-9)
    r, rlo, rhi = (_point(system, n, "ring") for n in (partial, below, above))
    assert rlo.busbw > r.busbw > rhi.busbw


def test_alltoall_and_sendrecv_sweep_as_nccl_tests_runs_them():
    """alltoall_perf's size is whole floats per peer, its count per peer; busbw x (n-1)/n (sendrecv: x 1)."""
    from p2sim.studies.size_sweep import SweepRequest, nccl_tests_sizes, sweep_sizes
    from p2sim.topology import load_system

    assert nccl_tests_sizes("AllToAll", 8, [1000, 1024]) == [(992, 31), (1024, 32)]
    assert nccl_tests_sizes("SendRecv", 8, [1000]) == [(1000, 250)]
    assert SweepRequest.build("h100", collective="alltoall_perf").collective == "AllToAll"
    topo = load_system("h100", nodes=1)
    (a2a,) = sweep_sizes(topo, "AllToAll", range(8), [2**30])
    (sr,) = sweep_sizes(topo, "SendRecv", range(8), [2**30])
    assert (a2a.algo, a2a.proto) == ("p2p", "Simple") and a2a.busbw == pytest.approx(a2a.algbw * 7 / 8)
    assert sr.busbw == pytest.approx(sr.algbw)


def test_a_large_alltoall_sweep_is_refused_up_front_with_its_estimate(capsys, monkeypatch):
    """Issue 43: at 1,024 nodes an AllToAll (67 M transfers, each built with its route) ran out of memory part way,
    with no estimate; now it is refused before anything is built, with the estimate and the way out."""
    built = []
    monkeypatch.setattr("p2sim.studies.size_sweep.sweep_sizes", lambda *a, **k: built.append(a) or [])
    rc, out, err = run(capsys, "sweep", "-C", "alltoall", "--system", "dgx-h100", "--nodes", "1024")
    assert rc == 2 and out == "" and not built
    assert "67,100,672 transfers each" in err and "--yes runs it anyway" in err and "Traceback" not in err
    req = SweepRequest.build("dgx-h100", 1024, collective="alltoall", minbytes="1G", yes=True)  # --yes lifts it
    assert req.cost.memory > 2**35 and req.cost.seconds > 60


def test_an_alltoall_sweep_says_its_estimate_before_it_starts(capsys):
    rc, out, err = run(capsys, "sweep", "-C", "alltoall", "--system", "dgx-h100", "--nodes", "2", "-b", "1M", "-e", "4M")
    assert rc == 0
    assert "p2sim sweep: 3 sizes of AllToAll over 16 ranks: 240 transfers each" in err and "estimated" in err


def test_sweep_costs_grow_with_what_is_built():
    a2a = [sweep_cost("AllToAll", 8 * n, 8 * n, 3) for n in (64, 128)]
    assert a2a[1].memory / a2a[0].memory > 3 and a2a[1].seconds / a2a[0].seconds > 3  # quadratic in ranks
    ring = sweep_cost("AllReduce", 8 * 2048, 8 * 2048, 28)
    assert ring.seconds < 10 and "transfers" not in ring.what
    assert sweep_cost("SendRecv", 16, 16, 1).what.startswith("1 size of SendRecv over 16 ranks: 16 transfers")
