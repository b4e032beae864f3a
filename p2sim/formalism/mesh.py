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

from collections.abc import Sequence

import numpy as np

from ..util.errors import PlacementError
from .placement import Placement

__all__ = ["rank_mesh", "mesh_slices", "device_order"]


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
