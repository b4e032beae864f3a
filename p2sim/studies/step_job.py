"""One training job's shared parts for the step: the GPUs it spans on the system, the system built, the timer.

:func:`step_job` builds them once, so that every configuration of a job (``p2sim step``'s one, the
configuration search's thousands) shares them: :func:`job_hierarchy` says which levels of the system a
job on part of it spans, and the :class:`~p2sim.workload.op_time.OpTimer` times operations with the GPU's
data-sheet peaks (the system file's where it gives them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..topology import Topology, find_spec, load_system
from ..topology.gpus import gpu_compute
from ..topology.host_memory import host_memory_rate
from ..util.errors import InputError
from ..workload import load_model
from ..workload.model_spec import ModelSpec
from ..workload.op_time import DEFAULT, EfficiencyParams, OpTimer

__all__ = ["StepJob", "step_job", "job_hierarchy"]

_TOPOLOGIES: dict[tuple[str, int], Topology] = {}


def job_hierarchy(hierarchy: Sequence[int], gpus: int, node_gpus: int) -> tuple[tuple[int, ...], int]:
    """The levels a job of ``gpus`` GPUs spans, and the GPUs it uses on each node: a job on whole nodes spans the
    system's levels; one on part of a node its first GPUs (64 of a 72-GPU rack: 16 trays of 4); one over
    several nodes that it does not fill takes the same share of each (256 GPUs on 72-GPU racks: 64 on each of
    4 racks, as NVL72 jobs run on 16 of the 18 trays).

    Examples
    --------
    >>> job_hierarchy((4, 18, 4), 64, 72), job_hierarchy((4, 18, 4), 288, 72), job_hierarchy((16, 8), 64, 8)
    (((16, 4), 64), ((4, 18, 4), 72), ((8, 8), 8))
    >>> job_hierarchy((4, 18, 4), 256, 72)
    ((4, 16, 4), 64)
    """
    if math.prod(hierarchy) == gpus:
        return tuple(hierarchy), node_gpus
    nodes = -(-gpus // node_gpus)
    if gpus % nodes:
        raise InputError(f"gpus: {gpus} do not spread evenly over the {nodes} nodes of {node_gpus} GPUs they need")
    per_node = gpus // nodes
    inner: list[int] = []
    levels = list(hierarchy)
    while levels and math.prod(levels) > node_gpus:
        levels.pop(0)  # the levels above a node
    for size in reversed(levels):
        if per_node % (math.prod(inner) * size) == 0 and math.prod(inner) * size < per_node:
            inner.insert(0, size)
        else:
            break
    rest = per_node // math.prod(inner)
    node_levels = ([rest] if rest > 1 else []) + inner
    return tuple(([nodes] if nodes > 1 else []) + node_levels), per_node


@dataclass(frozen=True)
class StepJob:
    """What every configuration of one job shares: the model, the system built, its GPUs, the timer."""

    model: ModelSpec
    topo: Topology
    gpus: int
    nodes: int | None
    hierarchy: tuple[int, ...]
    used: int  # GPUs the job uses on each node
    per_node: int  # the system's GPUs per node
    timer: OpTimer
    engine: str = "des"
    layers: dict[tuple[Any, ...], tuple[float, float, float, float]] = field(default_factory=dict, compare=False)

    @cached_property
    def host_rate(self) -> float:
        """Bytes/s each GPU moves to host memory while all do (activation offloading's; worked out where asked)."""
        return host_memory_rate(self.topo)


def _timer(topo: Topology, params: EfficiencyParams) -> OpTimer:
    nc = topo.spec.nccl
    sheet = gpu_compute(nc.gpu_model)
    figures = {k: getattr(nc, k) if getattr(nc, k) is not None else (getattr(sheet, k) if sheet else None)
               for k in ("bf16_tflops", "fp8_tflops", "hbm_tb_per_s")}
    missing = [k for k, v in figures.items() if v is None]
    if missing:
        raise InputError(f"{topo.spec.name}: [gpu] {', '.join(missing)}: not given, and the GPU "
                         f"{nc.gpu_model or nc.arch!r} has no data-sheet figures in p2sim: give them in the system file")
    return OpTimer(figures["bf16_tflops"], figures["fp8_tflops"], figures["hbm_tb_per_s"], params,
                   sheet.sms if sheet else 132)


def step_job(model: Any, system: Any, nodes: int | None, gpus: int | None, params: EfficiencyParams = DEFAULT,
             engine: str = "des") -> StepJob:
    """The job's shared parts: the model loaded, the system built for its GPUs, the operations' timer."""
    spec_model = model if isinstance(model, ModelSpec) else load_model(model)
    spec = find_spec(system) if not hasattr(system, "hierarchy") else system
    per_node = math.prod(spec.hierarchy(1)[spec.node_level + 1:])
    if gpus is None and nodes is None:
        nodes = spec.default_nodes  # as every command's --nodes: the system file's node count
    if gpus is None:
        gpus = nodes * per_node
    if gpus < 1:
        raise InputError(f"gpus: {gpus} should be a positive integer")
    count = max(nodes or 0, -(-gpus // per_node))
    if isinstance(system, str):
        topo = _TOPOLOGIES.get((system, count)) or _TOPOLOGIES.setdefault((system, count), load_system(spec, count))
    else:
        topo = load_system(spec, count)
    hierarchy, used = job_hierarchy(topo.hierarchy, gpus, per_node)
    return StepJob(spec_model, topo, gpus, nodes, hierarchy, used, per_node, _timer(topo, params), engine)


