"""p2sim.studies.step_contention (and step_comm's contention): which collectives of a step run at the same time,
and how much each slows where they share links."""

from __future__ import annotations

import pytest

from p2sim.formalism.hierarchy import LoweredStep
from p2sim.formalism.semantics import Op
from p2sim.sim.simulator import Simulator
from p2sim.studies.step_contention import Window, axis_of, contended, windows
from p2sim.studies.step_time import finish_step, prepare_step, step_job, step_settings
from p2sim.studies.step_workload import training_for
from p2sim.topology import load_system
from p2sim.workload import load_model, step_collectives
from p2sim.workload.step import StepCollective
from p2sim.workload.training import TrainingSpec


def _cols(data_parallel: str, sizes: dict[str, int]):
    t = TrainingSpec(seq_length=8192, global_batch=64, data_parallel=data_parallel)
    return step_collectives(load_model("llama3-8b"), t, sizes)


def test_ddp_has_one_window_the_backward_with_one_reduction_and_a_micro_batchs_calls():
    cols = _cols("ddp", {"tensor": 8, "pipeline": 4, "data": 8})
    (w,) = windows(cols, "ddp", 8)
    assert w.phase == "backward"
    calls = {(axis_of(c), c.op): k for c, k in w.members}
    # 2 L/p = 16 tensor AllReduces per micro-batch's backward, one pipeline send, the one gradient AllReduce
    assert calls == {("tensor", "AllReduce"): 16.0, ("pipeline", "SendRecv"): 1.0, ("data", "AllReduce"): 1.0}


def test_fsdp_windows_take_each_micro_batchs_share_of_the_gathers():
    cols = _cols("fsdp", {"tensor": 8, "pipeline": 4, "data": 8})
    found = {w.phase: w for w in windows(cols, "fsdp", 8)}
    assert set(found) == {"forward", "backward"}
    gathers = [k for c, k in found["forward"].members if axis_of(c) == "data"]
    assert gathers == [8.0]  # L/p x m = 64 per step: 8 per micro-batch


def test_no_window_without_a_data_collective_or_without_another_axis():
    assert windows(_cols("zero1", {"tensor": 8, "pipeline": 8}), "zero1", 8) == ()  # no data axis
    assert windows(_cols("zero1", {"data": 64}), "zero1", 1) == ()  # the reduction alone


def _collective(axes, op, size):
    return StepCollective(axes, op, size, 1, "backward", "", "")


@pytest.fixture(scope="module")
def sim():
    return Simulator(load_system("a100", nodes=4))


def _run(sim, placed):
    """contended() of one window: each collective on the groups ``placed`` gives it."""
    cols = list(placed)

    def lowered(c):
        return LoweredStep(Op(c.op), placed[c])

    one_call = {c: sim.step(lowered(c), (float(c.size),) * len(placed[c])).seconds for c in cols}
    return contended(sim, lowered, [Window("backward", tuple((c, 1.0) for c in cols))], one_call)


def test_two_equal_exchanges_of_two_axes_on_one_nic_take_twice_as_long(sim):
    # a100: GPUs 0 and 1 share a NIC; the data axis's exchange and the pipeline's cross it with equal bytes
    data = _collective(("data",), "SendRecv", 2**28)
    pipe = _collective(("pipeline",), "SendRecv", 2**28)
    slow = _run(sim, {data: ((0, 16),), pipe: ((1, 17),)})
    assert slow[data] == pytest.approx(2.0, rel=5e-3)
    assert slow[pipe] == pytest.approx(2.0, rel=5e-3)


def test_axes_on_disjoint_links_are_not_slowed_nor_run(sim):
    data = _collective(("data",), "SendRecv", 2**28)
    pipe = _collective(("pipeline",), "SendRecv", 2**28)
    assert _run(sim, {data: ((0, 16),), pipe: ((32, 48),)}) == {}


def test_the_others_start_one_after_another_beside_the_reduction(sim):
    # the reduction 4 units of bytes, two other axes 1 each, one NIC of 1 unit a second; the second starts when
    # the first would end alone (t = 1).  [0, 1]: two share, the first has 1/2 left; [1, 2.5]: three share, it
    # ends; [2.5, 3.5]: two share, the second ends (2.5 s after its start); [3.5, 6]: the reduction alone.
    # The reduction: 6 / 4 = 1.5 (every byte crosses the NIC once: the same in any order); the others 2.5 each
    data = _collective(("data",), "SendRecv", 2**28)
    pipe = _collective(("pipeline",), "SendRecv", 2**26)
    ctx = _collective(("context",), "SendRecv", 2**26)
    slow = _run(sim, {data: ((0, 16),), pipe: ((1, 17),), ctx: ((1, 17),)})
    assert slow[pipe] == pytest.approx(2.5, rel=2e-2)
    assert slow[ctx] == pytest.approx(2.5, rel=2e-2)
    assert slow[data] == pytest.approx(1.5, rel=2e-2)


def test_contention_only_lengthens_the_step_and_its_limit_skips_it():
    model = load_model("llama3-8b")
    text, extra = step_settings("global_batch=32,zero=1")
    training, _ = training_for("llama3-8b", text)
    job = step_job(model, "dgx-h100", 2, None)
    prep = prepare_step(job, {"tensor": 4, "pipeline": 2, "data": 2}, training, extra)
    full = finish_step(prep)
    alone = finish_step(prep, contention_limit=0.0)
    assert full.contended and not alone.contended
    assert sum(full.contention_seconds.values()) > 0  # the tensor collectives share NVLink with the reduction
    assert full.step_seconds >= alone.step_seconds
    for axis, seconds in full.exposed_comm_seconds.items():
        assert seconds >= alone.exposed_comm_seconds[axis]
    assert finish_step(prep, contention_limit=full.step_seconds * 2).step_seconds == full.step_seconds
