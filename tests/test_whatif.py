from __future__ import annotations

from pathlib import Path

import pytest

from p2sim.report.whatif import whatif_text
from p2sim.studies.whatif import WhatifRequest, WhatifResult, run_whatif

from .test_fabric import fabric_text


def _row(label, nodes, matrix):
    return {"point": {}, "label": label, "nodes": nodes, "bytes_per_gpu": 1, "matrix": matrix, "algo": "ring",
            "program": "AllReduce(slice=0, Inside)", "seconds": 1.0, "speedup_over_allreduce": 1.0,
            "winner_changed": False, "best_per_matrix": [], "search": {}}


def test_placements_compare_within_a_node_count():
    req = WhatifRequest.build(system="h100", vary=["nodes=2,4"], workers=1)
    same = WhatifResult(req, ("a",), (0,), ("node", "gpu"), (_row("n=2", 2, [[2, 8]]), _row("n=4", 4, [[4, 8]])), ())
    assert not same.placement_changes and same.to_json()["placement_changes"] is False
    assert [(n, m) for n, m, _ in same.placements] == [(2, [[2, 8]]), (4, [[4, 8]])]
    moved = WhatifResult(req, ("a",), (0,), ("node", "gpu"),
                         (_row("x=1", 2, [[2, 8]]), _row("x=2", 2, [[2, 1], [1, 8]]), _row("x=3", 2, [[2, 8]])), ())
    assert moved.placement_changes
    assert moved.placements[0][2] == ["x=1", "x=3"]


@pytest.fixture
def fab(tmp_path) -> Path:
    path = tmp_path / "fab.toml"
    path.write_text(fabric_text(nodes_per_leaf=2, oversubscription=1.0, gpus=2, nics=1,
                                levels='{ name = "leaf", fabric = "leaf" }, '))
    return path


def test_varying_a_tier_and_a_fault_from_the_cli_layer(fab):
    req = WhatifRequest.build(system=str(fab), nodes=4, axes="data=4,tensor=2", reduce="data", workers=1,
                              algo="ring", bytes="1GiB", vary=["leaf.oversubscription=1,4"])
    res = run_whatif(req)
    assert [r["label"] for r in res.rows] == ["leaf.oversubscription=1", "leaf.oversubscription=4"]
    one, four = res.rows
    # a 4:1 spine can only slow the best program down; the best keeps the reduced axis in a leaf there
    assert four["seconds"] >= one["seconds"]
    assert four["matrix"][0][0] == 1
    text = whatif_text(res)
    assert "best placement" in text
    doc = res.to_json()
    assert {"nodes", "matrix", "points"} <= set(doc["best_placements"][0])
    slow = run_whatif(WhatifRequest.build(system=str(fab), nodes=4, axes="data=4,tensor=2", reduce="data", workers=1,
                                          algo="ring", bytes="1GiB", vary=["node3.speed=1,0.25"]))
    assert slow.rows[1]["seconds"] > slow.rows[0]["seconds"]
