"""The per-level mesh: one mesh dimension per (axis, hardware level) pair, and each program step on it.

A framework mesh with one dimension per parallelism axis cannot run most multi-step
programs: ``ReduceScatter`` inside a node then ``AllReduce`` across nodes reduces over
*parts* of the data axis, and no slice of a per-axis mesh is such a part.  Splitting every
axis at the hardware levels it spans gives the dimensions those steps need.  The
parallelism matrix says how: entry ``X[i][j] > 1`` becomes the dimension ``(axis i,
level j)`` of that size.

Because a device's global index is the mixed-radix number of its digits ordered level
by level, axis by axis inside a level (:mod:`p2sim.formalism.placement`), the per-level
mesh with dimensions in that order is just ``arange(devices).reshape(sizes)``: the
layout ``torch.distributed.init_device_mesh`` builds and ``jax.devices()`` reshaped.

Every lowered step of a program that uses ``Inside`` or ``Parallel`` forms has groups that
are mesh slices along some of these dimensions (:func:`step_dims` finds them, in the order
that reproduces each group's member order); ``Master`` forms reduce only a subset of the
devices and are not slices.

Examples
--------
Two nodes of 4 GPUs, axes (data 4, tensor 2), data split 2 ways over the nodes and 2 ways
inside each node:

>>> from p2sim.formalism.placement import Placement
>>> from p2sim.formalism.hierarchy import Lowering
>>> from p2sim.formalism.program import parse_program
>>> pl = Placement.of([2, 4], [4, 2], [[2, 2], [1, 2]])
>>> dims = level_dims(pl, ("data", "tensor"), ("node", "gpu"))
>>> [(d.name, d.size) for d in dims]
[('data_node', 2), ('data_gpu', 2), ('tensor_gpu', 2)]
>>> steps = Lowering.of(pl, [0]).lower(parse_program(
...     "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"))
>>> [[dims[k].name for k in step_dims(pl, s)] for s in steps]
[['data_gpu'], ['data_node'], ['data_gpu']]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .hierarchy import Groups, LoweredStep, Lowering, Order
from .placement import Placement
from .program import Program, parse_program
from .semantics import Op

__all__ = ["LevelDim", "MeshStep", "MESH_OPS", "level_dims", "level_mesh", "step_dims", "dims_slices", "mesh_program"]

# the collectives both frameworks have over a group of a mesh: JAX's psum / psum_scatter /
# all_gather and torch.distributed's all_reduce / reduce_scatter_tensor / all_gather_into_tensor
MESH_OPS = (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER)


@dataclass(frozen=True)
class LevelDim:
    """One dimension of the per-level mesh: axis ``axis`` split ``size`` ways at hardware level ``level``."""

    axis: int
    level: int
    size: int
    name: str


def level_dims(placement: Placement, axis_names: Sequence[str], level_names: Sequence[str]) -> tuple[LevelDim, ...]:
    """The mesh dimensions in device-index order: level by level, axis by axis inside a level.

    Parts of size 1 are left out (they would be dimensions of size 1).  A placement
    with no part above 1 (one device) keeps the first axis at the innermost level.
    """
    out = [LevelDim(i, j, int(placement.matrix[i][j]), f"{axis_names[i]}_{level_names[j]}")
           for j in range(len(placement.hierarchy)) for i in range(len(placement.axes))
           if placement.matrix[i][j] > 1]
    if not out:
        j = len(placement.hierarchy) - 1
        out = [LevelDim(0, j, 1, f"{axis_names[0]}_{level_names[j]}")]
    return tuple(out)


def level_mesh(placement: Placement) -> np.ndarray:
    """Global device index at each per-level coordinate (shape: the parts above 1, in device order)."""
    sizes = [int(placement.matrix[i][j]) for j in range(len(placement.hierarchy))
             for i in range(len(placement.axes)) if placement.matrix[i][j] > 1]
    return np.arange(math.prod(placement.hierarchy)).reshape(sizes or [1])


def dims_slices(mesh: np.ndarray, dims: Sequence[int]) -> list[tuple[int, ...]]:
    """The groups varying along ``dims`` (members row-major in the order given), every other coordinate fixed."""
    rest = [d for d in range(mesh.ndim) if d not in dims]
    size = int(np.prod([mesh.shape[d] for d in dims]))
    return [tuple(int(x) for x in row) for row in np.transpose(mesh, rest + list(dims)).reshape(-1, size)]


def step_dims(placement: Placement, step: LoweredStep) -> tuple[int, ...] | None:
    """The mesh dimensions whose slices are the step's groups, or ``None`` when they are not slices.

    The order of the returned dimensions reproduces each group's member order (row-major
    over them).  For an AllReduce, whose result does not depend on the member order, the
    member *sets* are enough; the dimensions then come in mesh order.
    """
    mesh = level_mesh(placement)
    if not step.groups:
        return None
    coords = np.stack(np.unravel_index(np.asarray(step.groups[0]), mesh.shape), axis=1)
    varying = [d for d in range(mesh.ndim) if len(set(coords[:, d].tolist())) > 1]
    if int(np.prod([mesh.shape[d] for d in varying])) != len(step.groups[0]):
        return None
    want = sorted(tuple(g) for g in step.groups)  # the order of the groups themselves does not matter
    if len(want) * len(want[0]) != math.prod(placement.hierarchy):
        return None  # a Master form: only some devices take part
    for perm in itertools.permutations(varying):
        if sorted(dims_slices(mesh, perm)) == want:
            return tuple(perm)
    if step.op is Op.ALL_REDUCE and sorted(map(sorted, dims_slices(mesh, varying))) == sorted(map(sorted, want)):
        return tuple(varying)
    return None


@dataclass(frozen=True)
class MeshStep:
    """One program step as a collective over per-level mesh dimensions (indices into :func:`level_dims`)."""

    op: Op
    dims: tuple[int, ...]
    groups: Groups


def mesh_program(placement: Placement, reduce_axes: Sequence[int], program: Program | str,
                 order: Order | str = Order.ALIGNED, ascending: bool = False) -> tuple[MeshStep, ...] | str:
    """A program's steps on the per-level mesh, or the reason it does not run there.

    ``ascending`` asks that every order-sensitive step (all but AllReduce) has its members
    in ascending rank order, as ``torch.distributed.new_group`` sorts them; JAX takes the
    axis names in any order, so it only needs the steps to be slices.

    Examples
    --------
    >>> from p2sim.formalism.placement import Placement
    >>> pl = Placement.of([2, 4], [8], [[2, 4]])
    >>> [(s.op.value, s.dims) for s in mesh_program(pl, [0], "ReduceScatter(slice=1, Inside) ; "
    ...     "AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)")]
    [('ReduceScatter', (1,)), ('AllReduce', (0,)), ('AllGather', (1,))]
    >>> mesh_program(pl, [0], "Reduce(slice=1, Inside) ; AllReduce(slice=1, Master(0)) ; Broadcast(slice=1, Inside)")
    'Reduce has no JAX or PyTorch mesh collective p2sim emits'
    """
    prog = parse_program(program) if isinstance(program, str) else program
    steps = []
    for ins, low in zip(prog.instructions, Lowering.of(placement, reduce_axes, order).lower(prog)):
        if ins.op not in MESH_OPS:
            return f"{ins.op.value} has no JAX or PyTorch mesh collective p2sim emits"
        if not low.groups:
            continue  # single-device groups: nothing to do
        dims = step_dims(placement, low)
        if dims is None:
            return f"the groups of {ins.text} are not slices of the per-level mesh"
        if ascending and ins.op is not Op.ALL_REDUCE and any(list(g) != sorted(g) for g in low.groups):
            return (f"{ins.text} orders its members other than by rank (order {Order.parse(order).value}), "
                    "which PyTorch's groups cannot")
        steps.append(MeshStep(ins.op, dims, low.groups))
    return tuple(steps)
