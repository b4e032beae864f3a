from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings, strategies as st

from p2sim.util.errors import ProgramError
from p2sim.formalism.hierarchy import LoweredStep
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program
from p2sim.sim import SimSettings, Simulator, check_program_completes
from p2sim.formalism.synthesis import synthesize_placements
from p2sim.topology import load_system

from p2sim.formalism.semantics import Op

from .helpers import rail_nodes, ring_node, switch_node, two_nodes_one_nic

ALLREDUCE = parse_program("AllReduce(slice=0, Inside)")
RS_AR_AG = parse_program("ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)")
S = 2**32


def lowering(topo, axes, matrix, red):
    return Lowering.of(Placement.of(topo.hierarchy, axes, matrix), red)


def latency(sim, op, group, nbytes=S):
    return sim.collectives(op, [tuple(group)], [nbytes])[0].latency


def one(sim, op, groups, nbytes=S):
    """Simulate one step of ``op`` over ``groups`` (each with ``nbytes``)."""
    return sim.step(LoweredStep(Op(op), tuple(tuple(g) for g in groups)), (nbytes,) * len(groups))


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_ring_allreduce_on_identical_links(n):
    # every GPU has one link of bandwidth B to a switch: 2(n-1)/n S / B plus latency
    topo = switch_node(n, bandwidth=100.0, latency=1.0)
    lw = lowering(topo, [n], [[1, n]], [0])
    sim = Simulator(topo, SimSettings("ring", proto="Simple"))
    t = sim.simulate(lw, ALLREDUCE, S).total_seconds
    assert t == pytest.approx(2 * (n - 1) / n * S / 100e9 + latency(sim, "AllReduce", range(n)), rel=1e-9)


@pytest.mark.parametrize("n", [3, 4, 8])
def test_ring_allreduce_on_a_bidirectional_nvlink_ring(n):
    # rings run both ways round a ring of full-duplex links: each direction carries half
    topo = ring_node(n, bandwidth=100.0, latency=2.0)
    lw = lowering(topo, [n], [[1, n]], [0])
    sim = Simulator(topo, SimSettings("ring", proto="Simple"))
    t = sim.simulate(lw, ALLREDUCE, S).total_seconds
    assert t == pytest.approx((n - 1) / n * S / 100e9 + latency(sim, "AllReduce", range(n)), rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_k_cross_node_pairs_share_one_nic(k):
    topo = two_nodes_one_nic(k, nic=10.0)
    lw = lowering(topo, [2, k], [[2, 1], [1, k]], [0])
    sim = Simulator(topo, SimSettings("ring", proto="Simple"))
    t = sim.simulate(lw, ALLREDUCE, S).total_seconds
    assert t - latency(sim, "AllReduce", [0, k]) == pytest.approx(k * S / 10e9, rel=1e-9)


def test_two_nodes_of_eight_gpus_and_eight_nics_reach_the_nics_aggregate_rate():
    topo = rail_nodes(8, 8, nic=10.0)  # 80 GB/s of NICs per node
    ring = Simulator(topo, SimSettings("ring", proto="Simple"))
    t = one(ring, "AllReduce", [range(16)]).seconds - latency(ring, "AllReduce", range(16))
    assert t == pytest.approx(2 * 15 / 16 * S / 80e9, rel=1e-9)  # bus bandwidth = 80 GB/s
    tree = Simulator(topo, SimSettings("tree", proto="Simple"))
    t = one(tree, "AllReduce", [range(16)]).seconds - latency(tree, "AllReduce", range(16))
    # the tree sends S each way per node: 80 GB/s of algorithm bandwidth, the NICs' aggregate
    # (NCCL's 92% tree efficiency is charged inside nodes, where NVLink is far from binding)
    assert t == pytest.approx(S / 80e9, rel=1e-9)


def test_one_communicator_is_capped_by_its_channels_and_four_fill_the_nic():
    # one 10 GB/s NIC per node, 4 GPUs per node; 1.5 GB/s per channel through the network
    topo = rail_nodes(4, 1, nic=10.0, model="ring_net_rate = 1.5")
    sim = Simulator(topo, SimSettings("ring", proto="Simple"))
    lat = latency(sim, "AllReduce", [0, 4])
    # a 2-rank ring sends S per node and direction; 2 channels x 1.5 GB/s
    assert one(sim, "AllReduce", [[0, 4]]).seconds - lat == pytest.approx(S / 3e9, rel=1e-9)
    # four such communicators at once would want 12 GB/s: the NIC's 10 GB/s binds, shared fairly
    four = one(sim, "AllReduce", [[0, 4], [1, 5], [2, 6], [3, 7]]).seconds - lat
    assert four == pytest.approx(4 * S / 10e9, rel=1e-9)


def test_removing_contention_leaves_the_bottleneck():
    spec = load_system("a100").spec
    for cls in ("nvswitch", "pcie"):
        spec = spec.with_class(cls, bandwidth=1e6)
    topo = load_system(spec, 2)
    lw = lowering(topo, [32], [[2, 16]], [0])
    sim = Simulator(topo, SimSettings("ring", proto="Simple"))
    t = sim.simulate(lw, ALLREDUCE, S).total_seconds
    assert t == pytest.approx(2 * 31 / 32 * S / 8e9 + latency(sim, "AllReduce", range(32)), rel=1e-6)


def _ratio(system, gpus, slow_matrix, fast_matrix):
    topo = load_system(system, 2)
    sim = Simulator(topo, SimSettings("ring"))
    slow = sim.simulate(lowering(topo, [2, gpus], slow_matrix, [0]), ALLREDUCE, S).total_seconds
    fast = sim.simulate(lowering(topo, [2, gpus], fast_matrix, [0]), ALLREDUCE, S).total_seconds
    return topo, slow / fast


def test_a100_cross_node_pairs_are_far_slower_than_pairs_on_nvswitch():
    topo, ratio = _ratio("a100", 16, [[2, 1], [1, 16]], [[1, 2], [2, 8]])
    nic, nvs = topo.spec.classes["nic"].bandwidth, topo.spec.classes["nvswitch"].bandwidth
    # 16 pairs of S through one NIC against one S over a GPU's own NVSwitch port
    assert ratio == pytest.approx(16 * nvs / nic, rel=0.02)
    assert ratio > 100


def test_v100_cross_node_pairs_are_slower_than_pairs_across_cpus():
    topo, ratio = _ratio("v100", 8, [[2, 1], [1, 8]], [[1, 2], [2, 4]])
    nic, host = topo.spec.classes["nic"].bandwidth, topo.spec.classes["host"].bandwidth
    # 8 pairs through one NIC against 4 pairs {0,4},{1,5},.. through the inter-CPU link
    assert ratio == pytest.approx((8 / nic) / (4 / host), rel=0.02)
    assert ratio > 1


def test_rs_ar_ag_beats_allreduce_across_a100_nodes():
    topo = load_system("a100", 2)
    lw = lowering(topo, [2, 16], [[1, 2], [2, 8]], [1])
    sim = Simulator(topo, SimSettings("ring"))
    ar = sim.simulate(lw, ALLREDUCE, S)
    blue = sim.simulate(lw, RS_AR_AG, S)
    assert blue.total_seconds < 0.6 * ar.total_seconds
    assert [s.nodes_spanned for s in blue.steps] == [1, 2, 1]
    assert [s.buffer_bytes for s in blue.steps] == [S, S / 8, S]


def test_same_run_twice_gives_identical_output():
    topo = load_system("v100", 4)
    syn = synthesize_placements(topo.hierarchy, [4, 8], [0])
    results = []
    for _ in range(2):
        sim = Simulator(topo, SimSettings("tree"))
        results.append([sim.simulate(m.lowering, p, S) for m in syn.matrices for p in m.programs])
    assert results[0] == results[1]


@pytest.mark.parametrize("system", ["a100", "v100", "h100", "p2-16gpu"])
def test_ring_allreduce_never_beats_the_bus_bound_and_des_is_never_faster_than_analytic(system):
    # the analytic model is each collective alone; contention can only slow a step
    topo = load_system(system, 2)
    axes = [topo.devices // 4, 4]
    syn = synthesize_placements(topo.hierarchy, axes, [0])
    des, ana = Simulator(topo, SimSettings("ring", engine="des")), Simulator(topo, SimSettings("ring", engine="analytic"))
    fastest = float(topo.capacity.max())
    for m in syn.matrices:
        for p in m.programs:
            d = des.simulate(m.lowering, p, S)
            assert d.total_seconds >= ana.simulate(m.lowering, p, S).total_seconds * (1 - 1e-9)
            for step, low in zip(d.steps, m.lowering.lower(p)):
                if step.op == "AllReduce":
                    n = len(low.groups[0])
                    assert step.seconds >= 2 * (n - 1) / n * step.buffer_bytes / fastest


def test_tree_against_ring_across_two_nodes():
    topo = load_system("a100", 2)
    lw = lowering(topo, [32], [[2, 16]], [0])
    ring = Simulator(topo, SimSettings("ring", proto="Simple"))
    tree = Simulator(topo, SimSettings("tree", proto="Simple"))
    r = ring.simulate(lw, ALLREDUCE, S).total_seconds - latency(ring, "AllReduce", range(32))
    t = tree.simulate(lw, ALLREDUCE, S).total_seconds - latency(tree, "AllReduce", range(32))
    # the tree moves S through each NIC direction, the ring 2(n-1)/n S: both NIC-bound
    assert t == pytest.approx(r * 32 / 62, rel=1e-9)


def test_auto_records_what_each_step_ran():
    topo = load_system("dgx-h100", 1)
    lw = lowering(topo, [8], [[1, 8]], [0])
    big = Simulator(topo).simulate(lw, ALLREDUCE, 2**30).steps[0]
    small = Simulator(topo).simulate(lw, ALLREDUCE, 8).steps[0]
    assert (big.algo, big.proto) == ("nvls", "Simple")
    assert small.proto == "LL" and small.seconds < 1e-4
    assert Simulator(topo, SimSettings(engine="baseline")).simulate(lw, ALLREDUCE, 2**30).steps[0].algo == "ring"


def test_program_checks():
    topo = load_system("a100", 2)
    lw = lowering(topo, [32], [[2, 16]], [0])
    check_program_completes(lw, RS_AR_AG)
    with pytest.raises(ProgramError, match="does not complete"):
        check_program_completes(lw, parse_program("AllReduce(slice=1, Inside)"))
    with pytest.raises(ProgramError, match="step 2"):
        check_program_completes(lw, parse_program("AllReduce(slice=0, Inside) ; AllReduce(slice=0, Inside)"))
    other = load_system("v100", 2)
    with pytest.raises(ProgramError, match="devices"):
        Simulator(other).simulate(lw, ALLREDUCE, S)



@pytest.mark.parametrize("system,nodes,program", [("h100", 8, RS_AR_AG), ("a100", 4, RS_AR_AG),
                                                 ("dgx-h100", 4, ALLREDUCE)])
def test_large_steps_lay_out_their_flows_as_group_by_group_expansion_does(system, nodes, program):
    import numpy as np

    from p2sim.sim.engine import FlowArrays
    from p2sim.sim.flows import flow_specs, moved_flow_arrays
    from p2sim.sim.moved import moved_classes

    topo = load_system(system, nodes)
    gpn = topo.gpus_per_node
    lw = lowering(topo, [topo.devices], [[nodes, gpn]], [0])
    sim = Simulator(topo, SimSettings("auto"))
    for step in lw.lower(program):
        volumes = (float(S),) * len(step.groups)
        op = step.op.value
        classes = []
        for g, v, shifts, members in moved_classes(topo, step, volumes):
            algo, proto = sim.expander.choose(op, g, v, sim.algo, sim.proto)
            classes.append((sim.expander.collective(algo, proto, op, g, v), v, shifts, members))
        fast, capacity = moved_flow_arrays(topo, op, step, classes)
        specs, extra = flow_specs(sim.collectives(op, step.groups, volumes), volumes, len(topo.capacity))
        slow = FlowArrays.of(specs)
        for field in ("indptr", "edges", "coef", "volume", "latency"):
            assert np.array_equal(getattr(fast, field), getattr(slow, field))
        assert np.array_equal(capacity, np.concatenate([topo.capacity, extra]))
        assert [fast.label(i) for i in range(len(specs))] == [f.label for f in specs]


def test_tasks_in_one_process_forget_the_decisions_of_the_tasks_before():
    from p2sim.studies.config_task import ConfigTask, run_task, task_context

    topo = load_system("a100", 2)
    a = ConfigTask(spec=topo.spec, nodes=2, axes=(4, 8), reduce_axes=(0,), bytes_per_gpu=float(S),
                  matrices=(((1, 4), (2, 4)),))
    first = run_task(a)
    shared = task_context(a)  # the same context, its per-shape decisions and step results dropped
    assert shared.step_results() == 0 and shared.rings
    assert all(not e.choice and not e.settings for e in shared._expansions.values()) and shared._expansions
    assert run_task(a) == first
    assert task_context(a) is shared  # found again by the spec's value


def test_a_task_simulated_in_a_shared_context_drops_the_moved_links_its_bounds_kept():
    """A what-if's points share one GeometryStore (SimulationContext.share); the bounds keep moved links in it,
    which no simulation reads: run_task drops them (classes stay) and answers as before."""
    from p2sim.sim import SimulationContext
    import numpy as np

    from p2sim.sim.moved import GeometryStore
    from p2sim.studies.config_task import ConfigTask, run_task

    topo = load_system("a100", 2)
    a = ConfigTask(spec=topo.spec, nodes=2, axes=(4, 8), reduce_axes=(0,), bytes_per_gpu=float(S),
                   matrices=(((1, 4), (2, 4)),))
    plain = run_task(a, SimulationContext(topo))
    ctx = SimulationContext(topo)
    ctx.geometry = GeometryStore()
    ctx.geometry.keep("links", "kept by a bound", (np.zeros(4, dtype=np.int64),), 32)
    assert run_task(a, ctx) == plain
    assert not ctx.geometry.links and ctx.geometry.held["links"] == 0
