"""Tuner ranges: where a forced algorithm/protocol beats NCCL's own choice, merged over neighbouring sizes."""

from __future__ import annotations

from p2sim.formalism.hierarchy import LoweredStep
from p2sim.formalism.semantics import Op
from p2sim.sim import SimSettings, Simulator
from p2sim.studies.tuner import communicators, tuner_ranges
from p2sim.topology import load_system

SIZES = [2**k for k in range(10, 31, 2)]


def test_every_range_is_faster_than_ncclls_choice_at_its_sizes():
    topo = load_system("dgx-h100", 2)
    group = tuple(range(16))
    rows = tuner_ranges(topo, "AllReduce", group, SIZES)
    assert rows, "the dgx-h100 two-node AllReduce has ranges where NCCL's choice loses (doctest of the module)"
    auto = Simulator(topo)
    for r in rows:
        assert r.gain >= 1.05 and r.min_bytes <= r.max_bytes and r.max_bytes in SIZES
        forced = Simulator(topo, SimSettings(r.algo, proto=r.proto))
        for size in (s for s in SIZES if r.min_bytes <= s <= r.max_bytes):
            step = LoweredStep(Op.ALL_REDUCE, (group,))
            default = auto.step(step, (float(size),))
            assert forced.step(step, (float(size),)).seconds * 1.05 < default.seconds
            assert "/".join(default.choices[0][:2]) == r.default
    # ranges never overlap and are in size order
    assert all(a.max_bytes < b.min_bytes for a, b in zip(rows, rows[1:]))


def test_a_higher_bar_keeps_fewer_sizes_and_an_impossible_one_none():
    topo = load_system("p5", 4)
    group = tuple(range(32))
    low = tuner_ranges(topo, "ReduceScatter", group, SIZES, 1.05)
    high = tuner_ranges(topo, "ReduceScatter", group, SIZES, 1.5)
    covered = lambda rows: {s for s in SIZES for r in rows if r.min_bytes <= s <= r.max_bytes}  # noqa: E731
    assert covered(high) <= covered(low)
    assert tuner_ranges(topo, "ReduceScatter", group, SIZES, 100.0) == []


def test_communicators_time_each_group_once_and_count_nodes():
    topo = load_system("dgx-h100", 2)
    steps = [LoweredStep(Op.REDUCE_SCATTER, ((0, 1, 2, 3, 4, 5, 6, 7), (8, 9, 10, 11, 12, 13, 14, 15))),
             LoweredStep(Op.ALL_REDUCE, ((0, 8), (1, 9))),
             LoweredStep(Op.ALL_GATHER, ())]
    comms = communicators(topo, steps, ["a", "b", "c"], SIZES)
    assert [(c.label, c.collective, c.members, c.nodes) for c in comms] == [
        ("a", "ReduceScatter", tuple(range(8)), 1), ("b", "AllReduce", (0, 8), 2)]
