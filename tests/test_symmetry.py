from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import p2sim.sim.engine as engine
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program
from p2sim.sim import SimSettings, Simulator
from p2sim.sim.engine import FlowSpec, run_flows, sparse_usage
from p2sim.sim.flows import flow_specs
from p2sim.sim.symmetry import _equitable, _ids, quotient
from p2sim.formalism.synthesis import synthesize_placements
from p2sim.topology import load_system


def _run(flows, capacity, reduce: bool, monkeypatch):
    monkeypatch.setattr(engine, "_SYMMETRY_MIN", 0 if reduce else 1 << 62)
    t, recs, _ = run_flows(flows, capacity)
    return t, [r.end for r in recs]


def _close(a, b, rtol=1e-9):
    return all(x == y or abs(x - y) <= rtol * max(abs(x), abs(y)) for x, y in zip(a, b))


@st.composite
def symmetric(draw):
    """A random base of flows on private links, copied ``k`` times, every copy loading some
    shared links alike: a symmetric scenario (the copies are congruent)."""
    k = draw(st.integers(2, 5))
    nflows = draw(st.integers(1, 4))
    private = draw(st.integers(1, 4))
    shared = draw(st.integers(0, 2))
    caps = [draw(st.sampled_from([1.0, 2.0, 3.5, 10.0])) for _ in range(private)]
    scaps = [draw(st.sampled_from([2.0, 5.0, 40.0, np.inf])) for _ in range(shared)]
    base = []
    for _ in range(nflows):
        links = draw(st.lists(st.integers(0, private + shared - 1), min_size=1, max_size=3, unique=True))
        coefs = [draw(st.sampled_from([0.5, 1.0, 1.5, 2.0])) for _ in links]
        base.append((links, coefs, draw(st.sampled_from([10.0, 25.0, 40.0])), draw(st.sampled_from([0.0, 1.0, 2.5]))))
    flows = []
    for c in range(k):  # the shared links first, then each copy's private links
        for links, coefs, vol, lat in base:
            ids = [x - private if x >= private else shared + c * private + x for x in links]
            flows.append(FlowSpec(np.array(ids), np.array(coefs), vol, lat))
    capacity = np.array(scaps + caps * k)
    return flows, capacity


@settings(max_examples=60, deadline=None)
@given(symmetric())
def test_symmetric_copies_run_alike_reduced_and_whole(case):
    flows, capacity = case
    links, (indptr, local, coef) = sparse_usage(flows)
    q = quotient(indptr, links[local], coef, capacity, np.array([f.volume for f in flows]),
                 np.array([f.latency for f in flows]))
    assert q is not None and len(q.flow_rep) <= len(flows) // 2  # the copies are found congruent
    with pytest.MonkeyPatch.context() as mp:
        whole = _run(flows, capacity, False, mp)
        reduced = _run(flows, capacity, True, mp)
    assert _close([whole[0]], [reduced[0]]) and _close(whole[1], reduced[1])


def test_copies_reduce_to_one_class_each():
    # two copies of (a flow on its own link + the shared link)
    flows = [FlowSpec(np.array([0, 2]), np.ones(2), 10.0, 0.0), FlowSpec(np.array([1, 2]), np.ones(2), 10.0, 0.0)]
    indptr, local, coef = sparse_usage(flows)[1]
    q = quotient(indptr, local, coef, np.array([5.0, 5.0, 8.0]), np.full(2, 10.0), np.zeros(2))
    assert q.of_flow.tolist() == [0, 0] and len(q.capacity) == 2
    # a different volume breaks the symmetry: nothing to reduce
    assert quotient(indptr, local, coef, np.array([5.0, 5.0, 8.0]), np.array([10.0, 11.0]), np.zeros(2)) is None
    # so does a different capacity
    assert quotient(indptr, local, coef, np.array([5.0, 6.0, 8.0]), np.full(2, 10.0), np.zeros(2)) is None


def test_the_exact_check_rejects_a_partition_that_is_not_equitable():
    # entities 0 and 1 coloured alike but with different multisets of keys
    ptr = np.array([0, 2, 3])
    key = np.array([1, 2, 1])
    assert not _equitable(np.array([0, 0]), np.arange(3), ptr, key)
    assert _equitable(np.array([0, 1]), np.arange(3), ptr, key)
    assert _equitable(np.array([0, 0]), np.arange(4), np.array([0, 2, 4]), np.array([2, 1, 2, 1]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True),
                          st.sampled_from([10.0, 20.0]), st.sampled_from([0.0, 1.0])), min_size=2, max_size=8))
def test_any_flows_run_alike_reduced_and_whole(spec):
    flows = [FlowSpec(np.array(links), np.ones(len(links)), vol, lat) for links, vol, lat in spec]
    capacity = np.array([3.0, 3.0, 5.0, 5.0, 7.0, 7.0])
    with pytest.MonkeyPatch.context() as mp:
        whole = _run(flows, capacity, False, mp)
        reduced = _run(flows, capacity, True, mp)
    assert _close([whole[0]], [reduced[0]]) and _close(whole[1], reduced[1])


@pytest.mark.parametrize("system,axes,reduce", [("a100", (4, 8), (0,)), ("v100", (4, 4), (1,)), ("h100", (2, 8), (1,)),
                                                ("dgx-h100", (4, 2, 2), (0, 2))])
def test_every_program_step_runs_alike_reduced_and_whole(system, axes, reduce, monkeypatch):
    times = {}
    for reduced in (False, True):
        monkeypatch.setattr(engine, "_SYMMETRY_MIN", 0 if reduced else 1 << 62)
        topo = load_system(system, 2)  # a fresh topology: no step results shared between the runs
        syn = synthesize_placements(topo.hierarchy, axes, reduce)
        out = []
        for algo in ("auto", "ring", "tree"):
            sim = Simulator(topo, SimSettings(algo, engine="des"))
            for mp in syn.matrices:
                for p in mp.programs:
                    out.append(sim.simulate(mp.lowering, p, 2**30).total_seconds)
        times[reduced] = out
    assert _close(times[False], times[True])


def test_a_512_gpu_tree_allreduce_reduces_to_few_classes():
    topo = load_system("h100", 64)
    lw = Lowering.of(Placement.of(topo.hierarchy, [topo.devices], [[64, 8]]), [0])
    step = lw.lower(parse_program("AllReduce(slice=0, Inside)"))[0]
    colls = Simulator(topo, SimSettings("tree", engine="des")).collectives(step.op.value, step.groups, [2.0**30])
    flows, extra = flow_specs(colls, [2.0**30], len(topo.capacity))
    capacity = np.concatenate([topo.capacity, extra])
    links, (indptr, local, coef) = sparse_usage(flows)
    q = quotient(indptr, links[local], coef, capacity, np.array([f.volume for f in flows]),
                 np.array([f.latency for f in flows]))
    assert q is not None and len(q.flow_rep) == 1 and len(flows) == 8
    with pytest.MonkeyPatch.context() as mp:
        assert _close([_run(flows, capacity, True, mp)[0]], [_run(flows, capacity, False, mp)[0]])


def _naive_partition(flows, capacity):
    """Colour refinement with exact multisets (sorted tuples), to a fixed point: the coarsest
    equitable partition, flows labelled in order of first appearance."""
    fcol = [(f.volume, f.latency) for f in flows]
    lcol = {link: (float(capacity[link]),) for f in flows for link in f.edges.tolist()}
    while True:
        lnew = {link: (lcol[link], tuple(sorted((float(c), fcol[j]) for j, f in enumerate(flows)
                                                 for e, c in zip(f.edges.tolist(), f.coef) if e == link)))
                for link in lcol}
        fnew = [(fcol[j], tuple(sorted((float(c), lnew[e]) for e, c in zip(f.edges.tolist(), f.coef))))
                for j, f in enumerate(flows)]
        ids = {}
        fnew = [ids.setdefault(c, len(ids)) for c in fnew]
        lids = {}
        lnew = {link: lids.setdefault(c, len(lids)) for link, c in lnew.items()}
        if len(ids) == len(set(fcol)) and len(lids) == len(set(lcol.values())):
            return fnew, len(lids)
        fcol, lcol = fnew, lnew


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True),
                          st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=4, max_size=4),
                          st.sampled_from([10.0, 20.0]), st.sampled_from([0.0, 1.0])), min_size=2, max_size=9))
def test_the_quotient_is_the_coarsest_equitable_partition(spec):
    # rings and chains of flows need several rounds; the quotient stops when its flow classes stop splitting
    flows = [FlowSpec(np.array(links), np.array(coefs[:len(links)]), vol, lat) for links, coefs, vol, lat in spec]
    capacity = np.array([3.0, 3.0, 5.0, 5.0, 7.0, 7.0, 3.0])
    links, (indptr, local, coef) = sparse_usage(flows)
    q = quotient(indptr, local, coef, capacity[links], np.array([f.volume for f in flows]),
                 np.array([f.latency for f in flows]))
    classes, nlinks = _naive_partition(flows, capacity)
    if len(set(classes)) == len(flows):
        assert q is None
    else:
        assert q is not None and q.of_flow.tolist() == classes and len(q.capacity) == nlinks
        # and the same quotient from the links' global ids
        again = quotient(indptr, links[local], coef, capacity, np.array([f.volume for f in flows]),
                         np.array([f.latency for f in flows]))
        assert all(np.array_equal(getattr(q, k), getattr(again, k)) for k in ("of_flow", "flow_rep", "indptr", "links",
                                                                             "coef", "capacity"))


def test_a_large_step_is_reduced_without_sorting_its_incidences_or_links(monkeypatch):
    # 8 congruent flows, each over 12,000 private links (coefficients 1 and 2) and one shared link: a
    # step of 96,001 links.  Sorting them (or the incidences) each time cost most of a 16,384-GPU ranking;
    # their classes are told apart by comparison passes, hash tables and counting instead
    k, private = 8, 12_000
    indptr = np.arange(k + 1) * (private + 1)
    links = np.concatenate([np.append(np.arange(c * private, (c + 1) * private), k * private) for c in range(k)])
    coef = np.tile(np.append(np.where(np.arange(private) % 3 == 0, 2.0, 1.0), 1.0), k)
    capacity = np.append(np.full(k * private, 5.0), 40.0)
    sorted_sizes = []
    for name in ("unique", "lexsort", "sort", "argsort"):
        real = getattr(np, name)

        def counted(x, *args, _real=real, **kw):
            sorted_sizes.append(np.size(x))
            return _real(x, *args, **kw)
        monkeypatch.setattr(np, name, counted)
    q = quotient(indptr, links, coef, capacity, np.full(k, 10.0), np.zeros(k))
    monkeypatch.undo()
    assert q is not None and q.of_flow.tolist() == [0] * k and len(q.capacity) == 3
    assert q.coef.tolist() == [2.0, 1.0, 8.0]  # private links at 2 and 1 per byte (first seen first), shared 8 x 1
    assert max(sorted_sizes, default=0) <= 64  # nothing the size of the links sorted


def test_ids_tell_apart_hashes_that_share_their_low_bits():
    # more values than the low-bits table, two distinct hashes alike in their low 16 bits: sorted apart
    values = np.full(70_000, 7, dtype=np.uint64)
    values[5::3] = np.uint64((1 << 40) + 7)
    values[9] = np.uint64(3)
    ids, count = _ids(values)
    first = {}
    expected = [first.setdefault(int(v), len(first)) for v in values]
    assert count == 3 and ids.tolist() == expected
    values[5::3] = np.uint64(8)  # now their low bits differ: the table tells them apart, the same ids
    assert _ids(values)[0].tolist() == expected


def _multisets_alike(colour, rep, entity, key):
    """:func:`_alike` by its definition: each entity's sorted keys against its colour's representative's."""
    held = [sorted(int(k) for e, k in zip(entity, key) if e == x) for x in range(len(colour))]
    return all(held[x] == held[rep[c]] for x, c in enumerate(colour))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), st.integers(1, 9), st.data())
def test_alike_counts_multisets_exactly_by_every_way(nentities, nkeys, data):
    # every way _alike has (the table of counts, the counts as digits of one number, the sort) answers as the
    # definition does, on entities that share their colour's multiset or differ by one count
    import p2sim.sim.symmetry as symmetry
    incid = data.draw(st.lists(st.tuples(st.integers(0, nentities - 1), st.integers(0, nkeys - 1)), min_size=1,
                               max_size=30))
    entity = np.array([e for e, _ in incid], dtype=np.int64)
    key = np.array([k for _, k in incid], dtype=np.int64)
    drawn = data.draw(st.lists(st.integers(0, 2), min_size=nentities, max_size=nentities))
    ids: dict[int, int] = {}
    colour = np.array([ids.setdefault(c, len(ids)) for c in drawn], dtype=np.int64)  # dense, as the quotient's
    rep = np.unique(colour, return_index=True)[1]
    expected = _multisets_alike(colour, rep, entity, key)
    with pytest.MonkeyPatch.context() as mp:
        answers = []
        for small, digits in ((1 << 16, None), (-(1 << 40), None), (-(1 << 40), 1), (-(1 << 40), 2)):
            mp.setattr(symmetry, "_SMALL", small)
            if digits is not None:  # fewer digits a word than a float holds: several words per entity
                mp.setattr(symmetry, "_digits", lambda deg_max, d=digits: d)
            answers.append(symmetry._alike(colour, rep, entity, key, nkeys))
        mp.setattr(symmetry, "_SMALL", -(1 << 40))
        mp.setattr(symmetry, "_digits", lambda deg_max: 0)  # no digits: the sort
        answers.append(symmetry._alike(colour, rep, entity, key, nkeys))
    assert answers == [expected] * 5


def test_digits_keep_every_count_exact_in_a_float():
    from p2sim.sim.symmetry import _digits
    for deg_max in (1, 2, 7, 10, 1023, 1 << 26, (1 << 53) - 1):
        g = _digits(deg_max)
        assert (deg_max + 1) ** g <= 1 << 53 < (deg_max + 1) ** (g + 1)
    assert _digits(1 << 53) == 0
    assert _digits(0) == 53  # no incidences at all: base 2, and an end to the search


def test_alike_of_entities_without_incidences(monkeypatch):
    import p2sim.sim.symmetry as symmetry
    monkeypatch.setattr(symmetry, "_SMALL", 4)  # 3 x 5 counts past the table, 3 words within: the digits
    none = np.zeros(0, dtype=np.int64)
    assert symmetry._alike(np.zeros(3, dtype=np.int64), np.zeros(1, dtype=np.int64), none, none, 5)
