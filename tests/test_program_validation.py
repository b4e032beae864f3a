from __future__ import annotations

import csv
import io
import math
from dataclasses import replace
from pathlib import Path

import pytest

from p2sim.measurements.fit import calibrate
from p2sim.studies.executor import SerialExecutor
from p2sim.measurements.program_rows import MeasuredRow, load_measurements
from p2sim.measurements.program_predict import RowPrediction
from p2sim.measurements.program_scores import metrics
from p2sim.measurements.program_validation import validate
from p2sim.util.errors import InputError
from p2sim.topology import find_spec
from p2sim.topology.settings import ModelRates

CSV = Path(__file__).resolve().parents[1] / "validation" / "data" / "measurements_2node.csv"


def subset(tmp_path, keep) -> Path:
    with CSV.open() as f:
        rows = list(csv.DictReader(f))
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(r for r in rows if keep(r))
    p = tmp_path / "subset.csv"
    p.write_text(out.getvalue())
    return p


def _row(matrix, algo="ring", ar=1.0, opt=1.0, better=0, axes=(2, 16)):
    return MeasuredRow("t.csv", 2, "a100", "A100", 2, axes, (0,), matrix, algo, 1.0, ar, opt, ar / opt, better)


def test_metrics_on_known_predictions():
    a, b = ((1, 2), (2, 8)), ((2, 1), (1, 16))
    ra, rb = _row(a, ar=2.0, opt=1.0, better=3), _row(b, ar=10.0, opt=10.0, better=3)
    good = [RowPrediction(ra, 4.0, 2.0, "x", 5), RowPrediction(rb, 20.0, 20.0, "AllReduce", 5)]
    m = metrics(good, {})
    assert m["top1_matrix"] == 1.0 and m["pairwise_order"] == 1.0 and m["beats_allreduce_accuracy"] == 1.0
    assert m["mape_allreduce"] == pytest.approx(1.0) and m["mape_optimal"] == pytest.approx(1.0)
    bad = [RowPrediction(ra, 30.0, 30.0, "AllReduce", 0), RowPrediction(rb, 1.0, 0.5, "x", 0)]
    m = metrics(bad, {})
    assert m["top1_matrix"] == 0.0 and m["pairwise_order"] == 0.0 and m["beats_allreduce_accuracy"] == 0.0
    assert m["misses"]["top1_matrix"] and m["misses"]["pairwise_order"] and len(m["misses"]["beats_allreduce"]) == 2
    assert m["programs_better_spearman"] is None  # fewer than three groups


def test_validation_end_to_end_on_a_subset(tmp_path):
    f = subset(tmp_path, lambda r: r["gpu"] == "A100" and r["axes"] == "2 16")
    rows = load_measurements(f)
    res = validate(rows, SerialExecutor(), "des")
    doc = res.to_json()
    assert doc["groups"] == 4 and len(doc["rows"]) == 8
    assert set(doc["metrics"]) >= {"top1_matrix", "pairwise_order", "beats_allreduce_accuracy", "mape_allreduce",
                                   "mape_optimal", "programs_better_spearman"}
    assert set(doc["baseline"]) == set(doc["metrics"])
    # with the reduction inside a node or across it, the uncalibrated simulator still orders the matrices
    assert doc["metrics"]["top1_matrix"] == 1.0 and doc["metrics"]["pairwise_order"] == 1.0
    assert doc["orders"] == [{"source": str(f), "order": "p2", "from": "P2's CSV: P2 lowered through XLA", "rows": 8}]
    assert {r["order"] for r in doc["rows"]} == {"p2"}
    row = doc["rows"][0]
    for key in ("gpu", "nodes", "axes", "reduce_axes", "matrix", "algo", "measured_allreduce_s", "measured_optimal_s",
                "predicted_allreduce_s", "predicted_optimal_s", "baseline_allreduce_s", "baseline_optimal_s",
                "predicted_programs_better", "predicted_best_program", "baseline_programs_better"):
        assert key in row


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_calibration_fits_the_nic_and_improves_the_error(tmp_path):
    f = subset(tmp_path, lambda r: r["gpu"] == "A100" and r["axes"] in ("2 16", "32") and r["algo"] == "ring")
    rows = load_measurements(f)
    fit = calibrate(rows, "a100", SerialExecutor(), "des", max_evaluations=12)
    assert fit.rms_log_after < 0.5 * fit.rms_log_before
    nic = fit.after.classes["nic"].bandwidth
    assert 1.0 < nic < 3.0  # measured times imply ~1.8 GB/s, far below the 8 GB/s file figure
    # no tree rows: no tree rate is fitted
    assert fit.after.rates.tree_net_rate is None and fit.after.rates.tree_channel_rate is None
    doc = fit.to_json()
    assert doc["classes"]["nic"]["file_GBps"] == 8.0


def test_calibrate_on_and_folds(tmp_path):
    f = subset(tmp_path, lambda r: r["gpu"] == "A100" and r["axes"] == "2 16" and r["algo"] == "ring")
    rows = load_measurements(f)
    with pytest.raises(InputError, match="folds"):
        validate(rows, SerialExecutor(), "des", None, 2)
    with pytest.raises(InputError, match="folds"):
        validate(rows, SerialExecutor(), "des", rows, 5)


def test_calibrated_spec_round_trips_through_toml():
    import tomllib

    from p2sim.topology.spec import parse_spec
    from p2sim.topology.toml_out import spec_to_toml

    spec = replace(find_spec("v100").with_class("nic", bandwidth=1.5),
                   rates=ModelRates(ring_channel_rate=20.0, tree_net_rate=0.8, ring_net_rate=math.inf),
                   notes="calibrated")
    back = parse_spec(tomllib.loads(spec_to_toml(spec, "a comment")), spec.source)
    assert back == spec


def _fit(system: str, after_bandwidths: dict[str, float]):
    from p2sim.measurements.fit import Calibration

    before = find_spec(system)
    after = before
    for c, bw in after_bandwidths.items():
        after = after.with_class(c, bandwidth=bw)
    return Calibration(system, "des", before, after, 1.0, 0.5, 10, 5, 3)


def test_calibration_flags_implausible_link_rates():
    # a100's file: nic 8, nvswitch 270, pcie 32 GB/s
    fit = _fit("a100", {"nvswitch": 12.0, "pcie": 70.0, "nic": 0.8})
    warnings = fit.warnings()
    assert len(warnings) == 2
    assert "nvswitch fitted to 12 GB/s, below a tenth of the file's 270 GB/s" in warnings[0]
    assert "pcie fitted to 70 GB/s, above twice the file's 32 GB/s" in warnings[1]
    doc = fit.to_json()
    assert doc["warnings"] == warnings and doc["classes"]["nic"]["ratio"] == pytest.approx(0.1)
    assert _fit("a100", {"nic": 16.0, "nvswitch": 27.0}).warnings() == []  # the bounds themselves are plausible


@pytest.mark.parametrize(("scored", "calibrated_on", "folds", "basis", "seen"), [
    (("2 8",), None, 1, "not calibrated", None),
    (("2 8",), ("2 8",), 1, "in sample", 4),
    (("2 8", "8 2"), ("2 8", "8 2"), 2, "out of sample", 0),
    (("2 8",), ("8 2",), 1, "out of sample", 0),
    (("2 8", "8 2"), ("2 8",), 1, "partly in sample", 4),
])
def test_calibration_basis_says_whether_scored_rows_were_calibration_rows(monkeypatch, scored, calibrated_on, folds,
                                                                          basis, seen):
    import p2sim.measurements.fit as fit_module

    # the fit itself is irrelevant here: keep the file's figures, count the rows it was given
    monkeypatch.setattr(fit_module, "calibrate",
                        lambda rows, system, executor, model, collectives=(): _fit(system, {}))
    rows = [r for r in load_measurements(CSV) if r.gpu == "V100" and r.algo == "ring"]
    pick = lambda sizes: [r for r in rows if " ".join(map(str, r.axes)) in sizes]  # noqa: E731
    cal = None if calibrated_on is None else pick(calibrated_on)
    doc = validate(pick(scored), SerialExecutor(), "analytic", cal, folds).to_json()
    b = doc["calibration_basis"]
    assert (b["basis"], b["rows_also_in_calibration"], b["folds"]) == (basis, seen, folds)
    assert b["scored_rows"] == len(doc["rows"])
