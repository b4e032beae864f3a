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
