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


_TABLE = """```txt
0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
0:            8             2     float     sum      -1    164.3    0.00    0.00      0    163.3    0.00    0.00      0
0:   2147483648     536870912     float     sum      -1    51406   41.78   78.33      0    51406   41.77   78.33      0
```
"""


def test_a_table_without_rank_lines_reads_with_the_layout_its_mapping_gives(tmp_path):
    (tmp_path / "p4de.txt").write_text(_TABLE)
    (tmp_path / "systems.csv").write_text("file,system,hca,algo,nodes,gpus_per_node,collective\n"
                                          "p4de.txt,p4d,,,2,8,AllReduce\n")
    rows = load_inputs(tmp_path).collectives
    assert [(r.system, r.collective, r.nodes, r.gpus_per_node, r.size_bytes) for r in rows[::2]] == [
        ("p4d", "AllReduce", 2, 8, 8.0), ("p4d", "AllReduce", 2, 8, 2147483648.0)]
    # without the layout: one line naming the file, the line and the missing field
    (tmp_path / "systems.csv").write_text("file,system,collective\np4de.txt,p4d,AllReduce\n")
    with pytest.raises(MeasurementError, match=r"p4de.txt:4: table: the table stops here without nccl-tests' "
                                               r"closing .* read when the log's nodes and gpus_per_node are given"):
        load_inputs(tmp_path)
    (tmp_path / "p4de.txt").write_text(_TABLE.replace("```\n", "# Avg bus bandwidth    : 39.17\n```\n"))
    with pytest.raises(MeasurementError, match=r"p4de.txt:2: Rank: no '#  Rank N \.\.\. on HOST device D' lines "
                                               r"before this table.*nodes and gpus_per_node are given"):
        load_inputs(tmp_path)


@pytest.mark.parametrize("columns, row, match", [
    ("nodes", "2", r"systems.csv:2: gpus_per_node: missing; nodes is given, and a log's layout needs both"),
    ("nodes,gpus_per_node", "2,eight", r"systems.csv:2: gpus_per_node: 'eight' is not a whole number >= 1"),
    ("nodes,gpus_per_node", "0,8", r"systems.csv:2: nodes: '0' is not a whole number >= 1"),
    ("collective", "all_reduce", r"systems.csv:2: collective: 'all_reduce' is not one of AllReduce"),
])
def test_a_mapping_with_a_bad_layout_names_its_line_and_field(tmp_path, columns, row, match):
    (tmp_path / "p4de.txt").write_text(_TABLE)
    (tmp_path / "systems.csv").write_text(f"file,system,{columns}\np4de.txt,p4d,{row}\n")
    with pytest.raises(MeasurementError, match=match):
        load_inputs(tmp_path)
