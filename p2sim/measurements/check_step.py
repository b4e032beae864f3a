"""``check --model``: one nccl-tests command per distinct collective of a model's training step.

For the chosen placement (the best of ``plan --model``, or ``--matrix``), every collective of the
step (:class:`~p2sim.studies.step_workload.StepWorkload`: its AllReduces over whole axes and its
other parts, AllToAll and SendRecv included) that differs in collective, axes, size or pattern
becomes one nccl-tests run of all its groups at once (:func:`.nccl_commands.nccl_command`), with
its prediction (NCCL's choice of algorithm and protocol, as plan --model charges the step's other
collectives), what bounds it and how many times a step runs it.  nccl-tests measures the plain
collective: an AllReduce that the plan runs as a synthesized program is measured as NCCL's own.
"""

from __future__ import annotations

from ..formalism.hierarchy import LoweredStep
from ..formalism.placement import Matrix
from ..formalism.semantics import Op
from ..sim import Simulator
from ..sim.sim_settings import SimSettings
from ..studies.plan import PlanRequest
from ..studies.step_plan import part_groups, run_step_plan
from ..studies.step_workload import GROUPS, StepPart
from .collective_rows import bus_factor
from .nccl_commands import CheckStep, nccl_command

__all__ = ["step_parts", "step_checks", "best_matrix"]


def step_parts(req: PlanRequest) -> tuple[StepPart, ...]:
    """The step's distinct collectives, its AllReduces first, each with its calls per step summed."""
    counts: dict[tuple, StepPart] = {}
    reductions = [StepPart(r.axes, "AllReduce", r.bytes, r.count, GROUPS, ()) for r in req.reductions]
    for part in (*reductions, *req.demand.parts):
        key = (part.op, part.axes, part.size, part.pattern)
        seen = counts.get(key)
        counts[key] = part if seen is None else StepPart(part.axes, part.op, part.size, seen.count + part.count,
                                                         part.pattern, tuple(dict.fromkeys(seen.phases + part.phases)))
    return tuple(counts.values())


def best_matrix(req: PlanRequest) -> Matrix:
    """The placement plan --model finds best for the step."""
    return run_step_plan(req).best.matrix


def step_checks(req: PlanRequest, matrix: Matrix, settings: SimSettings) -> tuple[CheckStep, ...]:
    """Each distinct collective of the step under ``matrix``: its command, prediction, bound and count."""
    job, topo = req.job, req.job.topology
    sim = Simulator(topo, settings)
    out = []
    for i, part in enumerate(step_parts(req), 1):
        groups = part_groups(part, job.hierarchy, job.axes, matrix, req.settings.order.value)
        step = LoweredStep(Op(part.op), groups)
        volumes = (float(part.size),) * len(groups)
        seconds = sim.step(step, volumes).seconds
        bound = sim.binding(step, volumes)
        command, split, note = nccl_command(topo, groups, part.op, part.size, i)
        nodes = len({d // topo.gpus_per_node for d in groups[0]})  # device i * gpus_per_node + local (graph.py)
        axes = ",".join(job.axis_names[a] for a in part.axes)
        what = f"{part.op} over {axes}" + ("" if part.pattern == GROUPS else f" ({part.pattern})")
        out.append(CheckStep(i, what, part.op, len(groups), len(groups[0]), nodes, part.size, split, command,
                             seconds, part.size / seconds * bus_factor(part.op, len(groups[0])), bound, note,
                             part.count))
    return tuple(out)
