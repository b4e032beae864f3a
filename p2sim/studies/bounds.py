"""What bounds each step of an answer's program: for the results that are shown, not for every simulation.

A search simulates thousands of programs; only the few it reports are explained, each step
by :meth:`p2sim.sim.Simulator.bound` (a link class, a per-channel or protocol limit, or
latency), with the algorithm, protocol, model and buffer the search ran it with.

Examples
--------
>>> from p2sim.topology import load_system
>>> topo = load_system("a100", 2)
>>> [b.text for b in program_bounds(topo, (32,), ((2, 16),), (0,), "aligned", "AllReduce(slice=0, Inside)",
...                                 "ring", "auto", "des", 2**30)]
['nic links']
"""

from __future__ import annotations

from collections.abc import Sequence

from ..collectives.bound import Bound
from ..formalism.hierarchy import Lowering
from ..formalism.placement import Matrix, Placement
from ..formalism.program import parse_program
from ..sim import Simulator
from ..topology import Topology

__all__ = ["program_bounds", "not_bound_by"]


def program_bounds(topo: Topology, axes: Sequence[int], matrix: Matrix, reduce_axes: Sequence[int], order: str,
                   program: str, algo: str, proto: str, model: str, bytes_per_gpu: float) -> tuple[Bound, ...]:
    """Each step's bound, as the search simulated the program."""
    lowering = Lowering.of(Placement.of(topo.hierarchy, axes, matrix), reduce_axes, order)
    sim = Simulator(topo, algo, "des" if model == "baseline" else model, proto=proto)
    return sim.bounds(lowering, parse_program(program), bytes_per_gpu)


def not_bound_by(target: str, bounds: Sequence[Bound]) -> str:
    """A note when a varied link class bounds none of the steps (empty when one does, or the target is no class)."""
    cls, _, what = target.rpartition(".")
    if what not in ("bandwidth", "latency") or not cls or any(b.kind == "link" and b.resource == cls for b in bounds):
        return ""
    binding = sorted({b.text for b in bounds})
    return f"{cls} bounds none of the best program's steps (bound by {', '.join(binding)})"
