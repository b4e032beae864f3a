"""The Demand (issue 44 item 1): what a study is asked to make fast, one value for both kinds of question."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.studies.demand import DEFAULT_REDUCE, Demand, Reduction, no_model_options, parse_reduction
from p2sim.topology import load_system
from p2sim.util.errors import InputError, PlacementError

NAMES = ("data", "pipeline", "tensor")
SIZES = (2, 2, 4)


def test_one_reduction_from_reduce_and_bytes():
    """rank's and simulate's one reduction: the axes as given, P2's buffer by default (2^29 x nodes x 4 B)."""
    topo = load_system("a100", 2)
    d = Demand.of_reduce(DEFAULT_REDUCE, None, ("data", "tensor"), topo)
    assert d.reductions == (Reduction((0,), 2**29 * 2 * 4),) and d.default_bytes
    assert (d.reduce_axes, d.bytes_per_gpu, d.largest) == ((0,), 2**32, 2**32)
    d = Demand.of_reduce(["tensor", "data"], "2GiB", ("data", "tensor"), topo)
    assert d.reduce_axes == (1, 0) and d.bytes_per_gpu == 2**31 and not d.default_bytes  # as given, checked later
    assert not d.whole_step and d.parts == () and d.overlap is None and d.workload is None


def test_reductions_in_order_each_checked():
    d = Demand.of_reductions(["tensor:64MiB x 24", "data,pipeline:1GiB"], NAMES, SIZES)
    assert d.reductions == (Reduction((2,), 64 * 2**20, 24), Reduction((0, 1), 2**30, 1))
    assert d.largest == 2**30
    assert Demand.of_reductions(Reduction((0,), 8), NAMES, SIZES).reductions == (Reduction((0,), 8),)
    with pytest.raises(InputError, match="^reduction: give at least one"):
        Demand.of_reductions((), NAMES, SIZES)
    with pytest.raises(InputError, match="is more than 1 PiB in one step"):
        Demand.of_reductions(["data:512TiB x 3"], NAMES, SIZES)
    with pytest.raises(PlacementError, match="nothing to reduce"):
        Demand.of_reductions(["0:1GiB"], ("a", "b"), (1, 8))


def test_a_models_step_merges_the_reductions_given(tiny):
    """The model's AllReduces first, then those given; an equal one (axes and size) is one, its counts added."""
    d = Demand.of_model(tiny, "seq=2048,global_batch=64", None, NAMES, SIZES)
    assert d.whole_step and d.workload is not None and d.parts == d.workload.parts and d.overlap is None
    first = d.reductions[0]
    more = Demand.of_model(tiny, "seq=2048,global_batch=64", None, NAMES, SIZES,
                           [Reduction(first.axes, first.bytes, 3), "data:1MiB"])
    assert more.reductions[0] == Reduction(first.axes, first.bytes, first.count + 3)
    assert more.reductions[-1] == Reduction((0,), 2**20) and len(more.reductions) == len(d.reductions) + 1
    timed = Demand.of_model(tiny, "seq=2048,global_batch=64", 0.01, NAMES, SIZES)
    assert timed.overlap is not None
    assert timed.overlap.backward_seconds == pytest.approx(timed.workload.layers_per_stage * 2 / 3 * 0.01)
    assert d.largest == max([r.bytes for r in d.reductions] + [p.size for p in d.parts])


def test_a_models_options_need_a_model():
    no_model_options(None, None)
    with pytest.raises(InputError, match="^train: describes the training step of a --model"):
        no_model_options("seq=8192", None)
    with pytest.raises(InputError, match="^compute-per-layer: describes"):
        no_model_options(None, 0.01)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([(0,), (1,), (2,), (0, 1), (0, 2)]), st.integers(1, 2**30),
                          st.integers(1, 64)), min_size=1, max_size=6))
def test_reductions_keep_their_order_and_values(items):
    """Reductions given as texts or as values are the same demand, in the order given, every one kept."""
    values = [Reduction(a, b, n) for a, b, n in items]
    texts = [f"{','.join(NAMES[i] for i in a)}:{b} x {n}" for a, b, n in items]
    assert Demand.of_reductions(values, NAMES, SIZES).reductions == tuple(values)
    assert Demand.of_reductions(texts, NAMES, SIZES).reductions == tuple(values)
    assert all(parse_reduction(t, NAMES) == v for t, v in zip(texts, values))
    assert Demand.of_reductions(texts, NAMES, SIZES).largest == max(b for _, b, _ in items)
