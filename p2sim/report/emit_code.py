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
* PyTorch: ``dist.all_reduce`` / ``reduce_scatter_tensor`` / ``all_gather_into_tensor`` on
  the step's process groups: ``DeviceMesh.get_group`` for one dimension,
  ``dist.new_subgroups_by_enumeration`` over the mesh's slices for several (public API;
  ``new_group`` sorts members, so the program must list them by rank: the ``aligned``
  device order does).

The header says the system, the placement in words, the device order, which of
Megatron-LM's rank orders matches, the mesh, and each reduction's program with its
predicted time and every step's groups.
"""

from __future__ import annotations

from ..formalism.level_mesh import LevelDim, MeshStep
from ..formalism.naming import axes_text
from ..formalism.placement import format_matrix
from ..formalism.semantics import Op
from ..util.units import format_seconds
from .mesh_choice import MeshChoice, MeshReduction

__all__ = ["jax_code", "torch_code", "header_lines"]

_JAX_CALLS = {Op.ALL_REDUCE: "x = jax.lax.psum(x, {axes})",
              Op.REDUCE_SCATTER: "x = jax.lax.psum_scatter(x, {axes}, scatter_dimension=0, tiled=True)",
              Op.ALL_GATHER: "x = jax.lax.all_gather(x, {axes}, axis=0, tiled=True)"}
_TORCH_CALLS = {Op.ALL_REDUCE: ["dist.all_reduce(x, group={g})"],
                Op.REDUCE_SCATTER: ["y = x.new_empty(x.numel() // dist.get_world_size({g}))",
                                    "dist.reduce_scatter_tensor(y, x, group={g})", "x = y"],
                Op.ALL_GATHER: ["y = x.new_empty(x.numel() * dist.get_world_size({g}))",
                                "dist.all_gather_into_tensor(y, x, group={g})", "x = y"]}


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
             f"# device order: {c.order} (the steps' groups below list members as p2sim chose them)",
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
                f'    """{r.program} on one device\'s flat block (length divisible by every group size)."""']
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
                                f'    """{r.program} on this rank\'s flat gradient (numel divisible by every '
                                'group size); returns the reduced tensor."""']
        for i, s in enumerate(r.steps or ()):
            out += ["    " + line.format(g=f"{name.upper()}_GROUPS[{i}]") for line in _TORCH_CALLS[s.op]]
        out.append("    return x")
    return "\n".join(out) + "\n"
