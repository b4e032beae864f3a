from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from p2sim.measurements.fit import Calibration, _collective_residuals, calibrate, rate_rows, robust_cost
from p2sim.measurements.fit_params import PARAMETERS, STAGES, applicable
from p2sim.measurements.collective_predict import predict_collectives
from p2sim.measurements.nccltests import read_nccltests
from p2sim.studies.executor import SerialExecutor
from p2sim.topology import find_spec
from p2sim.topology.settings import ModelRates

FULL = Path(__file__).parent / "data" / "nccltests" / "all_reduce_perf_full_range_dgx_h100.txt"


@pytest.fixture(scope="module")
def full_fit() -> tuple[list, Calibration]:
    rows = read_nccltests(FULL, system="dgx-h100")
    assert min(r.size_bytes for r in rows) == 8 and max(r.size_bytes for r in rows) == 8 * 2**30
    return rows, calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=rows)


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_a_full_range_log_fits_latencies_beside_bandwidths_and_keeps_its_large_sizes(full_fit):
    rows, fit = full_fit
    lat = fit.to_json()["latencies_us"]
    assert set(lat) >= {"launch", "step_cost"}  # fitted where small sizes show them
    # the final joint stage finds what the stages alone cannot (a faster NVSwitch with a per-chunk cost:
    # the stages alone stop at 0.83 of the file's error)
    assert fit.rms_log_after < 0.7 * fit.rms_log_before
    large = rate_rows(rows)
    assert robust_cost(_collective_residuals(large, "dgx-h100", fit.after, "des")) <= \
        robust_cost(_collective_residuals(large, "dgx-h100", fit.before, "des"))
    # no implausible figure absorbed the latency floor
    assert fit.warnings() == []


@pytest.mark.xfail(strict=True, reason=(
    "issue 33, left open: fitted, NCCL's model sits on a knife-edge at 1 MiB on one DGX H100 (ring/LL 28.01 us "
    "against nvls/Simple 28.28 us), it runs ring/LL there, and p2sim's ring/LL at 512 KiB - 1 MiB is about 1.4x "
    "faster than the log: a ramp mechanism the model lacks, which no bounded parameter bends"))
@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_a_full_range_log_fits_within_1_3x_at_every_size(full_fit):
    rows, fit = full_fit
    ratios = [p.ratio for p in predict_collectives(rows, {"dgx-h100": fit.after})]
    assert all(1 / 1.3 <= r <= 1.3 for r in ratios), sorted(ratios)


@pytest.mark.slow  # a calibration fit (scipy least squares)
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


def _times(fit: Calibration, rows: list) -> list[float]:
    return [p.seconds for p in predict_collectives(rows, {"dgx-h100": fit.after})]


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_a_synthetic_log_is_fitted_and_its_other_sizes_predicted():
    # launch and the network step both add a constant to every 2-node row of this log: their sum is what the
    # rows determine, not each (the fit may trade one for the other), so the test is on times, not values
    made = _synthetic(KNOWN)
    fit = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=made[0::2])
    assert fit.rms_log_after < 0.02
    # the sizes it never saw, predicted as the true parameters predict them
    for got, want in zip(_times(fit, made[1::2]), [r.seconds for r in made[1::2]]):
        assert abs(got / want - 1.0) < 0.05, (got, want)
    # the large sizes were generated from the data sheet's links: the fit keeps them
    assert all(abs(fit.ratio(c) - 1.0) < 0.02 for c in ("nic", "spine")), fit.to_json()["classes"]


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_one_outlier_row_hardly_moves_the_fit():
    made = _synthetic(KNOWN)
    clean = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=made)
    noisy = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=_synthetic(KNOWN, outlier=4.0))
    # a 4x row is 1.4 in log terms: squared, it would pull the small sizes' fixed costs tens of microseconds up
    for a, b, r in zip(_times(clean, made), _times(noisy, made), made):
        if r is not made[2]:
            assert abs(b / a - 1.0) < 0.05, (r.size_bytes, a, b)


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_the_fit_stays_within_every_parameters_bounds():
    slow = [replace(r, seconds=r.seconds * (50.0 if r.size_bytes < 2**20 else 1.0)) for r in _synthetic({})]
    fit = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=slow)
    doc = fit.to_json()
    assert doc["parameters"], doc
    for d in doc["parameters"]:
        if d["fitted"] is not None:
            assert d["lower"] <= d["fitted"] <= d["upper"] * (1 + 1e-9), d
    # 50x slower small sizes are beyond what the bounded latencies can reach: the fit stays short of them
    # rather than absorbing them into an absurd figure
    small = [(p, r) for p, r in zip(_times(fit, slow), slow) if r.size_bytes < 2**10]
    assert all(r.seconds / p > 2.0 for p, r in small)
    assert fit.warnings() == []


def test_the_parameter_table_names_where_each_lives_and_its_bounds_source():
    for row in PARAMETERS:
        assert row.where.split(".")[0] in ("classes", "model", "nccl") and row.stage in STAGES and row.source
    spec = find_spec("a3-mega")  # over TCP: the streams' rate joins the ramp stage
    names = [p.path for p in applicable(spec, ("tree",), True)]
    assert "model.stream_rate" in names and "classes.nic.bandwidth" in names
    assert "model.stream_rate" not in [p.path for p in applicable(find_spec("dgx-h100"), ("tree",), True)]


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_the_fit_is_deterministic():
    rows = _synthetic(KNOWN)[::2]
    a = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=rows, max_evaluations=10)
    b = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=rows, max_evaluations=10)
    assert a.to_json() == b.to_json()


def test_one_small_size_is_refused_and_one_large_size_warned():
    from p2sim.util.errors import MeasurementError

    rows = read_nccltests(FULL, system="dgx-h100")
    small = [r for r in rows if r.size_bytes == 2**20]
    # one size cannot tell a fixed cost from a rate: the fit took it without a word before
    with pytest.raises(MeasurementError, match=r"every single-collective row measures one size \(1 MiB\): one size "
                                               "cannot tell the fixed costs from the rates"):
        calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=small)
    large = [r for r in rows if r.size_bytes == 2**30]
    fit = calibrate([], "dgx-h100", SerialExecutor(), "des", collectives=large, max_evaluations=10)
    assert fit.warnings()[0].endswith("every single-collective row measures one size (1 GiB): the fit sets the link "
                                      "rates only; the terms of smaller sizes keep the system file's figures "
                                      "(measure a range of sizes to fit them)")
    assert fit.to_json()["latencies_us"] == {}
