from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.util.errors import PlacementError
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.mesh import device_order, megatron_axes, megatron_match, megatron_ranks, mesh_slices, rank_mesh
from p2sim.formalism.placement import Placement, enumerate_matrices
from p2sim.topology import load_system


def _factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@st.composite
def placements(draw):
    h = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    n_axes = draw(st.integers(1, 3))
    axes = [1] * n_axes
    for f in _factors(math.prod(h)):
        axes[draw(st.integers(0, n_axes - 1))] *= f
    mats = enumerate_matrices(h, axes)
    matrix = mats[draw(st.integers(0, len(mats) - 1))]
    red = draw(st.lists(st.integers(0, n_axes - 1), min_size=1, max_size=n_axes, unique=True))
    return Placement.of(h, axes, matrix), red


@settings(max_examples=300, deadline=None)
@given(placements())
def test_every_reduction_group_is_exactly_a_mesh_slice_along_the_reduction_axes(case):
    pl, red = case
    mesh = rank_mesh(pl)
    assert mesh.shape == pl.axes
    assert sorted(mesh.ravel().tolist()) == list(range(pl.devices))
    groups = {frozenset(g) for g in Lowering.of(pl, red).reduction_groups()}
    slices = mesh_slices(mesh, red)
    assert {frozenset(s) for s in slices} == groups
    assert len(slices) == len(groups) == pl.devices // math.prod(pl.axes[a] for a in set(red))
    # the flat order is the mesh read row-major, so reshaping it gives the mesh back
    assert np.array_equal(np.array(device_order(pl)).reshape(pl.axes), mesh)


@pytest.mark.parametrize("system", ["a100", "v100", "p2-16gpu"])
def test_rank_is_node_times_gpus_per_node_plus_local_gpu(system):
    topo = load_system(system, nodes=2)
    for d in range(topo.devices):
        node, local = divmod(d, topo.gpus_per_node)
        attrs = topo.graph.nodes[topo.gpu_name(d)]
        assert (attrs["node"], attrs["device"]) == (node, d)
        assert topo.gpu_name(d) == f"n{node}/{topo.spec.gpus[local]}"


def test_a_two_by_two_mesh_by_hand():
    # 2 nodes x 2 GPUs, axes (2, 2), axis 0 across nodes: axis 0 is the node, axis 1 the local GPU
    mesh = rank_mesh(Placement.of([2, 2], [2, 2], [[2, 1], [1, 2]]))
    assert mesh.tolist() == [[0, 1], [2, 3]]
    assert mesh_slices(mesh, [0]) == [(0, 2), (1, 3)]
    # axis 0 inside the node instead: the mesh is the transpose
    assert rank_mesh(Placement.of([2, 2], [2, 2], [[1, 2], [2, 1]])).tolist() == [[0, 2], [1, 3]]


def test_slices_along_a_missing_axis_are_refused():
    with pytest.raises(PlacementError, match="reduce"):
        mesh_slices(np.arange(4).reshape(2, 2), [2])


def test_megatrons_second_order_is_todays_tp_cp_ep_pp_dp_context_included():
    # --use-tp-pp-dp-mapping gives order 'tp-cp-ep-pp-dp' (megatron/training/initialize.py): tensor stride 1,
    # context 2, pipeline 4, data 8; p2sim's GPU level holds pipeline, context, tensor (the first most significant)
    names = ("data", "pipeline", "context", "tensor")
    pl = Placement.of([2, 8], [2, 2, 2, 2], [[2, 1], [1, 2], [1, 2], [1, 2]])
    assert megatron_match(pl, names) == "rank order tp-cp-ep-pp-dp matches this placement"
    want = megatron_ranks(pl.axes, names, "tp-cp-ep-pp-dp")
    assert want[1, 1, 0, 1] == 8 + 4 + 1 and np.array_equal(want, rank_mesh(pl))


def test_separate_context_and_expert_axes_are_not_a_megatron_order():
    # Megatron-Core's expert groups are tp-strided runs of the dense context x data ranks: with context 2, its
    # expert groups of 2 are the context pairs, not p2sim's expert axis (stride 4 here)
    names = ("expert", "context", "tensor")
    pl = Placement.of([8], [2, 2, 2], [[2], [2], [2]])
    assert "folds expert parallelism into context" in megatron_match(pl, names)
    assert isinstance(megatron_ranks(pl.axes, names), str)


def test_an_axis_with_no_megatron_dimension_is_named():
    with pytest.raises(PlacementError, match="no Megatron-LM dimension is named batch"):
        megatron_axes(("data", "batch"), (2, 8))
    assert megatron_axes(("data", "batch"), (16, 1)) == {"dp": 0}  # an axis of 1 places nothing
