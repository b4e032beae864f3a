"""``--emit torch|jax|json``: a chosen placement as code or data a framework applies.

The PyTorch and JAX forms are short Python programs that build the mesh; the JSON
form carries the same ranks for anything else.  See :mod:`p2sim.formalism.mesh` for how the
matrix becomes the rank order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..util.errors import InputError
from ..formalism.mesh import device_order, mesh_slices, rank_mesh
from ..util.parsing import default_axis_names
from ..formalism.placement import Placement, format_matrix
from ..util.units import format_seconds
from ..formalism.naming import axes_text
from ..studies.plan import PlanResult
from ..studies.rank import RankResult

__all__ = ["EMIT_FORMS", "MeshReduction", "MeshChoice", "check_emit", "emit_mesh", "rank_mesh_choice", "plan_mesh_choice"]

EMIT_FORMS = ("torch", "jax", "json")


def check_emit(form: str | None, json_too: bool) -> str | None:
    if form is None:
        return None
    if form not in EMIT_FORMS:
        raise InputError(f"emit: {form!r} is not one of {', '.join(EMIT_FORMS)}")
    if json_too:
        raise InputError("emit: --emit replaces the table and --json; give one of them")
    return form


@dataclass(frozen=True)
class MeshReduction:
    """One reduction of the chosen plan: its axes and the program chosen for it."""

    axes: tuple[int, ...]
    algo: str
    program: str
    seconds: float


@dataclass(frozen=True)
class MeshChoice:
    system: str
    nodes: int
    gpus_per_node: int
    placement: Placement
    reductions: tuple[MeshReduction, ...]

    axis_names: tuple[str, ...] = ()  # --axes data=8,..; empty: axis0, axis1, ..
    notes: tuple[str, ...] = ()  # what the table says beside the answer (scope, warnings): every form says it

    @property
    def names(self) -> tuple[str, ...]:
        return self.axis_names or default_axis_names(len(self.placement.axes))


def _nested(a: np.ndarray, indent: int = 0) -> str:
    """A nested list literal with the innermost lists one per line."""
    if a.ndim == 1:
        return "[" + ", ".join(str(int(x)) for x in a) + "]"
    pad = " " * (indent + 4)
    inner = ",\n".join(pad + _nested(x, indent + 4) for x in a)
    return "[\n" + inner + ",\n" + " " * indent + "]"


def _header(c: MeshChoice) -> list[str]:
    pl = c.placement
    lines = [f"# p2sim: {c.system}, {c.nodes} nodes x {c.gpus_per_node} GPUs; axes {axes_text(pl.axes, c.names)}; "
             f"matrix {format_matrix(pl.matrix)}",
             f"# rank = node x {c.gpus_per_node} + local GPU (torchrun --nnodes {c.nodes} "
             f"--nproc-per-node {c.gpus_per_node}: RANK = node_rank x {c.gpus_per_node} + LOCAL_RANK)"]
    for r in c.reductions:
        dims = tuple(c.names[a] for a in r.axes)
        lines.append(f"# reduce over mesh dims {dims}: {r.algo} {r.program} ({format_seconds(r.seconds)} predicted)")
    lines += [f"# note: {n}" for n in c.notes]
    return lines


def _torch(c: MeshChoice) -> str:
    mesh = rank_mesh(c.placement)
    return "\n".join(_header(c) + [
        "import torch",
        "from torch.distributed.device_mesh import DeviceMesh",
        "",
        f"mesh = DeviceMesh(\"cuda\", torch.tensor({_nested(mesh)}), mesh_dim_names={c.names!r})",
    ]) + "\n"


def _jax(c: MeshChoice) -> str:
    order = device_order(c.placement)
    return "\n".join(_header(c) + [
        "# assumes jax.devices()[r] is rank r: check [(d.process_index, d.local_hardware_id) for d in jax.devices()]",
        "import jax",
        "import numpy as np",
        "from jax.sharding import Mesh",
        "",
        f"order = {order}",
        f"mesh = Mesh(np.array(jax.devices())[order].reshape{tuple(c.placement.axes)!r}, {c.names!r})",
    ]) + "\n"


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
        "reductions": [{"axes": list(r.axes), "mesh_dims": [c.names[a] for a in r.axes], "algo": r.algo,
                        "program": r.program, "seconds": r.seconds, "groups": mesh_slices(mesh, r.axes)}
                       for r in c.reductions],
        "notes": list(c.notes),
    }


def emit_mesh(form: str, choice: MeshChoice) -> str:
    """The text ``--emit form`` prints."""
    if form == "torch":
        return _torch(choice)
    if form == "jax":
        return _jax(choice)
    return json.dumps(mesh_json(choice), separators=(",", ":")) + "\n"



def rank_mesh_choice(result: RankResult) -> MeshChoice:
    """The best placement of a ranking, with its one reduction."""
    job, best = result.request.job, result.best
    topo = job.topology
    reduction = MeshReduction(tuple(sorted(set(result.reduce_axes))), best.algo, best.timing.text, best.seconds)
    notes = tuple(n for n in (result.scope,) + tuple(result.warnings) if n)
    return MeshChoice(topo.spec.name, topo.node_count, topo.gpus_per_node,
                      Placement.of(topo.hierarchy, job.axes, best.matrix), (reduction,), job.axis_names, notes)


def plan_mesh_choice(result: PlanResult) -> MeshChoice:
    """The best plan's placement, with every reduction's program."""
    job, best = result.request.job, result.best
    topo = job.topology
    return MeshChoice(topo.spec.name, topo.node_count, topo.gpus_per_node,
                      Placement.of(topo.hierarchy, job.axes, best.matrix),
                      tuple(MeshReduction(c.reduction.axes, c.algo, c.program, c.seconds) for c in best.choices),
                      job.axis_names, tuple(result.warnings))
