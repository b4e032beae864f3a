"""Tests of p2sim.sim.moved: the classes of a step's groups that are one group moved, and their link loads."""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.formalism.hierarchy import LoweredStep
from p2sim.formalism.semantics import Op
from p2sim.sim.moved import link_work, moved_classes
from p2sim.topology import load_system


def _unique_row_classes(topo, groups, volumes):
    """The classes of the same group moved as numpy.unique over the key's rows found them (before the lexsort):
    the reference of moved_classes' order, representatives, shifts and positions."""
    gpn = topo.gpus_per_node
    arr = np.array(groups, dtype=np.int64)
    first = arr.min(axis=1) // gpn
    key = np.concatenate([arr - (first * gpn)[:, None], np.asarray(volumes, dtype=float).view(np.int64)[:, None],
                          topo.move_keys(arr // gpn)], axis=1)
    _, rep, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(rep) + 1))
    for c, r in enumerate(rep.tolist()):
        members = order[bounds[c]:bounds[c + 1]]
        yield tuple(groups[r]), volumes[r], first[members] - first[r], members


@functools.cache
def _fabric(system: str, nodes: int):
    return load_system(system, nodes)


@settings(max_examples=60, deadline=None)
@given(system=st.sampled_from([("superpod-h100", 64), ("roce-h100", 24), ("h100", 16)]),
       size=st.integers(1, 12), data=st.data())
def testmoved_classes_are_numpy_uniques_row_classes_in_its_order(system, size, data):
    
    topo = _fabric(*system)
    devices = topo.gpus_per_node * topo.node_count
    groups = data.draw(st.lists(st.lists(st.integers(0, devices - 1), min_size=size, max_size=size, unique=True)
                                .map(tuple), min_size=1, max_size=40))
    volumes = data.draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, 2.0**30]), min_size=len(groups),
                                 max_size=len(groups)))
    got = list(moved_classes(topo, LoweredStep(Op.ALL_REDUCE, tuple(groups)), volumes))
    want = list(_unique_row_classes(topo, groups, volumes))
    assert [(g, v) for g, v, _, _ in got] == [(g, v) for g, v, _, _ in want]
    for (_, _, shifts, members), (_, _, s0, m0) in zip(got, want):
        assert np.array_equal(shifts, s0) and np.array_equal(members, m0)


@settings(max_examples=60, deadline=None)
@given(edges=st.lists(st.integers(0, 30), min_size=1, max_size=80), data=st.data())
def test_link_work_is_numpy_uniques_sums_in_edge_order(edges, data):
    e = np.array(edges, dtype=np.int64)
    loads = np.array(data.draw(st.lists(st.floats(0, 1e9), min_size=len(e), max_size=len(e))))
    used, work = link_work(e, loads, 31)
    want_used, inverse = np.unique(e, return_inverse=True)
    # the same sums, bit for bit: bincount adds each link's loads in the edges' order either way
    assert used.tolist() == want_used.tolist()
    assert work.tolist() == np.bincount(inverse.reshape(-1), weights=loads, minlength=len(want_used)).tolist()


def test_a_node_moved_pair_is_one_class():
    topo = load_system("a100", 2)
    step = LoweredStep(Op.ALL_REDUCE, ((0, 1), (2, 3), (16, 17), (18, 19)))
    classes = list(moved_classes(topo, step, [1.0, 1.0, 1.0, 2.0]))  # (18, 19) moves another buffer
    assert [(g, v, s.tolist(), m.tolist()) for g, v, s, m in classes] == [
        ((0, 1), 1.0, [0, 1], [0, 2]), ((2, 3), 1.0, [0], [1]), ((18, 19), 2.0, [0], [3])]


def test_step_geometry_gives_what_it_would_compute_again_at_every_size():
    """A step bounded at several sizes: the kept classes and moved links are those computed afresh, also
    where the buffers differ (not kept) and after the links' budget has dropped older entries."""
    from p2sim.formalism.placement import Placement
    from p2sim.formalism.hierarchy import Lowering
    from p2sim.formalism.program import parse_program
    from p2sim.sim import Simulator
    from p2sim.sim.moved import StepGeometry

    topo = load_system("superpod-h100", 64)
    sim = Simulator(topo)
    geometry = StepGeometry(topo, budget=1)  # every new entry drops the one before
    step = Lowering.of(Placement.of(topo.hierarchy, (16, 4, 8), ((2, 1, 8), (1, 4, 1), (1, 8, 1))), [0]).lower(
        parse_program("AllReduce(slice=0, Inside)"))[0]
    n = step.shape[0]
    for volumes in ([2.0**30] * n, [2.0**20] * n, [2.0**30] * n, [2.0**30] * (n - 1) + [1.0]):
        got = geometry.classes(step, volumes)
        want = list(moved_classes(topo, step, volumes))
        assert [(g, v, s.tolist(), m.tolist()) for g, v, s, m in got] == [
            (g, v, s.tolist(), m.tolist()) for g, v, s, m in want]
        edges = []
        for g, v, _, _ in got:
            a, p = sim.expander.choose("AllReduce", g, v)
            edges.append(sim.expander.collective(a, p, "AllReduce", g, v).link_load()[0])
        e, used = geometry.links(step, got, edges)
        again = np.concatenate([topo.move_edges(x, min(g) // topo.gpus_per_node, s).ravel()
                                for x, (g, _, s, _) in zip(edges, got)])
        assert e.tolist() == again.tolist() and used.tolist() == np.unique(again).tolist()
    assert len(geometry._links) == 1 and len(geometry._classes) == 1


def test_step_geometry_shares_a_slices_groups_between_its_collectives_and_step_objects():
    """The ReduceScatter, AllReduce and AllGather of one slice (and the same groups lowered again, another
    step object) share their classes and, where their collectives load the same links, their moved links:
    each answer is the one computed afresh for that step."""
    from p2sim.formalism.placement import Placement
    from p2sim.formalism.hierarchy import Lowering
    from p2sim.formalism.program import parse_program
    from p2sim.sim import Simulator
    from p2sim.sim.moved import StepGeometry

    topo = load_system("superpod-h100", 64)
    sim = Simulator(topo)
    geometry = StepGeometry(topo)
    placement = Placement.of(topo.hierarchy, (16, 4, 8), ((2, 1, 8), (1, 4, 1), (1, 8, 1)))
    texts = ["ReduceScatter(slice=0, Inside)", "AllReduce(slice=0, Inside)", "AllGather(slice=0, Inside)"]
    steps = [Lowering.of(placement, [0]).lower(parse_program(t))[0] for t in texts]
    steps.append(Lowering.of(placement, [0]).lower(parse_program(texts[1]))[0])  # equal groups, a new object
    assert steps[1] is not steps[3]
    for step in steps:
        volumes = [2.0**28] * step.shape[0]
        got = geometry.classes(step, volumes)
        want = list(moved_classes(topo, step, volumes))
        assert [(g, v, s.tolist(), m.tolist()) for g, v, s, m in got] == [
            (g, v, s.tolist(), m.tolist()) for g, v, s, m in want]
        op = step.op.value
        edges = []
        for g, v, _, _ in got:
            a, p = sim.expander.choose(op, g, v)
            edges.append(sim.expander.collective(a, p, op, g, v).link_load()[0])
        e, used = geometry.links(step, got, edges)
        again = np.concatenate([topo.move_edges(x, min(g) // topo.gpus_per_node, s).ravel()
                                for x, (g, _, s, _) in zip(edges, got)])
        assert e.tolist() == again.tolist() and used.tolist() == np.unique(again).tolist()
    assert len(geometry._classes) == 1  # one group array
    assert len(geometry._links) < len(steps)  # the AllReduce lowered twice: one entry


def test_a_contexts_simulators_share_one_geometry_and_a_budget_drops_the_least_recently_used(monkeypatch):
    """Two simulators of contexts that share structures (what-if points searched together) classify a step's
    groups once, those of a context alone each on its own; a store past its budget drops the oldest entry; the
    classes are those computed afresh."""
    from p2sim.formalism.placement import Placement
    from p2sim.formalism.hierarchy import Lowering
    from p2sim.formalism.program import parse_program
    from p2sim.sim import SimulationContext, Simulator
    from p2sim.sim import moved

    topo = load_system("superpod-h100", 64)
    computed = []
    plain = moved.moved_classes

    def counted(*args):
        computed.append(1)
        return plain(*args)

    monkeypatch.setattr(moved, "moved_classes", counted)
    alone = SimulationContext(topo)
    ctx, other = SimulationContext(topo), SimulationContext(load_system("superpod-h100", 64))
    assert other.share(ctx) and other.geometry is ctx.geometry is not None and alone.geometry is None
    step = Lowering.of(Placement.of(topo.hierarchy, (16, 4, 8), ((2, 1, 8), (1, 4, 1), (1, 8, 1))), [0]).lower(
        parse_program("AllReduce(slice=0, Inside)"))[0]
    volumes = [2.0**30] * step.shape[0]
    for _ in range(2):
        Simulator(topo, context=alone)._geometry.classes(step, volumes)
    assert len(computed) == 2
    for c in (ctx, other):
        got = Simulator(c.topo, context=c)._geometry.classes(step, volumes)
    assert len(computed) == 3 and ctx.geometry.classes
    assert [(g, s.tolist(), m.tolist()) for g, _, s, m in got] == [
        (g, s.tolist(), m.tolist()) for g, _, s, m in plain(topo, step, volumes)]
    store = moved.GeometryStore(links=10, classes=10)
    store.keep("links", "a", (np.zeros(1, dtype=np.int64),), 8)
    store.keep("links", "b", (np.zeros(1, dtype=np.int64),), 8)
    assert list(store.links) == ["b"] and store.held["links"] == 8
    assert store.find("links", "a") is None and store.find("links", "b") is not None
    store.keep("classes", "c", [], 0)
    store.drop("links")
    assert not store.links and store.held["links"] == 0 and list(store.classes) == ["c"]
    ctx.clear()
    assert not ctx.geometry.classes and ctx.geometry.held == {"classes": 0, "links": 0}


def test_a_bound_summed_per_slot_is_the_bound_summed_per_link_id():
    """Simulator._step_bound counts each group's bytes into the links used by their slots
    (StepGeometry.slots): the same sums, to the bit, as counting into a table of every link id."""
    from p2sim.formalism.placement import Placement
    from p2sim.formalism.hierarchy import Lowering
    from p2sim.formalism.program import parse_program
    from p2sim.sim import Simulator

    topo = load_system("superpod-h100", 64)
    sim = Simulator(topo)
    lw = Lowering.of(Placement.of(topo.hierarchy, (16, 4, 8), ((2, 1, 8), (1, 4, 1), (1, 8, 1))), [0])
    for text in ("AllReduce(slice=0, Inside)", "ReduceScatter(slice=0, Inside)"):
        step = lw.lower(parse_program(text))[0]
        for nbytes in (2.0**20, 2.0**30 / 3):
            volumes = [nbytes] * step.shape[0]
            classes = list(moved_classes(topo, step, volumes))
            edges, weights, alone, start = [], [], 0.0, float("inf")
            for g, v, shifts, _ in classes:
                c = sim.expander.collective(*sim.expander.choose(step.op.value, g, v), step.op.value, g, v)
                alone, start = max(alone, sim.expander.analytic_seconds(c, v)), min(start, c.latency)
                e, load = c.link_load()
                edges.append(topo.move_edges(e, min(g) // topo.gpus_per_node, shifts).ravel())
                weights.append(np.tile(load * v, len(shifts)))
            ids = np.concatenate(edges)
            used = np.unique(ids)
            work = np.bincount(ids, weights=np.concatenate(weights), minlength=len(topo.capacity))[used]
            want = max(alone, start + float(np.max(work / topo.capacity[used])))
            assert sim._step_bound(step, volumes) == want
