from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from p2sim.measurements.fit import Calibration, calibrate
from p2sim.measurements.collective_predict import predict_collectives
from p2sim.measurements.nccltests import read_nccltests
from p2sim.studies.executor import SerialExecutor
from p2sim.topology import find_spec
from p2sim.topology.settings import ModelRates

FULL = Path(__file__).parent / "data" / "nccltests" / "all_reduce_perf_full_range_dgx_h100.txt"


@pytest.mark.xfail(strict=True, reason=(
    "issue 33, left open: fitted, NCCL's model sits on a knife-edge at 1 MiB on one DGX H100 (ring/LL 28.01 us "
    "against nvls/Simple 28.28 us), it runs ring/LL there, and p2sim's ring/LL at 512 KiB - 1 MiB is about 1.4x "
    "faster than the log: a ramp mechanism the model lacks, which no bounded parameter bends"))
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
