"""``--emit torch|jax|json|megatron``: a chosen placement as code or data a framework applies.

The PyTorch and JAX forms are programs that build the per-level mesh and run the chosen
reduction programs (:mod:`p2sim.report.emit_code`); the JSON form carries the same ranks,
mesh and groups for anything else; the Megatron-LM form is its arguments and launch
(:mod:`p2sim.report.emit_megatron`).  See :mod:`p2sim.formalism.mesh` for how the matrix
becomes the rank order and :mod:`p2sim.formalism.level_mesh` for the per-level mesh.
"""

from __future__ import annotations

import json
from typing import Any

from ..formalism.level_mesh import level_mesh
from ..formalism.mesh import MEGATRON_ORDERS, device_order, megatron_axes, megatron_ranks, mesh_slices, rank_mesh
from ..util.errors import InputError
from ..util.parsing import axes_spec, default_axis_names
from .emit_code import jax_code, torch_code
from .emit_megatron import megatron_script
from .mesh_choice import MeshChoice, MeshReduction, plan_mesh_choice, rank_mesh_choice

__all__ = ["EMIT_FORMS", "MeshReduction", "MeshChoice", "check_emit", "emit_mesh", "rank_mesh_choice", "plan_mesh_choice"]

EMIT_FORMS = ("torch", "jax", "json", "megatron", "nccl-tuner")


def check_emit(form: str | None, json_too: bool, axes: str | None = None) -> str | None:
    """The ``--emit`` form, refused before any work where it is unknown, comes with ``--json``, or is
    ``megatron`` for ``--axes`` that name an axis no Megatron-LM dimension is."""
    if form is None:
        return None
    if form not in EMIT_FORMS:
        raise InputError(f"emit: {form!r} is not one of {', '.join(EMIT_FORMS)}")
    if json_too:
        raise InputError("emit: --emit replaces the table and --json; give one of them")
    if form == "megatron" and axes is not None:
        sizes, names = axes_spec(axes)
        names = names or default_axis_names(len(sizes))
        megatron_axes(names, sizes, "emit megatron: axes")
        why = megatron_ranks(sizes, names, MEGATRON_ORDERS[0])  # no Megatron layout at all (context with expert)
        if isinstance(why, str):
            raise InputError(f"emit megatron: axes {axes}: {why}")
    return form


def mesh_json(c: MeshChoice) -> dict[str, Any]:
    mesh = rank_mesh(c.placement)
    return {
        "system": c.system,
        "nodes": c.nodes,
        "gpus_per_node": c.gpus_per_node,
        "rank": f"node * {c.gpus_per_node} + local_gpu",
        "axes": list(c.placement.axes),
        "matrix": [list(r) for r in c.placement.matrix],
        "mesh_dim_names": list(c.names),
        "mesh": mesh.tolist(),
        "device_order": device_order(c.placement),
        "order": c.order.value,
        "placement": c.described,
        "megatron": c.megatron,
        "level_mesh": {"dims": [{"name": d.name, "axis": c.names[d.axis], "level": c.levels[d.level], "size": d.size}
                                for d in c.dims],
                       "shape": list(level_mesh(c.placement).shape)},
        "reductions": [{"axes": list(r.axes), "mesh_dims": [c.names[a] for a in r.axes], "algo": r.algo,
                        "program": r.program, "seconds": r.seconds, "groups": mesh_slices(mesh, r.axes),
                        "steps": None if r.steps is None else
                        [{"op": s.op.value, "level_dims": [c.dims[k].name for k in s.dims],
                          "groups": [list(g) for g in s.groups]} for s in r.steps],
                        "note": r.note}
                       for r in c.reductions],
        "notes": list(c.notes),
    }


def emit_mesh(form: str, choice: MeshChoice) -> str:
    """The text ``--emit form`` prints."""
    if form == "torch":
        return torch_code(choice)
    if form == "jax":
        return jax_code(choice)
    if form == "megatron":
        return megatron_script(choice)
    return json.dumps(mesh_json(choice), separators=(",", ":")) + "\n"
