"""What bounds each step of an answer's program: for the results that are shown, not for every simulation.

A search simulates thousands of programs; only the few it reports are explained, each step
by :meth:`p2sim.sim.Simulator.binding` (a link class, a per-channel or protocol limit, or
latency), with the settings of the task that simulated it, in the context of its system.

Examples
--------
>>> from p2sim.sim import SimulationContext
>>> from p2sim.studies.executor import SerialExecutor
>>> from p2sim.studies.ranking import rank_tasks
>>> from p2sim.studies.requests import Settings
>>> from p2sim.studies.config_task import ConfigTask
>>> from p2sim.topology import load_system
>>> ctx = SimulationContext(load_system("a100", 2))
>>> task = ConfigTask(spec=ctx.topo.spec, nodes=2, axes=(32,), reduce_axes=(0,), bytes_per_gpu=2**30,
...                  settings=Settings(algo="ring"), matrices=(((2, 16),),), programs=("AllReduce(slice=0, Inside)",))
>>> best = rank_tasks([task], SerialExecutor()).entries[0]
>>> [b.text for b in program_bindings(ctx, best)]
['nic links']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..collectives.binding import Binding
from ..formalism.hierarchy import Lowering
from ..formalism.placement import Placement
from ..formalism.program import parse_program
from ..sim import SimulationContext, Simulator
from .ranking import RankEntry

__all__ = ["program_bindings", "not_bound_by"]


def program_bindings(context: SimulationContext, entry: RankEntry) -> tuple[Binding, ...]:
    """Each step's bound of a ranked program, as its task simulated it, in ``context`` (its system's).

    The order-dependent decisions of the tasks that ran in ``context`` before are dropped first
    (:meth:`~p2sim.sim.context.SimulationContext.forget_order`), so that the answer is the same
    wherever those tasks ran."""
    task = entry.task
    if task is None:
        raise ValueError("program_bindings: the entry was ranked without its task")
    context.forget_order()
    topo = context.topo
    settings = task.settings.sim
    lowering = Lowering.of(Placement.of(topo.hierarchy, task.axes, entry.matrix), task.reduce_axes,
                           task.settings.order)
    # the baseline has no steps to explain: its program's steps are explained as the des engine runs them
    engine = "des" if settings.engine == "baseline" else settings.engine
    sim = Simulator(topo, replace(settings, engine=engine), context=context)
    return sim.bindings(lowering, parse_program(entry.timing.text), task.bytes_per_gpu)


def not_bound_by(target: str, bounds: Sequence[Binding]) -> str:
    """A note when a varied link class bounds none of the steps (empty when one does, or the target is no class)."""
    cls, _, what = target.rpartition(".")
    if what not in ("bandwidth", "latency") or not cls or any(b.kind == "link" and cls in b.resource.split(" and ")
                                                         for b in bounds):
        return ""
    binding = sorted({b.text for b in bounds})
    return f"{cls} bounds none of the best program's steps (bound by {', '.join(binding)})"
