"""This process's simulation contexts: one topology and one context per system and node count.

A study asks :func:`context_of` for the context of the system it runs on; a sweep's task asks
again in whichever process runs it (:func:`p2sim.studies.config_task.task_context`).  The context
is found by the spec's value and the node count -- the spec a task carries is a copy in a
worker process, the very object in a serial run -- so a job that runs its tasks in its own
process builds its :class:`~p2sim.topology.Topology` and its
:class:`~p2sim.sim.context.SimulationContext` once, and each worker process builds one per
system.  The process keeps the context it used last, and finds again any other its callers
still hold (a what-if's points); nothing else, so memory stays one system's per process.
"""

from __future__ import annotations

import weakref

from ..sim.context import SimulationContext
from ..topology import Topology
from ..topology.spec import SystemSpec

__all__ = ["context_of"]


class _Contexts:
    """The last context used (kept) and the others still held elsewhere (weakly)."""

    def __init__(self) -> None:
        self.last: SimulationContext | None = None
        self.held: weakref.WeakValueDictionary[int, SimulationContext] = weakref.WeakValueDictionary()

    def find(self, spec: SystemSpec, nodes: int) -> SimulationContext | None:
        for ctx in (self.last, *self.held.values()):
            # the same object first (a serial run); else equal values (a copy sent to a worker), the
            # assumptions too (a spec's equality leaves out that text, which reports show)
            if ctx is not None and ctx.topo.nodes == nodes and (
                    ctx.topo.spec is spec or (ctx.topo.spec == spec and ctx.topo.spec.assumed == spec.assumed)):
                return ctx
        return None

    def get(self, spec: SystemSpec, nodes: int | None) -> SimulationContext:
        n = spec.default_nodes if nodes is None else nodes
        hit = self.find(spec, n)
        if hit is None:
            hit = SimulationContext(Topology(spec, n))
            self.held[id(hit)] = hit
        self.last = hit
        return hit


_CONTEXTS = _Contexts()


def context_of(spec: SystemSpec, nodes: int | None = None) -> SimulationContext:
    """The context of ``spec`` built for ``nodes`` (default: the file's) in this process: built once, then
    found again, with what it keeps (call its ``forget_order`` between independent tasks)."""
    return _CONTEXTS.get(spec, nodes)
