from __future__ import annotations

import math

import pytest

from p2sim.measurements.collective_csv import load_collective_csv
from p2sim.measurements.collective_predict import collective_metrics, predict_collectives, size_class
from p2sim.util.errors import MeasurementError


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


# split runs (nccl-tests' NCCL_TESTS_SPLIT): every communicator at once, on the GPUs it ran on
def _split(name: str, system: str, size: float = 2.0**28):
    from dataclasses import replace

    from p2sim.measurements.nccltests import read_nccltests
    rows = [r for r in read_nccltests(f"tests/data/nccltests/all_reduce_perf_split_{name}_2x8.txt", system=system)
            if r.size_bytes == size and not r.in_place]
    alone = [replace(r, concurrent_groups=r.concurrent_groups[:1]) for r in rows]  # its first communicator only
    together, first = predict_collectives(rows + alone)
    return together, first


def test_split_communicators_share_the_nic_they_share():
    # v100: one NIC per node.  AND 0x7 makes 8 communicators of GPU c on each node: all 8 cross
    # that NIC, which carries 8x one communicator's bytes: at 256 MiB (bandwidth-bound) 8x its time
    together, first = _split("and7", "v100")
    assert together.row.groups == 8 and first.row.groups == 1
    assert 7.8 < together.seconds / first.seconds <= 8.0
    assert together.kind == "multi-node" and together.to_json()["concurrent_groups"] == 8
    # MOD 2: two communicators of 4 GPUs per node, through the one NIC: 2x
    together, first = _split("mod2", "v100")
    assert 1.9 < together.seconds / first.seconds <= 2.0
    # the baseline times each communicator alone
    assert together.baseline_seconds == pytest.approx(first.baseline_seconds, rel=1e-3)


def test_split_communicators_on_their_own_links_run_as_fast_as_one():
    # dgx-h100: a NIC per GPU, so the 8 communicators of AND 0x7 share no link
    together, first = _split("and7", "dgx-h100")
    assert together.seconds == pytest.approx(first.seconds, rel=1e-9)
    # DIV 8: one communicator per node
    together, first = _split("div8", "v100")
    assert together.seconds == pytest.approx(first.seconds, rel=1e-9) and together.kind == "single-node"


def test_split_ranks_must_fit_the_system():
    from p2sim.measurements.nccltests import read_nccltests
    from p2sim.util.errors import MeasurementError
    rows = read_nccltests("tests/data/nccltests/all_reduce_perf_split_and7_2x8.txt", system="perlmutter")[:1]
    with pytest.raises(MeasurementError, match="rank_places: rank 4 ran on CUDA device 4, but perlmutter has 4 GPUs"):
        predict_collectives(rows)


def test_predict_each_keeps_going_past_a_row_it_refuses(preds):
    from dataclasses import replace

    from p2sim.measurements.collective_predict import predict_each

    rows = [p.row for p in preds if p.row.ident in ("27", "36", "37")]
    # a DGX H100 has no CollNet (no SHARP plugin in its file): NCCL would refuse to run CollNet Direct
    refused = replace(rows[0], ident="x", algo="collnet_direct", collective="AllGather")
    with pytest.raises(MeasurementError):
        predict_collectives([refused])
    got, failed = predict_each([rows[0], refused, rows[1], rows[2]])
    assert [p.row.ident for p in got] == ["27", "36", "37"]  # in the rows' order
    assert [(r.ident, ":" in why) for r, why in failed] == [("x", True)]
    by = {p.row.ident: p for p in preds}
    assert all(p.seconds == by[p.row.ident].seconds for p in got)  # the same predictions as together


def test_a_row_is_predicted_under_the_environment_its_job_set(tmp_path):
    """NVLS on: NCCL's choice on two DGX H100 at 1 GiB is an NVLS algorithm; with NCCL_NVLS_ENABLE=0 it cannot be."""
    import dataclasses

    row = load_collective_csv("validation/collectives/nccl_tests_dev.csv")[0]
    row = dataclasses.replace(row, system="dgx-h100", nodes=2, gpus_per_node=8, collective="AllReduce", algo="auto",
                              proto="auto", size_bytes=2.0**30, hca=())
    on, off = predict_collectives([row, dataclasses.replace(row, env=(("NCCL_NVLS_ENABLE", "0"),))])
    assert on.algo.startswith("nvls") and not off.algo.startswith("nvls")
    assert off.seconds != on.seconds
