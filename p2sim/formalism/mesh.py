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

__all__ = ["rank_mesh", "mesh_slices", "device_order", "megatron_match", "megatron_matrix", "megatron_ranks",
           "megatron_axes", "MEGATRON_ORDERS"]

# Megatron-LM's rank orders (megatron/core/parallel_state.py, RankGenerator: the first name
# varies fastest): initialize_model_parallel's default, and the one pretrain_gpt.py's
# --use-tp-pp-dp-mapping selects (megatron/training/initialize.py: order='tp-cp-ep-dp-pp' if not
# args.use_tp_pp_dp_mapping else 'tp-cp-ep-pp-dp'; older releases spelt the second 'tp-pp-dp')
MEGATRON_ORDERS = ("tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp")
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


def megatron_matrix(levels: Sequence[int], sizes: Sequence[int], axis_names: Sequence[str],
                    order: str = MEGATRON_ORDERS[0]) -> tuple[tuple[tuple[int, ...], ...] | None, str]:
    """The parallelism matrix of a Megatron-LM rank order (default ``tp-cp-ep-dp-pp``, its own), or why there is none.

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
    fill = [dims[m] for m in order.split("-") if m in dims]
    fill += [i for i in range(len(sizes)) if i not in fill]  # axes of size 1 named otherwise
    matrix = [[1] * len(levels) for _ in sizes]
    left = [int(s) for s in sizes]
    for j in reversed(range(len(levels))):  # innermost level first: it holds the fastest ranks
        room = int(levels[j])
        for i in fill:
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
    return tuple(tuple(row) for row in matrix), f"Megatron-LM's rank order {order}"


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


def megatron_axes(axis_names: Sequence[str], sizes: Sequence[int], field: str = "axes") -> dict[str, int]:
    """Each Megatron-LM dimension (tp, cp, ep, dp, pp) that an axis is, by axis index; a
    :class:`PlacementError` naming the axis that is none (an axis of size 1 may be named anything).

    >>> megatron_axes(("data", "tensor"), (2, 8))
    {'dp': 0, 'tp': 1}
    >>> megatron_axes(("data", "stage", "batch"), (2, 2, 4))
    Traceback (most recent call last):
    ...
    p2sim.util.errors.PlacementError: axes: no Megatron-LM dimension is named batch (name axes tensor, context, expert, data, pipeline)
    """
    dims = _megatron_dims(axis_names, sizes)
    if isinstance(dims, str):
        raise PlacementError(f"{field}: {dims}")
    return dims


def megatron_ranks(sizes: Sequence[int], axis_names: Sequence[str], order: str = MEGATRON_ORDERS[0]) -> np.ndarray | str:
    """Megatron-LM's global rank at each axis coordinate (an array of shape ``sizes``) under ``order``, or why
    Megatron-LM lays out no ranks for these axes in that order.

    Megatron-Core numbers the same ranks twice (megatron/core/parallel_state.py, initialize_model_parallel):
    the dense layers' grid tp, cp, dp, pp with dp = world / (tp x cp x pp), and the expert layers' grid
    tp (its expert tensor parallel size, set equal), ep, expert-dp, pp, each by RankGenerator in ``order``
    with ep (dense) or cp (expert) left out.  So an expert axis is the fastest part of Megatron's data
    ranks: p2sim's expert and data axes are its expert and expert-data dimensions where context is 1.
    With context and expert both above 1 Megatron's expert groups run over context ranks (it folds
    expert parallelism into context and data), which separate axes cannot say; and the second order
    with expert and pipeline both above 1 fails its check that both grids share the pipeline groups.

    >>> megatron_ranks((2, 8), ("data", "tensor")).tolist()[1]     # tensor fastest, then data
    [8, 9, 10, 11, 12, 13, 14, 15]
    >>> megatron_ranks((2, 2, 4), ("pipeline", "data", "tensor"), "tp-cp-ep-pp-dp")[:, :, 0].tolist()
    [[0, 8], [4, 12]]
    >>> megatron_ranks((2, 4, 2), ("context", "expert", "tensor"))
    'Megatron-LM folds expert parallelism into context and data parallelism (its expert groups run over context ranks: megatron/core/parallel_state.py), so separate context and expert axes have no Megatron-LM layout'
    """
    dims = _megatron_dims(axis_names, sizes)
    if isinstance(dims, str):
        return dims
    size = {m: (int(sizes[dims[m]]) if m in dims else 1) for m in _MEGATRON_NAMES}
    if size["cp"] > 1 and size["ep"] > 1:
        return ("Megatron-LM folds expert parallelism into context and data parallelism (its expert groups run over "
                "context ranks: megatron/core/parallel_state.py), so separate context and expert axes have no "
                "Megatron-LM layout")
    if not order.endswith("pp") and size["ep"] > 1 and size["pp"] > 1:
        return (f"Megatron-LM refuses rank order {order} with expert and pipeline both above 1 (initialize_model_parallel: "
                "its dense and expert layers' data-parallel sizes differ)")
    table = np.zeros(tuple(int(s) for s in sizes), dtype=np.int64)
    stride = 1
    for m in order.split("-"):  # the first varies fastest
        if m in dims:
            i = dims[m]
            shape = [1] * len(sizes)
            shape[i] = int(sizes[i])
            table = table + np.arange(int(sizes[i])).reshape(shape) * stride
            stride *= int(sizes[i])
    return table


def megatron_match(placement: Placement, axis_names: Sequence[str]) -> str:
    """Which of Megatron-LM's rank orders lays ranks out as this placement does, in words.

    Megatron numbers ranks with the first dimension of its order string varying fastest
    (:func:`megatron_ranks`); the axes are matched to its dimensions by name (tensor/tp,
    context/cp, expert/ep, data/dp, pipeline/pp).

    Examples
    --------
    >>> pl = Placement.of([4, 8], [8, 2, 2], [[1, 8], [2, 1], [2, 1]])   # tensor inside nodes, then data
    >>> megatron_match(pl, ("tensor", "pipeline", "data"))
    'rank order tp-cp-ep-dp-pp matches this placement'
    >>> megatron_match(Placement.of([4, 8], [8, 2, 2], [[1, 8], [2, 1], [2, 1]]), ("tensor", "data", "pipeline"))
    'rank order tp-cp-ep-pp-dp matches this placement'
    >>> megatron_match(Placement.of([2, 8], [2, 8], [[1, 2], [2, 4]]), ("data", "tensor"))
    "none of Megatron-LM's rank orders (tp-cp-ep-dp-pp, tp-cp-ep-pp-dp) matches this placement"
    >>> megatron_match(pl, ("a", "b", "c"))
    'no Megatron-LM dimension is named a (name axes tensor, context, expert, data, pipeline)'
    """
    have = rank_mesh(placement)
    matches, why = [], []
    for order in MEGATRON_ORDERS:
        want = megatron_ranks(placement.axes, axis_names, order)
        if isinstance(want, str):
            why.append(want)
        elif np.array_equal(want, have):
            matches.append(order)
    if len(why) == len(MEGATRON_ORDERS):  # no order lays these axes out at all: the first reason says why
        return why[0]
    if not matches:
        return f"none of Megatron-LM's rank orders ({', '.join(MEGATRON_ORDERS)}) matches this placement"
    return f"rank order{'s' if len(matches) > 1 else ''} {' and '.join(matches)} match{'' if len(matches) > 1 else 'es'} this placement"
