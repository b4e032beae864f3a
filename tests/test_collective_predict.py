from __future__ import annotations

import math

import pytest

from p2sim.measurements.collective_measurements import load_collective_csv
from p2sim.measurements.collective_predict import collective_metrics, predict_collectives, size_class


@pytest.fixture(scope="module")
def preds():
    return predict_collectives(load_collective_csv("validation/collectives/nccl_tests_dev.csv"))


def test_every_row_is_predicted_with_both_models(preds):
    assert len(preds) == 25
    for p in preds:
        assert p.seconds > 0 and p.baseline_seconds > 0 and math.isfinite(p.ratio)
    kinds = {p.kind for p in preds}
    assert kinds == {"single-node", "multi-node", "pcie"}


def test_forced_and_automatic_algorithms(preds):
    by = {p.row.ident: p for p in preds}
    assert by["27"].algo == "nvls" and by["36"].algo == "ring" and by["37"].algo == "tree"
    assert by["22"].algo == "ring"  # NVLS was asked for on A100, which has none: rings


def test_metrics_shape(preds):
    m = collective_metrics(preds)
    assert set(m) == {"des", "baseline"}
    assert m["des"]["all"]["rows"] == 25 and 0 < m["des"]["all"]["gsd"]
    assert -1 <= m["des"]["spearman"] <= 1
    assert size_class(8) == "small" and size_class(2**20) == "medium" and size_class(2**26) == "large"
