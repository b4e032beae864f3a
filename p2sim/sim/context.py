"""A simulation context: everything the simulations of one topology keep, in one place.

A :class:`SimulationContext` is the collectives' caches of a topology
(:class:`~p2sim.collectives.caches.CollectiveCaches`: ring searches, one-switch answers, GPU
classes, the buffer fractions of program prefixes, every expansion per set of rates) and the step
results of the simulators that share it, per (protocol, engine, rates).  A study creates one per topology (a sweep: one per worker
process and system, :func:`p2sim.studies.config_task.task_context`) and hands it to each
:class:`~p2sim.sim.simulator.Simulator`; a simulator given none makes its own, so nothing is
shared behind a caller's back, and the topology itself stores nothing.

Dropping, the one documented way each:

* :meth:`SimulationContext.forget_order` -- what depends on the order groups came in: the
  decisions taken once per group shape and the step results built on them.  A context reused by
  independent tasks calls it between them, so that a task computes what it would alone.
* :meth:`SimulationContext.clear` -- everything (only rebuilding costs; results never change).

The steps' geometry (:class:`~p2sim.sim.moved.GeometryStore`: classes of moved groups and moved links, exact
per group array) is each simulator's, or, in contexts that share structures (:meth:`SimulationContext.share`:
what-if points searched together), one store for all of their simulators, kept across tasks within its budgets.

Examples
--------
>>> from p2sim.topology import load_system
>>> from p2sim.formalism.hierarchy import Lowering
>>> from p2sim.formalism.placement import Placement
>>> from p2sim.formalism.program import parse_program
>>> from p2sim.sim import SimSettings, Simulator
>>> ctx = SimulationContext(load_system("a100", nodes=2))
>>> lw = Lowering.of(Placement.of(ctx.topo.hierarchy, [32], [[2, 16]]), [0])
>>> ring = Simulator(ctx.topo, SimSettings("ring"), context=ctx)
>>> t = ring.simulate(lw, parse_program("AllReduce(slice=0, Inside)"), 2**32).total_seconds
>>> ctx.step_results() > 0
True
>>> ctx.forget_order(); ctx.step_results()
0
"""

from __future__ import annotations

from ..collectives.caches import CollectiveCaches
from ..topology import Topology
from ..topology.settings import ModelRates
from .moved import GeometryStore
from .results import StepResult

__all__ = ["SimulationContext"]


class SimulationContext(CollectiveCaches):
    """The caches of the simulations of one topology: the collectives' and the step results."""

    def __init__(self, topo: Topology) -> None:
        super().__init__(topo)
        self._steps: dict[tuple[str, str, ModelRates], dict[tuple, StepResult]] = {}
        # steps' classes of moved groups and moved links (exact per group array), kept for every simulator of
        # the contexts that share structures (what-if points searched together, share); None: each simulator
        # keeps its own (a search's tasks meet few of the same again: its memory is not worth keeping)
        self.geometry: GeometryStore | None = None

    def steps(self, proto: str, engine: str, rates: ModelRates) -> dict[tuple, StepResult]:
        """The step results of simulators with this protocol, engine and rates (a step's result depends
        on these and the step alone)."""
        key = (proto, engine, rates)
        hit = self._steps.get(key)
        if hit is None:
            hit = self._steps[key] = {}
        return hit

    def step_results(self) -> int:
        """How many step results are kept."""
        return sum(len(d) for d in self._steps.values())

    def forget_order(self) -> None:
        """Drop the decisions taken once per group shape and the step results built on them."""
        super().forget_order()
        for d in self._steps.values():
            d.clear()

    def share(self, other: CollectiveCaches) -> bool:
        """:meth:`CollectiveCaches.share <p2sim.collectives.caches.CollectiveCaches.share>`, and the steps'
        geometry too (the link numbering and fabric shape it reads are the structures')."""
        shared = super().share(other)
        if shared and isinstance(other, SimulationContext):
            if other.geometry is None:
                other.geometry = GeometryStore()
            self.geometry = other.geometry
        return shared

    def clear(self) -> None:
        """Drop everything kept."""
        super().clear()
        if self.geometry is not None:
            self.geometry.clear()
        for d in self._steps.values():
            d.clear()
