from __future__ import annotations

from pathlib import Path

import pytest

from p2sim.measurements.inputs import load_inputs
from p2sim.util.errors import MeasurementError

DATA = Path(__file__).parent / "data" / "nccltests"


def test_a_log_with_more_ranks_per_host_than_the_system_has_gpus_is_refused():
    log = DATA / "all_reduce_perf_2node_h100.txt"
    with pytest.raises(MeasurementError, match=r"all_reduce_perf_2node_h100.txt:\d+: the measurement ran 8 ranks per "
                                               r"host, but ws-2080ti has 2 GPUs per node"):
        load_inputs(log, system="ws-2080ti")
    # fewer ranks per host than GPUs: each node's first GPUs
    rows = load_inputs(DATA / "all_reduce_perf_1node_h100.txt", system="superpod-h100").collectives
    assert rows and all(r.gpus_per_node == 8 for r in rows)


def test_an_unknown_system_names_the_log():
    with pytest.raises(MeasurementError, match=r"all_reduce_perf_1node_h100.txt:\d+: .*unknown system 'nosuch'"):
        load_inputs(DATA / "all_reduce_perf_1node_h100.txt", system="nosuch")


def test_a_repeated_nccl_tests_row_is_counted_once_with_a_warning(tmp_path, caplog):
    text = (DATA / "all_reduce_perf_1node_h100.txt").read_text().splitlines()
    row = next(i for i, line in enumerate(text) if line.strip().startswith("2097152 "))
    dup = tmp_path / "dup.txt"
    dup.write_text("\n".join(text[:row + 1] + [text[row]] + text[row + 1:]) + "\n")
    once = load_inputs(DATA / "all_reduce_perf_1node_h100.txt", system="dgx-h100").collectives
    twice = load_inputs(dup, system="dgx-h100").collectives
    assert len(twice) == len(once)
    assert "the same measurement" in caplog.text and "counted once" in caplog.text


def test_two_logs_of_one_configuration_that_disagree_are_refused(tmp_path):
    text = (DATA / "all_reduce_perf_1node_h100.txt").read_text()
    (tmp_path / "a.txt").write_text(text)
    slow = []
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "134217728":  # the largest size measured twice as slow
            t, alg, bus = (float(x) for x in parts[5:8])
            t2, alg2, bus2 = (float(x) for x in parts[9:12])
            line = (f"{parts[0]:>12}  {parts[1]:>12}  {parts[2]:>8}  {parts[3]:>6}  {parts[4]:>6}  {2 * t:7.1f}  "
                    f"{alg / 2:6.2f}  {bus / 2:6.2f}  {parts[8]:>6}  {2 * t2:7.1f}  {alg2 / 2:6.2f}  {bus2 / 2:6.2f}  "
                    f"{parts[12]:>6}")
        slow.append(line)
    (tmp_path / "b.txt").write_text("\n".join(slow) + "\n")
    with pytest.raises(MeasurementError, match=r"b.txt:\d+: seconds: .* but .*a.txt:\d+ measured the same "
                                               r"configuration .* 2x apart"):
        load_inputs(tmp_path, system="dgx-h100")
