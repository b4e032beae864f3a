"""rank, plan, whatif, validate and calibrate through the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .test_cli import run
from .test_program_validation import subset

BLUE = "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"


def rank_json(capsys, *argv):
    rc, out, err = run(capsys, "rank", "--json", "--workers", "1", *argv)
    assert rc == 0, err
    return json.loads(out)


def test_rank_reduction_inside_a_node_keeps_allreduce(capsys):
    doc = rank_json(capsys, "--system", "a100", "--axes", "2,16", "--reduce", "1", "--matrix", "[[2 1] [1 16]]")
    assert doc["top"][0]["program"] == "AllReduce(slice=0, Inside)"
    assert all(s["span"] == "inside a node" for s in doc["top"][0]["steps"])


@pytest.mark.parametrize("system", ["a100", "v100"])
def test_rank_across_nodes_prefers_reducescatter_allreduce_allgather(capsys, system):
    gpus = 16 if system == "a100" else 8
    # with rings forced, as P2 measured: keeping the NIC's share small wins
    doc = rank_json(capsys, "--system", system, "--axes", str(2 * gpus), "--top", "50", "--algo", "ring")
    by_text = {e["program"]: e for e in doc["top"]}
    assert by_text[BLUE]["speedup"] > 1.3
    assert doc["top"][0]["speedup"] > 1.3
    assert [s["span"] for s in by_text[BLUE]["steps"]] == ["inside a node", "across 2 nodes", "inside a node"]


@pytest.mark.parametrize("system", ["a100", "v100", "h100", "p2-16gpu"])
def test_rank_runs_on_every_shipped_system(capsys, system, tmp_path):
    doc = rank_json(capsys, "--system", system, "--algo", "both", "--top", "3", "--out", str(tmp_path))
    assert len(doc["top"]) == 3
    assert doc["top"][0]["seconds"] <= doc["top"][1]["seconds"] <= doc["top"][2]["seconds"]
    assert {m["algo"] for m in doc["matrices"]} == {"ring", "tree"}
    names = {p.name for p in tmp_path.iterdir()}
    assert {"report.md", "report.html", "programs.png", "best_vs_allreduce.png", "placement.png"} <= names
    assert b"data:image/png;base64" in (tmp_path / "report.html").read_bytes()


def test_rank_serial_and_parallel_agree(capsys):
    args = ["--system", "v100", "--axes", "4,4", "--algo", "both", "--top", "20"]
    a = rank_json(capsys, *args)
    rc, out, _ = run(capsys, "rank", "--json", "--workers", "2", *args)
    assert json.loads(out) == a


@pytest.mark.slow  # ranks the same job under every device order
def test_rank_compare_orders(capsys, tmp_path):
    args = ["--system", "a100", "--nodes", "4", "--axes", "8,2,4", "--reduce", "0,2", "--algo", "ring"]
    doc = rank_json(capsys, *args, "--matrix", "[[2 4] [1 2] [2 2]]", "--compare-orders", "--out", str(tmp_path))
    assert doc["order"] == "aligned"
    (c,) = doc["order_comparison"]
    assert c["matrix"] == [[2, 4], [1, 2], [2, 2]] and c["algo"] == "ring" and c["same_groups"] is False
    assert c["aligned"]["best_seconds"] == doc["matrices"][0]["best_seconds"]
    assert c["gain"] == pytest.approx(c["p2"]["best_seconds"] / c["aligned"]["best_seconds"]) and c["gain"] > 1.1
    # the p2 side is what a ranking in the p2 order finds
    p2 = rank_json(capsys, *args, "--matrix", "[[2 4] [1 2] [2 2]]", "--order", "p2")
    assert p2["order"] == "p2" and "order_comparison" not in p2
    assert (p2["matrices"][0]["best_seconds"], p2["matrices"][0]["best_program"]) == (
        c["p2"]["best_seconds"], c["p2"]["best_program"])
    assert "## Device orders" in (tmp_path / "report.md").read_text()
    rc, out, _ = run(capsys, "rank", "--workers", "1", *args, "--matrix", "[[4 2] [1 2] [1 4]]", "--compare-orders")
    assert rc == 0 and "device orders:" in out and "same groups under both orders" in out


def test_rank_one_reduction_axis_is_the_same_in_both_orders(capsys):
    args = ["--system", "v100", "--axes", "4,4", "--algo", "both", "--top", "50"]
    a = rank_json(capsys, *args, "--compare-orders")
    p = rank_json(capsys, *args, "--order", "p2")
    assert all(c["same_groups"] and c["gain"] == 1.0 for c in a["order_comparison"])
    assert {k: v for k, v in a.items() if k not in ("order", "order_comparison")} == \
        {k: v for k, v in p.items() if k != "order"}


def test_plan_and_whatif_state_the_order(capsys):
    rc, out, err = run(capsys, "plan", "--system", "a100", "--nodes", "4", "--axes", "8,2,4", "--reduction",
                       "0,2:1GiB", "--order", "p2", "--workers", "1", "--json")
    assert rc == 0, err
    assert json.loads(out)["order"] == "p2"
    rc, out, _ = run(capsys, "plan", "--system", "a100", "--nodes", "4", "--axes", "8,2,4", "--reduction",
                     "0,2:1GiB", "--workers", "1")
    assert "(data axis 0); aligned order;" in out
    rc, out, err = run(capsys, "whatif", "--system", "a100", "--nodes", "4", "--axes", "8,2,4", "--reduce", "0,2",
                       "--vary", "nic.bandwidth=8", "--algo", "ring", "--order", "p2", "--workers", "1")
    assert rc == 0 and "ring, des engine; p2 order)" in out, err


def test_plan_reports_best_default_and_savings(capsys):
    rc, out, err = run(capsys, "plan", "--system", "a100", "--axes", "4,8", "--reduction", "0:4GiB",
                       "--reduction", "1:512MiB x 24", "--workers", "1", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["reductions"][1] == {"axes": [1], "bytes": 2**29, "count": 24}
    totals = [p["total_seconds"] for p in doc["plans"]]
    assert totals == sorted(totals) and doc["best"] == doc["plans"][0]
    assert doc["default"]["matrix"] == [[2, 2], [1, 8]]  # model axis inside the node, data across
    for p in doc["plans"]:
        assert p["total_seconds"] == pytest.approx(sum(r["seconds"] * r["count"] for r in p["reductions"]))
        assert p["total_seconds"] <= p["allreduce_total_seconds"] * (1 + 1e-12)
    assert 0.0 <= doc["savings"]["vs_default_placement"] < 1.0
    rc, out, _ = run(capsys, "plan", "--system", "a100", "--axes", "4,8", "--reduction", "0:4GiB", "--workers", "1")
    assert rc == 0 and "default placement" in out


def test_plan_where_the_default_placement_is_wrong(capsys):
    # a data-parallel gradient far larger than the model-parallel traffic: data axis inside wins
    rc, out, _ = run(capsys, "plan", "--system", "a100", "--axes", "2,16", "--reduction", "0:8GiB",
                     "--reduction", "1:1MiB", "--workers", "1", "--json")
    doc = json.loads(out)
    assert doc["best"]["matrix"] != doc["default"]["matrix"]
    assert doc["savings"]["vs_default_placement"] > 0.5


def test_whatif_marks_winner_changes(capsys, tmp_path):
    rc, out, err = run(capsys, "whatif", "--system", "h100", "--vary", "nvswitch.bandwidth=5,50,450",
                       "--workers", "1", "--json", "--out", str(tmp_path))
    assert rc == 0, err
    pts = json.loads(out)["points"]
    assert [p["point"]["nvswitch.bandwidth"] for p in pts] == [5, 50, 450]
    # slow NVLink: keep the share inside the nodes small (reduce across them first)
    assert pts[0]["program"].startswith("ReduceScatter(slice=1, Parallel(0))") and pts[0]["speedup_over_allreduce"] > 1.2
    assert pts[-1]["program"] == "AllReduce(slice=0, Inside)"
    assert any(p["winner_changed"] for p in pts) and not pts[0]["winner_changed"]
    assert pts[0]["seconds"] > pts[-1]["seconds"]
    assert (tmp_path / "whatif.png").exists()
    # each point says what its bounded search simulated; --exhaustive simulates everything, same winners
    for p in pts:
        s = p["search"]
        assert s["exact"] and 0 < s["simulated"] <= s["programs"] and s["bounded_out"] == s["programs"] - s["simulated"]
    rc, out, _ = run(capsys, "whatif", "--system", "h100", "--vary", "nvswitch.bandwidth=5,50,450",
                     "--workers", "1", "--json", "--exhaustive")
    every = json.loads(out)["points"]
    assert [(p["matrix"], p["program"], p["seconds"]) for p in every] == [(p["matrix"], p["program"], p["seconds"])
                                                                          for p in pts]
    assert all(p["search"]["simulated"] == p["search"]["programs"] for p in every)
    assert json.loads(out)["level_names"] == ["node", "gpu"]
    rc, out, _ = run(capsys, "whatif", "--system", "a100", "--axes", "*,16", "--reduce", "0",
                     "--vary", "nodes=2,4", "--workers", "1", "--json")
    import math

    four = json.loads(out)["points"][1]
    assert four["point"] == {"nodes": 4}
    assert [math.prod(r) for r in four["matrix"]] == [4, 16]  # '*' absorbed the extra devices
    # the default buffer is P2's 2^29 x nodes floats at each point
    assert [p["bytes_per_gpu"] for p in json.loads(out)["points"]] == [2**29 * 2 * 4, 2**29 * 4 * 4]


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["rank", "--system", "a100", "--top", "0"], "top"),
        (["rank", "--system", "a100", "--algo", "ringo"], "algo"),
        (["rank", "--system", "a100", "--workers", "zero"], "workers"),
        (["plan", "--system", "a100", "--axes", "4,8"], "reduction"),
        (["plan", "--system", "a100", "--axes", "4,8", "--reduction", "2:1GiB"], "out of range"),
        (["plan", "--system", "a100", "--axes", "4,8", "--reduction", "0:lots"], "reduction size"),
        (["whatif", "--system", "a100", "--vary", "wifi.bandwidth=1"], "no link class 'wifi'"),
        (["whatif", "--system", "a100", "--vary", "nic.bandwidth=0"], "positive"),
        (["whatif", "--system", "a100", "--vary", "nodes=1.5"], "must be a whole number"),
        (["whatif", "--system", "a100"], "vary"),
        (["calibrate", "--measurements", "nonesuch.csv", "--system", "a100", "--out", "x.toml"], "no such"),
    ],
)
def test_analysis_bad_input(capsys, argv, msg):
    rc, out, err = run(capsys, *argv)
    assert rc != 0 and msg in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_validate_cli_json_and_report(capsys, tmp_path):
    f = subset(tmp_path, lambda r: r["gpu"] == "V100" and r["axes"] in ("2 8", "8 2"))
    out_dir = tmp_path / "report"
    rc, out, err = run(capsys, "validate", "--measurements", str(f), "--workers", "1", "--json", "--out", str(out_dir))
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["groups"] == 8 and len(doc["rows"]) == 16
    assert {"metrics", "baseline", "rows"} <= set(doc)
    assert {p.name for p in out_dir.iterdir()} == {"validation.md", "validation.html", "allreduce.png", "optimal.png"}
    md = (out_dir / "validation.md").read_text()
    assert f"device order p2 for {f} (16 rows; P2's CSV: P2 lowered through XLA)" in md
    r = doc["rows"][0]
    # each row shows measured, predicted and baseline counts of programs beating the AllReduce in their own columns
    assert re.search(rf"\|\s+{r['measured_programs_better']}\s+\|\s+{r['predicted_programs_better']}\s+\|\s+"
                     rf"{r['baseline_programs_better']}\s+\|", md)


def test_validate_says_which_order_it_predicts_in(capsys, tmp_path):
    f = subset(tmp_path, lambda r: r["gpu"] == "A100" and r["axes"] == "2 16" and r["algo"] == "ring")
    rc, out, err = run(capsys, "validate", "--measurements", str(f), "--workers", "1")
    assert rc == 0, err
    assert out.splitlines()[1] == f"device order p2 for {f} (4 rows; P2's CSV: P2 lowered through XLA)"


def test_validate_bad_file_writes_nothing(capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(Path(subset(tmp_path, lambda r: True)).read_text().replace("4.74,3.18", "4.74,quick"))
    out_dir = tmp_path / "never"
    rc, out, err = run(capsys, "validate", "--measurements", str(bad), "--out", str(out_dir))
    assert rc != 0 and f"{bad}:2: optimal_s" in err and not out_dir.exists()


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_calibrate_cli_writes_a_loadable_system(capsys, tmp_path):
    f = subset(tmp_path, lambda r: r["gpu"] == "A100" and r["axes"] == "2 16" and r["algo"] == "ring")
    toml = tmp_path / "a100-cal.toml"
    rc, out, err = run(capsys, "calibrate", "--measurements", str(f), "--system", "a100", "--out", str(toml),
                       "--workers", "1", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["classes"]["nic"]["fitted_GBps"] < 4.0
    rc, out, err = run(capsys, "simulate", "--system", str(toml), "--axes", "32", "--program",
                       "AllReduce(slice=0, Inside)", "--algo", "ring", "--json")
    assert rc == 0, err
    assert json.loads(out)["programs"][0]["total_seconds"] > 3.0  # about 4.7 s measured


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_calibrate_never_overwrites_its_system_file_unless_forced(capsys, tmp_path):
    from p2sim.topology import find_spec

    f = subset(tmp_path, lambda r: r["gpu"] == "A100" and r["axes"] == "2 16" and r["algo"] == "ring")
    mine = tmp_path / "a100.toml"
    mine.write_text(Path(find_spec("a100").source).read_text() + "# my notes\n")
    link = tmp_path / "link.toml"
    link.symlink_to(mine)
    for out in (mine, link):
        rc, _, err = run(capsys, "calibrate", "--measurements", str(f), "--system", str(mine), "--out", str(out),
                         "--workers", "1")
        assert rc == 2 and "an input (--system): writing it would replace it" in err
    assert mine.read_text().endswith("# my notes\n")
    rc, _, err = run(capsys, "calibrate", "--measurements", str(f), "--system", str(mine), "--out", str(mine),
                     "--workers", "1", "--force")
    assert rc == 0, err
    assert "Calibrated by p2sim calibrate" in mine.read_text()


@pytest.mark.parametrize(("system", "devices"), [("a100", 32), ("v100", 16), ("h100", 16), ("p2-16gpu", 16)])
def test_plan_and_whatif_on_every_shipped_system(capsys, system, devices):
    rc, out, err = run(capsys, "plan", "--system", system, "--axes", f"{devices // 4},4", "--reduction", "0:1GiB",
                       "--reduction", "1:64MiB x 4", "--workers", "1", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["plans"] and doc["best"]["total_seconds"] <= doc["default"]["total_seconds"]
    rc, out, err = run(capsys, "whatif", "--system", system, "--vary", "nic.bandwidth=4,400", "--algo", "ring",
                       "--workers", "1", "--json")
    assert rc == 0, err
    pts = json.loads(out)["points"]
    assert len(pts) == 2 and pts[1]["seconds"] <= pts[0]["seconds"]  # a faster NIC never hurts
