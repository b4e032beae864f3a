"""p2sim.sim.results: a step's result (its algorithm and protocol, one or mixed) and a program's."""

from __future__ import annotations

from p2sim.sim.results import ProgramResult, StepResult


def _step(seconds: float, choices: tuple[tuple[str, str, int], ...]) -> StepResult:
    return StepResult("AllReduce", seconds, 2, 16, 2, 2.0**30, choices)


def test_a_step_names_its_algorithm_and_protocol_or_mixed_when_its_groups_differ():
    one = _step(1.0, (("ring", "Simple", 8),))
    assert (one.algo, one.proto) == ("ring", "Simple")
    mixed = _step(1.0, (("ring", "LL128", 8), ("tree", "Simple", 4)))
    assert (mixed.algo, mixed.proto) == ("mixed", "mixed")
    same_algo = _step(1.0, (("ring", "LL128", 8), ("ring", "Simple", 8)))
    assert (same_algo.algo, same_algo.proto) == ("ring", "mixed")


def test_a_steps_json_lists_every_choice_and_leaves_the_trace_out():
    s = StepResult("AllGather", 0.5, 4, 8, 1, 1024.0, (("ring", "LL", 2),), trace=("flows",))
    assert s.to_json() == {"op": "AllGather", "seconds": 0.5, "groups": 4, "group_size": 8, "nodes_spanned": 1,
                           "buffer_bytes": 1024.0, "algo": "ring", "proto": "LL",
                           "choices": [{"algo": "ring", "proto": "LL", "channels": 2}]}
    assert s == StepResult("AllGather", 0.5, 4, 8, 1, 1024.0, (("ring", "LL", 2),))  # the trace is not compared


def test_a_programs_time_is_its_steps_in_turn():
    p = ProgramResult("AllReduce(slice=0, Inside)", (_step(1.5, ()), _step(0.25, ())))
    assert p.total_seconds == 1.75
    assert ProgramResult("", ()).total_seconds == 0
