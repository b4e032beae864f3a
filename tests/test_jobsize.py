from __future__ import annotations

import logging
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.studies.jobsize import Limits, program_counts, synthesis_cardinalities
from p2sim.util.errors import InputError
from p2sim.formalism.placement import Placement, count_matrices, enumerate_matrices
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.synthesis import DEFAULT_MAX_SIZE, Profile, synthesize_placements

from .conftest import COUNT_ROWS, config_of


def test_program_counts_match_the_synthesis_on_every_appendix_row():
    for row in COUNT_ROWS:
        h, p, red = config_of(row)
        mats = enumerate_matrices(h, p)
        counts = program_counts(mats, red, Profile.PAPER, DEFAULT_MAX_SIZE, Limits())
        assert sum(counts) == int(row["programs_total"])
        syn = synthesize_placements(h, p, red)
        assert counts == [len(m.programs) for m in syn.matrices]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=1, max_size=4), st.data())
def test_count_matrices_equals_the_enumeration(h, data):
    n = math.prod(h)
    # axes: a random factorisation of the device count
    axes, rest = [], n
    for _ in range(data.draw(st.integers(0, 3))):
        divisors = [d for d in range(2, rest + 1) if rest % d == 0]
        if not divisors:
            break
        d = data.draw(st.sampled_from(divisors))
        axes.append(d)
        rest //= d
    axes.append(rest)
    assert count_matrices(h, axes) == len(enumerate_matrices(h, axes))


def test_synthesis_cardinalities_are_the_lowerings():
    for m in enumerate_matrices((4, 4, 4), (4, 4, 4)):
        for red in ((0,), (1, 2), (0, 1, 2)):
            assert synthesis_cardinalities(m, red) == Lowering.of(Placement.of((4, 4, 4), (4, 4, 4), m),
                                                                  red).synthesis.cardinalities


def test_limits():
    Limits.of(yes=True).check_simulations(10**9, "x")
    with pytest.raises(InputError, match="simulations: x make 11 simulations, more than the limit of 10"):
        Limits.of(max_simulations=10).check_simulations(11, "x")
    with pytest.raises(InputError, match="synthesis: the synthesis hierarchy"):
        Limits().check_synthesis([(1,) + (2,) * 7], 5)
    Limits.of(yes=True).check_synthesis([(1,) + (2,) * 7], 5)


def _p2sim(*argv: str, env: dict[str, str] | None = None, timeout: float = 60):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "p2sim", *argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.mark.slow  # 2,048 racks, in a subprocess
def test_a_job_estimated_too_big_is_refused_before_any_synthesis():
    # one axis over 2048 racks of gb200-nvl72-pod: one matrix whose synthesis hierarchy (1, 256, 8, 18, 4) has
    # 4 levels below its root and 147,456 devices; its synthesis alone is 1.4 s + 147,456 x 3.1 ms x
    # (147,456 / 16,384) ** 0.5 = 1,373 s, each matrix's AllReduce 147,456 GPU-steps x 0.3 us, so > 300 s:
    # refused (before, it started a synthesis of many minutes and gigabytes, with 1 simulation in view and no word)
    r = _p2sim("rank", "--system", "gb200-nvl72-pod", "--nodes", "2048", "--axes", "147456")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "p2sim rank: error: job: rank on gb200-nvl72-pod with 2048 nodes (1 matrix) would take about 23 min of CPU "
        "time (147,456 GPU-steps of flows over 147,456 GPUs, 1 process, and 23 min of program synthesis), more "
        "than the limit of 300 s; --matrix M (one matrix), fewer --nodes or a smaller --max-size make it smaller, "
        "--yes runs it anyway"]


def test_the_cost_counts_gpus_steps_and_points():
    from p2sim.studies.jobsize import STEP_SECONDS_PER_GPU, JobCost, estimate

    cost = estimate(1000, 2, 2 * 1000 * 40, 1, [(1, 4, 8), (1, 4, 8), (1,)])  # one (d) of 2 levels, 32 devices
    assert cost.synthesis_seconds == pytest.approx(0.07 + 32 * 156e-6)
    assert cost.seconds == pytest.approx(cost.synthesis_seconds + 80_000 * STEP_SECONDS_PER_GPU)
    with pytest.raises(InputError, match=r"^job: it would take about 12 min of CPU time .*--yes runs it anyway$"):
        Limits().check_cost(JobCost(10, 1, int(720 / STEP_SECONDS_PER_GPU), 1, 0.0, 0.0), "it", "less")
    Limits.of(yes=True).check_cost(JobCost(10, 1, 10**15, 1, 0.0, 0.0), "it", "less")  # --yes: no limit


def test_memory_above_half_the_address_space_limit_is_refused(monkeypatch):
    from p2sim.studies import jobsize

    monkeypatch.setattr(jobsize, "memory_limit", lambda: 2.0**30)
    with pytest.raises(InputError, match=r"about 1\.1[0-9]* GiB of memory .*limit of 1 GiB"):
        Limits().check_cost(jobsize.JobCost(1, 1, 1, 1, 0.0, 1.1 * 2**30), "it", "less")


def test_a_running_job_says_how_far_it_is_on_a_piped_stderr():
    # superpod-h100 at 32 nodes: bounding the programs takes about a second; a progress line every 0.02 s
    # (P2SIM_PROGRESS_S) shows on stderr although it is a pipe (before, tqdm's bar was all, and off there)
    r = _p2sim("rank", "--system", "superpod-h100", "--nodes", "32", "--axes", "data=4,pipe=8,tensor=8", "--reduce",
               "data", "--bytes", "1GiB", "--workers", "1", "--top-matrices", "1", env={"P2SIM_PROGRESS_S": "0.02"},
               timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert any(line.startswith("p2sim rank: bounding: ") and "%)" in line for line in lines), lines
    assert all(line.startswith("p2sim rank: ") for line in lines), lines


def test_the_synthesis_costs_more_per_device_above_16384_devices():
    from p2sim.studies.jobsize import synthesis_cost

    # (1,256,8,8) is where the per-device figures were measured (11.3 s, 497 MiB); (1,512,8,8) took 1,376 MiB and
    # (1,2048,8,8) ran past 8 GB in the whatif on roce-h100 at 16,384 nodes: the estimate must foresee
    # that (before, it said 3.9 GiB: flat per device)
    seconds, memory = synthesis_cost([(1, 256, 8, 8)])
    assert seconds == pytest.approx(0.3 + 16384 * 690e-6) and memory == 16384 * 31 * 2**10
    assert synthesis_cost([(1, 512, 8, 8)])[1] == pytest.approx(32768 * 31 * 2**10 * 2**0.5)
    assert synthesis_cost([(1, 2048, 8, 8)])[1] > 8 * 2**30


def test_the_whatif_that_ran_out_of_memory_is_refused_up_front(monkeypatch):
    from p2sim.studies import jobsize
    from p2sim.studies.whatif import WhatifRequest, run_whatif

    # a 16 GB machine, half of it the limit: before, the estimate (3.9 GiB of synthesis, 5.2 GiB in all) let the
    # job start its synthesis of (1,2048,8,8), which grew past 8 GB (a MemoryError after 192 s in the issue);
    # the synthesis is not to start at all here
    monkeypatch.setattr(jobsize, "memory_limit", lambda: 8.0 * 2**30)

    def no_synthesis(*args, **kwargs):
        raise AssertionError("the synthesis started")

    monkeypatch.setattr(jobsize, "synthesize", no_synthesis)
    req = WhatifRequest.build(system="roce-h100", nodes=16384, vary=["routing=ecmp,adaptive"], workers=1)
    with pytest.raises(InputError, match=r"^job: whatif on roce-h100 over 2 points \(16384 nodes at the largest\) "
                                         r"would take about [0-9.]+ GiB of memory .*--yes runs it anyway$"):
        run_whatif(req)


def test_ecmp_gpu_steps_cost_more_and_say_so():
    from p2sim.studies.jobsize import ECMP_STEP_FACTOR, STEP_SECONDS_PER_GPU, estimate, hashed
    from p2sim.topology import find_spec

    assert hashed(find_spec("roce-h100")) and not hashed(find_spec("superpod-h100")) and not hashed(find_spec("h100"))
    plain = estimate(1024, 2, 2_000_000, 1, [])
    ecmp = estimate(1024, 2, 2_000_000, 1, [], hashed_gpu_steps=1_000_000)
    assert ecmp.seconds - plain.seconds == pytest.approx((ECMP_STEP_FACTOR - 1) * 1_000_000 * STEP_SECONDS_PER_GPU)
    assert f"(1,000,000 of them ECMP-hashed, {ECMP_STEP_FACTOR:g}x the cost)" in ecmp.text()
    assert "ECMP" not in plain.text()


@pytest.mark.slow  # bounds of 512-GPU fabrics
@pytest.mark.parametrize("system, nodes, axes", [("superpod-h100", 64, "data=16,pipeline=4,tensor=8"),
                                                ("roce-h100", 16, "data=4,pipeline=4,tensor=8")])
def test_the_estimate_counts_the_steps_and_collectives_the_bounds_build(monkeypatch, system, nodes, axes):
    # issue 34: after the fabric symmetry the GPU-step estimate said 14 min for a SuperPOD rank of 90 s;
    # the estimate now counts what the bounds compute (distinct steps, one collective per class of moved
    # groups; with ECMP every group alone) -- checked against the simulator's own, counted as it runs: every
    # bounded step, plus each matrix's AllReduce (simulated where the others are bounded), exactly
    from p2sim.collectives import step_fractions
    from p2sim.sim import moved, simulator
    from p2sim.studies import rank, step_counts
    from p2sim.studies.jobsize import StepCount

    got: list[StepCount] = []
    seen = StepCount()
    counting, bounding, stepping, simulating = (step_counts.step_counts, simulator.Simulator._step_bound,
                                                simulator.Simulator._step, simulator.Simulator.simulate)

    def classes(sim, step, volumes) -> int:
        return len(list(moved.moved_classes(sim.topo, step, volumes)))

    def counted(*args, **kwargs):
        out = counting(*args, **kwargs)
        got.extend(out.values())
        return out

    def bound(self, step, volumes):
        nonlocal seen
        seen += StepCount(0, 1, sum(map(len, step.groups)), classes(self, step, volumes))
        return bounding(self, step, volumes)

    def step(self, step, fractions, nbytes, bound=False, key=None):
        nonlocal seen
        seen += StepCount(int(bound))
        return stepping(self, step, fractions, nbytes, bound, key)

    def simulate(self, lowering, program, nbytes):
        nonlocal seen
        if program.text.startswith("AllReduce(") and ";" not in program.text:
            (s,), (f,) = lowering.lower(program), step_fractions(lowering, program)
            seen += StepCount(1, 1, sum(map(len, s.groups)), classes(self, s, [x * nbytes for x in f]))
        return simulating(self, lowering, program, nbytes)

    monkeypatch.setattr(step_counts, "step_counts", counted)
    monkeypatch.setattr(simulator.Simulator, "_step_bound", bound)
    monkeypatch.setattr(simulator.Simulator, "_step", step)
    monkeypatch.setattr(simulator.Simulator, "simulate", simulate)
    # a search for more than the matrices' AllReduces bounds every program whole: exactly what was counted
    req = rank.RankRequest.build(system=system, nodes=nodes, axes=axes, reduce="data", bytes="4GiB", workers=1,
                                 top=10**6)
    rank.run_rank(req)
    assert sum(got, StepCount()) == seen and seen.classes > seen.distinct
    # the top 10: programs that cannot win stop bounding part way (Simulator.lower_bound's cut), so the bounds
    # build fewer steps than counted, never more
    got.clear()
    seen = StepCount()
    rank.run_rank(rank.RankRequest.build(system=system, nodes=nodes, axes=axes, reduce="data", bytes="4GiB",
                                         workers=1))
    counted_all = sum(got, StepCount())
    assert seen.distinct < counted_all.distinct and seen.classes < counted_all.classes
    assert seen.program_steps < counted_all.program_steps


@pytest.mark.slow  # bounds of a 512-GPU fabric
def test_whatif_and_plan_estimate_their_bounds_as_rank_does(monkeypatch):
    # issue 34: whatif and plan estimated by GPU-steps (42 min and 17 min for SuperPOD jobs of a few minutes);
    # a bounded search of theirs now counts what its bounds build, as rank's: two what-if points build two
    # systems (twice rank's count), a plan of one reduction is rank's job, each matrix's AllReduce simulated
    from p2sim.studies import plan, rank, whatif
    from p2sim.studies.jobsize import Limits, StepCount

    costs: list = []
    checking = Limits.check_cost

    def check(self, cost, what, smaller):
        costs.append(cost)
        return checking(self, cost, what, smaller)

    monkeypatch.setattr(Limits, "check_cost", check)
    job = dict(system="superpod-h100", nodes=64, axes="data=16,pipeline=4,tensor=8", workers=1)
    rank.run_rank(rank.RankRequest.build(reduce="data", bytes="4GiB", **job))
    one = costs[-1].steps
    from p2sim.formalism.placement import enumerate_matrices
    from p2sim.topology import load_system

    assert one.simulated == 512 * len(enumerate_matrices(load_system("superpod-h100", 64).hierarchy, (16, 4, 8)))
    whatif.run_whatif(whatif.WhatifRequest.build(reduce="data", bytes="4GiB", vary="leaf.oversubscription=1,2", **job))
    assert costs[-1].steps == one * 2 and "distinct steps" in costs[-1].text()
    plan.run_plan(plan.PlanRequest.build(reductions=["data:4GiB"], **job))
    assert costs[-1].steps == one
    assert isinstance(one, StepCount) and one.classes > 0


@pytest.mark.slow  # hypothesis over fabrics
@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["superpod-h100", "a100", "gb200-nvl72-pod"]), st.integers(1, 4), st.integers(0, 2**31),
       st.sampled_from([1, 2, 3]))
def test_the_estimates_classes_are_the_simulators_moved_classes(system, width_exp, seed, buffers):
    # a step's groups counted by the estimate (narrow rows by a lexsort, wide ones by their bytes, the shapes kept
    # for the next step on the same groups) are the classes the bound builds: moved_classes of the same groups
    import numpy as np
    from p2sim.formalism.hierarchy import LoweredStep
    from p2sim.formalism.semantics import Op
    from p2sim.sim.moved import moved_classes
    from p2sim.studies.step_counts import _classes_by_volume
    from p2sim.topology import load_system
    topo = load_system(system, 16)
    rng = np.random.default_rng(seed)
    width = 2 ** width_exp if rng.random() < 0.5 else 20 + width_exp  # both ways of classing
    gpus = rng.permutation(topo.devices)[: topo.devices // width * width]
    groups = np.sort(gpus.reshape(-1, width), axis=1)
    if rng.random() < 0.5:  # groups moved by whole nodes: classes of several groups
        span = -(-width // topo.gpus_per_node) + 1  # nodes
        base = np.sort(rng.choice(topo.gpus_per_node * span, width, replace=False))
        groups = np.array([base + k * topo.gpus_per_node for k in range(topo.nodes - 1)
                           if (base + k * topo.gpus_per_node).max() < topo.devices])
    kinds = [tuple(float(rng.integers(1, 3)) for _ in range(buffers)) for _ in range(3)]
    step = LoweredStep.of_array(Op.ALL_REDUCE, groups)
    memo: dict = {}
    for _ in range(2):  # the second time from the memo
        got = _classes_by_volume(topo, groups, kinds, memo)
        want = [len(list(moved_classes(topo, step, [v[r % len(v)] for r in range(len(groups))]))) for v in kinds]
        assert got == want
    assert len(memo) == 1


def test_a_long_synthesis_is_announced_with_its_estimate_before_it_starts(caplog):
    """Issue 43: rank at 16,384 nodes counted its programs (a minute of synthesis) before any estimate was said;
    the check before the synthesis now says what the synthesis will cost when that is long."""
    from p2sim.studies.jobsize import check_job

    caplog.set_level(logging.INFO, logger="p2sim")
    big, small = ((16384, 8),), ((2, 8),)  # one axis over (node, gpu): synthesis hierarchies (1,16384,8), (1,2,8)
    check_job(Limits.of(yes=True), [small], [0], 16, 1, 1, 1, "rank", "fewer")
    assert not caplog.records
    check_job(Limits.of(yes=True), [big], [0], 131072, 1, 1, 1, "rank", "fewer")
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("counting programs first: 1 synthesis hierarchy, estimated about ")
    assert line.endswith("the job's estimate follows")
