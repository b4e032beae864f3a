from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from p2sim.measurements.fit import Calibration, calibrate
from p2sim.measurements.fit_params import PARAMETERS, STAGES, applicable
from p2sim.measurements.collective_predict import predict_collectives
from p2sim.measurements.nccltests import read_nccltests
from p2sim.studies.executor import SerialExecutor
from p2sim.topology import find_spec
from p2sim.topology.settings import ModelRates

FULL = Path(__file__).parent / "data" / "nccltests" / "all_reduce_perf_full_range_dgx_h100.txt"


def test_a_full_range_log_fits_latencies_beside_bandwidths_within_1_3x_at_every_size():
    rows = read_nccltests(FULL, system="dgx-h100")
    assert min(r.size_bytes for r in rows) == 8 and max(r.size_bytes for r in rows) == 8 * 2**30
    fit = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=rows)
    lat = fit.to_json()["latencies_us"]
    assert set(lat) >= {"launch", "step_cost"}  # fitted where small sizes show them
    assert fit.rms_log_after < 0.5 * fit.rms_log_before
    ratios = [p.ratio for p in predict_collectives(rows, {"dgx-h100": fit.after})]
    assert all(1 / 1.3 <= r <= 1.3 for r in ratios), sorted(ratios)
    # no implausible figure absorbed the latency floor
    assert fit.warnings() == []


def test_large_sizes_alone_fit_no_latency():
    rows = [r for r in read_nccltests(FULL, system="dgx-h100") if r.size_bytes >= 2**28]
    fit = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=rows, max_evaluations=20)
    assert fit.to_json()["latencies_us"] == {}


def test_implausible_latencies_and_channel_rates_are_flagged():
    before = find_spec("dgx-h100")
    after = replace(before, rates=ModelRates(launch=80.0, step_latency=0.5, tree_channel_rate=0.19))
    w = Calibration("dgx-h100", "des", before, after, 1.0, 0.5, 10, 5, 3).warnings()
    assert len(w) == 3
    assert any("launch fitted to 80 us" in x for x in w) and any("step_latency fitted to 0.5 us" in x for x in w)
    assert any("tree_channel_rate fitted to 0.19 GB/s per channel" in x for x in w)
    # a TCP connection's network rate may be slow: not flagged
    tcp = find_spec("a100")
    slow = Calibration("a100", "des", tcp, replace(tcp, rates=ModelRates(tree_net_rate=0.6)), 1, 0.5, 1, 1, 1)
    assert slow.warnings() == []


# --- the parameter table's fit: synthetic logs from p2sim itself, robust loss, bounds, stages ---

LOG = Path(__file__).parent.parent / "validation" / "logs" / "hgx_h100_ib_2node_all_reduce_perf.txt"
KNOWN = {"launch": 6.0, "step_latency": 20.0}  # us: inside the table's bounds, away from them


def _synthetic(rates: dict[str, float], outlier: float | None = None) -> list:
    """The real log's out-of-place rows (every other size) with times p2sim predicts on dgx-h100 with ``rates``
    set: a log whose true parameters are known.  ``outlier`` multiplies one small row's time."""
    rows = [r for r in read_nccltests(LOG, system="dgx-h100") if not r.in_place][0::2]
    spec = find_spec("dgx-h100")
    truth = replace(spec, rates=replace(spec.rates, **rates))
    preds = predict_collectives(rows, {"dgx-h100": truth})
    out = [replace(p.row, seconds=p.seconds) for p in preds]
    if outlier is not None:
        out[2] = replace(out[2], seconds=out[2].seconds * outlier)
    return out


def _fitted(fit: Calibration) -> dict[str, float | None]:
    return {d["name"]: d["fitted"] for d in fit.to_json()["parameters"]}


def test_a_synthetic_log_gives_back_the_parameters_it_was_made_with():
    fit = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=_synthetic(KNOWN))
    got = _fitted(fit)
    assert abs(got["step_latency"] - KNOWN["step_latency"]) <= 0.1 * KNOWN["step_latency"], got
    assert abs(got["launch"] - KNOWN["launch"]) <= 2.0, got
    assert fit.rms_log_after < 0.02
    # the large sizes were generated from the data sheet's links: the large stage keeps them
    assert all(abs(fit.ratio(c) - 1.0) < 0.02 for c in fit.after.classes), fit.to_json()["classes"]


def test_one_outlier_row_hardly_moves_the_fit():
    clean = _fitted(calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=_synthetic(KNOWN)))
    noisy = _fitted(calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=_synthetic(KNOWN, outlier=4.0)))
    # a 4x row is 1.4 in log terms: squared, it would pull the launch cost tens of microseconds up
    assert abs(noisy["step_latency"] - clean["step_latency"]) <= 0.05 * clean["step_latency"], (clean, noisy)
    assert abs(noisy["launch"] - clean["launch"]) <= 1.5, (clean, noisy)


def test_the_fit_stays_within_every_parameters_bounds():
    slow = [replace(r, seconds=r.seconds * (50.0 if r.size_bytes < 2**20 else 1.0)) for r in _synthetic({})]
    fit = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=slow)
    doc = fit.to_json()
    assert doc["parameters"], doc
    for d in doc["parameters"]:
        if d["fitted"] is not None:
            assert d["lower"] <= d["fitted"] <= d["upper"] * (1 + 1e-9), d
    assert _fitted(fit)["launch"] == pytest.approx(50.0, rel=0.01)  # pressed against its bound, not beyond
    assert fit.warnings() == []


def test_the_parameter_table_names_where_each_lives_and_its_bounds_source():
    for row in PARAMETERS:
        assert row.where.split(".")[0] in ("classes", "model", "nccl") and row.stage in STAGES and row.source
    spec = find_spec("a3-mega")  # over TCP: the streams' rate joins the ramp stage
    names = [p.path for p in applicable(spec, ("tree",), True)]
    assert "model.stream_rate" in names and "classes.nic.bandwidth" in names
    assert "model.stream_rate" not in [p.path for p in applicable(find_spec("dgx-h100"), ("tree",), True)]


def test_the_fit_is_deterministic():
    rows = _synthetic(KNOWN)[::2]
    a = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=rows, max_evaluations=10)
    b = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=rows, max_evaluations=10)
    assert a.to_json() == b.to_json()
