"""A placement as the device mesh a training framework builds.

Frameworks describe a placement as an n-dimensional *mesh* of global ranks, one mesh
dimension per parallelism axis: PyTorch's ``DeviceMesh`` takes the rank tensor, JAX's
``Mesh`` takes ``jax.devices()`` reordered and reshaped.  p2sim numbers devices in
hierarchy order, so with one rank per GPU launched node by node (``torchrun``'s
``RANK = node_rank x nproc_per_node + LOCAL_RANK``) the global rank of GPU ``g`` of
node ``n`` is p2sim's device ``n x gpus_per_node + g``.  The mesh entry at axis
coordinates ``(x_0, .., x_m)`` is the device that the parallelism matrix gives those
coordinates (:meth:`Placement.axis_table`).

The devices of one reduction group agree on every non-reduction axis, so each group is
the mesh *slice* along the reduction axes at fixed other coordinates:
``ProcessGroup``-per-slice is exactly what ``DeviceMesh`` builds for those dimensions.

Examples
--------
Two nodes of 4 GPUs, axes (data 4, tensor 2), the data axis spread over both nodes:

>>> from p2sim.formalism.placement import Placement
>>> pl = Placement.of([2, 4], [4, 2], [[2, 2], [1, 2]])
>>> rank_mesh(pl).tolist()
[[0, 1], [2, 3], [4, 5], [6, 7]]
>>> mesh_slices(rank_mesh(pl), [0])      # the data-parallel groups: mesh columns
[(0, 2, 4, 6), (1, 3, 5, 7)]
>>> mesh_slices(rank_mesh(pl), [1])      # the tensor-parallel groups: mesh rows
[(0, 1), (2, 3), (4, 5), (6, 7)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..util.errors import PlacementError
from .placement import Placement

__all__ = ["rank_mesh", "mesh_slices", "device_order", "megatron_match", "megatron_matrix", "MEGATRON_ORDERS"]

# Megatron-LM's rank orders (megatron/core/parallel_state.py, RankGenerator: the first name
# varies fastest): the default and the older tensor-pipeline-data mapping
MEGATRON_ORDERS = ("tp-cp-ep-dp-pp", "tp-pp-dp")
# axis names p2sim users give, by the Megatron-LM dimension they are
_MEGATRON_NAMES = {"tp": ("tensor", "tp", "model"), "cp": ("context", "cp", "sequence", "seq"),
                   "ep": ("expert", "ep"), "dp": ("data", "dp"), "pp": ("pipeline", "pp", "pipe", "stage")}


def _megatron_dims(axis_names: Sequence[str], sizes: Sequence[int]) -> dict[str, int] | str:
    """Each Megatron-LM dimension's axis index, or why the axes are not named as Megatron names them
    (an axis of size 1 may be named anything: it places nothing)."""
    dim_of: dict[str, int] = {}
    for i, name in enumerate(axis_names):
        meg = next((m for m, names in _MEGATRON_NAMES.items() if name.lower() in names), None)
        if meg is None or meg in dim_of:
            if sizes[i] == 1:
                continue
            return (f"no Megatron-LM dimension is named {name} (name axes tensor, context, expert, data, pipeline)"
                    if meg is None else f"two axes are Megatron-LM's {meg}")
        dim_of[meg] = i
    return dim_of


def megatron_matrix(levels: Sequence[int], sizes: Sequence[int],
                    axis_names: Sequence[str]) -> tuple[tuple[tuple[int, ...], ...] | None, str]:
    """The parallelism matrix of Megatron-LM's default rank order ``tp-cp-ep-dp-pp``, or why there is none.

    Megatron numbers ranks with tensor varying fastest, then context, expert, data and pipeline
    (megatron/core/parallel_state.py, RankGenerator), and consecutive ranks are consecutive GPUs, so
    the innermost level fills with tensor first, then context, and so on outwards.  That is a
    placement only where each axis's share of a level divides evenly (an axis of 6 over levels of 4
    is not one).

    Examples
    --------
    >>> megatron_matrix([2, 8], [2, 2, 4], ("data", "pipeline", "tensor"))[0]   # pipeline outermost
    ((1, 2), (2, 1), (1, 4))
    >>> megatron_matrix([2, 6], [3, 4], ("data", "tensor"))[1]   # tensor 4 neither fits 6 GPUs nor fills them
    "tensor 4 does not divide evenly into the levels left for it by Megatron-LM's order"
    >>> megatron_matrix([2, 8], [2, 8], ("a", "b"))[1]
    'no Megatron-LM dimension is named a (name axes tensor, context, expert, data, pipeline)'
    """
    dims = _megatron_dims(axis_names, sizes)
    if isinstance(dims, str):
        return None, dims
    order = [dims[m] for m in MEGATRON_ORDERS[0].split("-") if m in dims]
    order += [i for i in range(len(sizes)) if i not in order]  # axes of size 1 named otherwise
    matrix = [[1] * len(levels) for _ in sizes]
    left = [int(s) for s in sizes]
    for j in reversed(range(len(levels))):  # innermost level first: it holds the fastest ranks
        room = int(levels[j])
        for i in order:
            if room == 1:
                break
            share = math.gcd(left[i], room)
            if share not in (left[i], room):  # the axis neither fits the room nor fills it: no mixed radix
                return None, (f"{axis_names[i]} {sizes[i]} does not divide evenly into the levels left for it by "
                              "Megatron-LM's order")
            matrix[i][j] = share
            left[i] //= share
            room //= share
            if left[i] > 1:  # this axis fills the rest of the level: slower axes start one level out
                break
    return tuple(tuple(row) for row in matrix), f"Megatron-LM's rank order {MEGATRON_ORDERS[0]}"


def rank_mesh(placement: Placement) -> np.ndarray:
    """The global rank at each axis coordinate: an array of shape ``placement.axes``."""
    return placement.axis_table().copy()


def device_order(placement: Placement) -> list[int]:
    """The mesh's ranks in row-major order: index ``jax.devices()`` with it, then reshape.

    Examples
    --------
    >>> device_order(Placement.of([2, 4], [2, 4], [[1, 2], [2, 2]]))
    [0, 1, 4, 5, 2, 3, 6, 7]
    """
    return [int(x) for x in rank_mesh(placement).ravel()]


def mesh_slices(mesh: np.ndarray, axes: Sequence[int]) -> list[tuple[int, ...]]:
    """The groups of ranks varying along ``axes`` with every other coordinate fixed.

    Groups come in row-major order of the fixed coordinates; inside a group the ranks
    are in row-major order of the varying ones.
    """
    dims = sorted(set(int(a) for a in axes))
    if not dims or dims[0] < 0 or dims[-1] >= mesh.ndim:
        raise PlacementError(f"reduce: axes {list(axes)} are not mesh dimensions 0..{mesh.ndim - 1}")
    rest = [d for d in range(mesh.ndim) if d not in dims]
    size = int(np.prod([mesh.shape[d] for d in dims]))
    moved = np.transpose(mesh, rest + dims).reshape(-1, size)
    return [tuple(int(x) for x in row) for row in moved]


def megatron_match(placement: Placement, axis_names: Sequence[str]) -> str:
    """Which of Megatron-LM's rank orders lays ranks out as this placement does, in words.

    Megatron numbers ranks with the first dimension of its order string varying fastest;
    the axes are matched to its dimensions by name (tensor/tp, context/cp, expert/ep,
    data/dp, pipeline/pp).

    Examples
    --------
    >>> pl = Placement.of([4, 8], [8, 2, 2], [[1, 8], [2, 1], [2, 1]])   # tensor inside nodes, then data
    >>> megatron_match(pl, ("tensor", "pipeline", "data"))
    'rank order tp-cp-ep-dp-pp matches this placement'
    >>> megatron_match(Placement.of([4, 8], [8, 2, 2], [[1, 8], [2, 1], [2, 1]]), ("tensor", "data", "pipeline"))
    'rank order tp-pp-dp matches this placement'
    >>> megatron_match(Placement.of([2, 8], [2, 8], [[1, 2], [2, 4]]), ("data", "tensor"))
    "none of Megatron-LM's rank orders (tp-cp-ep-dp-pp, tp-pp-dp) matches this placement"
    >>> megatron_match(pl, ("a", "b", "c"))
    'no Megatron-LM dimension is named a (name axes tensor, context, expert, data, pipeline)'
    """
    dim_of = _megatron_dims(axis_names, placement.axes)
    if isinstance(dim_of, str):
        return dim_of
    have = rank_mesh(placement)
    matches = []
    for order in MEGATRON_ORDERS:
        names = order.split("-")
        if any(m not in names and placement.axes[i] > 1 for m, i in dim_of.items()):
            continue
        want = np.zeros_like(have)
        stride = 1
        for m in names:  # the first varies fastest
            if m in dim_of:
                i = dim_of[m]
                shape = [1] * have.ndim
                shape[i] = placement.axes[i]
                want = want + np.arange(placement.axes[i]).reshape(shape) * stride
                stride *= placement.axes[i]
        if np.array_equal(want, have):
            matches.append(order)
    if not matches:
        return f"none of Megatron-LM's rank orders ({', '.join(MEGATRON_ORDERS)}) matches this placement"
    return f"rank order{'s' if len(matches) > 1 else ''} {' and '.join(matches)} match{'' if len(matches) > 1 else 'es'} this placement"
