"""``--emit jax|torch``: the chosen placement and program as code a framework runs.

Both forms build the *per-level mesh* (:mod:`p2sim.formalism.level_mesh`): one dimension
per (axis, hardware level) part, so that every step of a multi-step program is a
collective over some of its dimensions.  Rank ``r`` sits at row-major position ``r``,
which is the layout ``torch.distributed.init_device_mesh`` builds and ``jax.devices()``
reshaped gives.  Each reduction becomes one function that runs its program's steps in
order on a rank's flat gradient block:

* JAX: ``jax.lax.psum`` / ``psum_scatter(tiled=True)`` / ``all_gather(tiled=True)`` over
  named mesh axes inside ``jax.shard_map``; a step over several dimensions names them in
  the order that lists its members as p2sim's groups do (row-major over the tuple);
* PyTorch: ``dist.all_reduce`` / ``reduce_scatter_single`` / ``all_gather_single`` on
  the step's process groups (PyTorch 2.13's names: ``reduce_scatter_tensor`` and
  ``all_gather_into_tensor`` warn ``FutureWarning`` there and call them; releases before
  have only the old names, which the emitted code falls back to): ``DeviceMesh.get_group`` for one dimension,
  ``dist.new_subgroups_by_enumeration`` over the mesh's slices for several (public API;
  ``new_group`` sorts members, so the program must list them by rank: the ``aligned``
  device order does).

The header says the system, the placement in words, the device order, which of
Megatron-LM's rank orders matches, the mesh, and each reduction's program with its
predicted time and every step's groups.
"""

from __future__ import annotations

import math

from ..formalism.level_mesh import LevelDim, MeshStep
from ..formalism.naming import axes_text
from ..formalism.placement import format_matrix
from ..formalism.semantics import Op
from ..util.units import format_seconds
from .mesh_choice import MeshChoice, MeshReduction

__all__ = ["jax_code", "torch_code", "header_lines", "block_divisor"]

_JAX_CALLS = {Op.ALL_REDUCE: "x = jax.lax.psum(x, {axes})",
              Op.REDUCE_SCATTER: "x = jax.lax.psum_scatter(x, {axes}, scatter_dimension=0, tiled=True)",
              Op.ALL_GATHER: "x = jax.lax.all_gather(x, {axes}, axis=0, tiled=True)"}
_TORCH_CALLS = {Op.ALL_REDUCE: ["dist.all_reduce(x, group={g})"],
                Op.REDUCE_SCATTER: ["y = x.new_empty(x.numel() // dist.get_world_size({g}))",
                                    "REDUCE_SCATTER(y, x, group={g})", "x = y"],
                Op.ALL_GATHER: ["y = x.new_empty(x.numel() * dist.get_world_size({g}))",
                                "ALL_GATHER(y, x, group={g})", "x = y"]}
# torch.distributed's current names (2.13: all_gather_into_tensor and reduce_scatter_tensor are
# @deprecated(category=FutureWarning) wrappers of these, distributed_c10d.py), else the old ones
_TORCH_NAMES = ['# PyTorch 2.13 names these two *_single (the older names warn); earlier releases have only the older',
                'ALL_GATHER = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor',
                'REDUCE_SCATTER = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor']


def _names(dims: tuple[LevelDim, ...], step: MeshStep) -> tuple[str, ...]:
    return tuple(dims[k].name for k in step.dims)


def _groups_text(step: MeshStep) -> str:
    n, first = len(step.groups), list(step.groups[0])
    return f"{n} group{'s' if n > 1 else ''} of {len(first)}, the first {first}"


def header_lines(c: MeshChoice) -> list[str]:
    pl, dims = c.placement, c.dims
    lines = [f"# p2sim: {c.system}, {c.nodes} nodes x {c.gpus_per_node} GPUs; axes {axes_text(pl.axes, c.names)}; "
             f"matrix {format_matrix(pl.matrix)}",
             f"# placement: {c.described}",
             f"# rank = node x {c.gpus_per_node} + local GPU (torchrun --nnodes {c.nodes} "
             f"--nproc-per-node {c.gpus_per_node}: RANK = node_rank x {c.gpus_per_node} + LOCAL_RANK)",
             f"# device order: {c.order.value} (the steps' groups below list members as p2sim chose them)",
             f"# Megatron-LM: {c.megatron}",
             "# per-level mesh: " + " x ".join(f"{d.name}={d.size}" for d in dims)
             + " (rank r at row-major position r)"]
    for r in c.reductions:
        lines.append(f"# reduce over {', '.join(c.names[a] for a in r.axes)}: {r.algo} {r.program} "
                     f"({format_seconds(r.seconds)} predicted)")
        for i, s in enumerate(r.steps or (), 1):
            lines.append(f"#   step {i}: {s.op.value} over {', '.join(_names(dims, s))} ({_groups_text(s)})")
        if r.note:
            lines.append(f"#   {r.note}")
    lines += [f"# note: {n}" for n in c.notes]
    return lines


def _function_name(c: MeshChoice, r: MeshReduction) -> str:
    return "reduce_" + "_".join(c.names[a] for a in r.axes)


def block_divisor(steps: tuple[MeshStep, ...]) -> int:
    """What a block's length must be a multiple of for every ReduceScatter to split it evenly.

    A ReduceScatter over g members divides the length by g, an AllGather multiplies it: the
    k-th ReduceScatter needs ``L x (AllGathers before it) / (ReduceScatters before it)``
    divisible by its g.  For the usual ReduceScatters-then-AllGathers this is the product of
    the ReduceScatter group sizes (not each group size alone: 2 then 2 needs a multiple of 4).

    >>> from p2sim.formalism.level_mesh import MeshStep
    >>> rs, ag = MeshStep(Op.REDUCE_SCATTER, (0,), ((0, 1),)), MeshStep(Op.ALL_GATHER, (0,), ((0, 1),))
    >>> block_divisor((rs, rs, ag, ag)), block_divisor((rs, ag, rs, ag)), block_divisor(())
    (4, 2, 1)
    """
    need, scattered, gathered = 1, 1, 1
    for s in steps:
        size = len(s.groups[0])
        if s.op == Op.REDUCE_SCATTER:
            scattered *= size
            need = math.lcm(need, scattered // math.gcd(scattered, gathered))
        elif s.op == Op.ALL_GATHER:
            gathered *= size
    return need


def _length_text(r: MeshReduction, what: str) -> str:
    need = block_divisor(r.steps or ())
    return f"{what}: any" if need == 1 else f"{what} a multiple of {need}: the ReduceScatters split it evenly"


def _length_check(c: MeshChoice, r: MeshReduction, length: str, what: str) -> list[str]:
    """The emitted function's first lines: refuse a block its ReduceScatters cannot split evenly."""
    steps = r.steps or ()
    need = block_divisor(steps)
    if need == 1:
        return []
    sizes = " x ".join(f"{'/'.join(_names(c.dims, s))}={len(s.groups[0])}" for s in steps
                       if s.op == Op.REDUCE_SCATTER)
    return [f"    if {length} % {need}:",
            f'        raise ValueError(f"{_function_name(c, r)}: {what} {{{length}}} is not a multiple of {need}, '
            f'which its ReduceScatters ({sizes}) split evenly; pad it")']


def jax_code(c: MeshChoice) -> str:
    """A JAX program: the mesh, and per reduction a function to wrap in ``jax.shard_map``."""
    dims = c.dims
    out = header_lines(c) + [
        "# assumes jax.devices()[r] is rank r: check [(d.process_index, d.id) for d in jax.devices()]",
        "import jax",
        "import numpy as np",
        "from jax.sharding import Mesh, PartitionSpec",
        "",
        f"MESH_SHAPE = {tuple(d.size for d in dims)!r}",
        f"MESH_AXES = {tuple(d.name for d in dims)!r}",
        "mesh = Mesh(np.array(jax.devices()[:%d]).reshape(MESH_SHAPE), MESH_AXES)" % c.placement.devices,
    ]
    for r in c.reductions:
        name = _function_name(c, r)
        out += ["", "", f"def {name}(x):",
                f'    """{r.program} on one device\'s flat block ({_length_text(r, "its length")})."""']
        out += _length_check(c, r, "x.shape[0]", "the block's length")
        for s in r.steps or ():
            out.append("    " + _JAX_CALLS[s.op].format(axes=_names(dims, s)))
        out += ["    return x", "",
                "",
                "# a global array of blocks, one per device in rank order, in and out:",
                f"{name}_sharded = jax.jit(jax.shard_map({name}, mesh=mesh, in_specs=PartitionSpec(MESH_AXES), "
                "out_specs=PartitionSpec(MESH_AXES)))"]
    return "\n".join(out) + "\n"


def torch_code(c: MeshChoice) -> str:
    """A PyTorch program: the DeviceMesh, each step's process groups, and per reduction a function."""
    dims = c.dims
    out = header_lines(c) + [
        "import math",
        "",
        "import torch.distributed as dist",
        "from torch.distributed.device_mesh import init_device_mesh",
        "",
        'DEVICE_TYPE = "cuda"',
        f"MESH_SHAPE = {tuple(d.size for d in dims)!r}",
        f"MESH_AXES = {tuple(d.name for d in dims)!r}",
        "mesh = init_device_mesh(DEVICE_TYPE, MESH_SHAPE, mesh_dim_names=MESH_AXES)",
        *_TORCH_NAMES,
        "",
        "",
        "def group_over(*names):",
        '    """This rank\'s process group along mesh dims (members by rank). Every rank calls it alike."""',
        "    if len(names) == 1:",
        "        return mesh.get_group(names[0])",
        "    rest = [MESH_AXES.index(n) for n in MESH_AXES if n not in names]",
        "    slices = mesh.mesh.permute(rest + [MESH_AXES.index(n) for n in names])",
        "    size = math.prod(MESH_SHAPE[MESH_AXES.index(n)] for n in names)",
        "    group, _ = dist.new_subgroups_by_enumeration(slices.reshape(-1, size).tolist())",
        "    return group",
    ]
    for r in c.reductions:
        name = _function_name(c, r)
        groups = [f"{name.upper()}_GROUPS = ["] + [f"    group_over{_names(dims, s)!r},".replace(",)", ")")
                                                     for s in r.steps or ()] + ["]"]
        out += [""] + groups + ["", "", f"def {name}(x):",
                                f'    """{r.program} on this rank\'s flat gradient ({_length_text(r, "numel")}); '
                                'returns the reduced tensor."""']
        out += _length_check(c, r, "x.numel()", "the gradient's numel")
        for i, s in enumerate(r.steps or ()):
            out += ["    " + line.format(g=f"{name.upper()}_GROUPS[{i}]") for line in _TORCH_CALLS[s.op]]
        out.append("    return x")
    return "\n".join(out) + "\n"
