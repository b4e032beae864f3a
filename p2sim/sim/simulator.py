"""Program-level simulation: lowered steps, buffer sizes, step models and reuse.

A program's steps run one after another (a collective needs every member, and every
member has finished the previous step); the groups of one step run concurrently and
share links.  The time of a step depends only on (algorithm, collective, groups,
buffers), and many programs share steps, so step results are cached per
:class:`Simulator`.

Two step models:

``des``
    the contention-aware discrete-event fluid model (:mod:`p2sim.sim.engine`);
``analytic``
    NCCL's tuning model per group -- latency plus buffer over the algorithm
    bandwidth of the group's slowest hop -- with no contention between groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..collectives import Expander, check_algo, step_volumes
from ..errors import ProgramError, SemanticsError
from ..hierarchy import LoweredStep, Lowering
from ..program import Program
from ..semantics import State, apply
from ..topology import Topology
from .engine import FlowSpec, run_flows
from .model import ModelConfig, ProgramResult, StepResult, check_model

__all__ = ["Simulator", "check_program_completes"]


def check_program_completes(lowering: Lowering, program: Program) -> None:
    """Raise :class:`ProgramError` unless the program is valid and reduces fully."""
    sh = lowering.synthesis
    state = State.initial(sh.size)
    for n, ins in enumerate(program.instructions, 1):
        try:
            state = apply(state, ins.op, sh.groups(ins))
        except SemanticsError as e:
            raise ProgramError(f"program: step {n} {ins.text} is invalid here: {e}") from None
    if not state.is_goal:
        raise ProgramError(f"program: {program.text!r} does not complete the reduction")


class Simulator:
    """Simulates programs on one topology with one algorithm and model.

    Examples
    --------
    >>> from p2sim.topology import load_system
    >>> from p2sim.placement import Placement
    >>> from p2sim.program import parse_program
    >>> topo = load_system("a100", nodes=2)
    >>> lw = Lowering.of(Placement.of(topo.hierarchy, [32], [[2, 16]]), [0])
    >>> r = Simulator(topo).simulate(lw, parse_program("AllReduce(slice=0, Inside)"), 2**32)
    >>> round(r.total_seconds, 3)   # 2*31/32 * 4 GiB over one 8 GB/s NIC
    1.04
    """

    def __init__(
        self,
        topo: Topology,
        algo: str = "ring",
        model: str = "des",
        config: ModelConfig | None = None,
        trace: bool = False,
    ) -> None:
        self.topo = topo
        self.algo = check_algo(algo)
        self.model = check_model(model)
        self.config = ModelConfig.of(topo.spec) if config is None else config
        self.trace = trace
        self.expander = Expander(topo, self.config.base_latency)
        self._steps: dict[tuple, StepResult] = {}

    def simulate(self, lowering: Lowering, program: Program, bytes_per_gpu: float) -> ProgramResult:
        """Simulate one program (which must be valid for ``lowering``)."""
        if lowering.placement.devices != self.topo.devices:
            raise ProgramError(
                f"matrix: the placement has {lowering.placement.devices} devices, the system {self.topo.devices}"
            )
        steps = lowering.lower(program)
        vols = step_volumes(lowering, program, bytes_per_gpu)
        return ProgramResult(program.text, tuple(self.step(s, v) for s, v in zip(steps, vols)))

    def step(self, step: LoweredStep, volumes: Sequence[float]) -> StepResult:
        key = (step.op, step.groups, tuple(volumes))
        hit = self._steps.get(key)
        if hit is None:
            hit = self._simulate_step(step, volumes)
            self._steps[key] = hit
        return hit

    def _simulate_step(self, step: LoweredStep, volumes: Sequence[float]) -> StepResult:
        op = step.op.value
        algo = "tree" if self.algo == "tree" and op == "AllReduce" else "ring"
        eff = self.config.efficiency(algo)
        cap = self.config.max_rate(algo)
        patterns = [self.expander.pattern(self.algo, op, g) for g in step.groups]
        spanned = max(len({self.topo.node_of(d) for d in g}) for g in step.groups)
        trace: tuple = ()
        if self.model == "analytic":
            seconds = max(p.latency + v * max(p.analytic_seconds_per_byte / (eff if p.crosses_nodes else 1.0),
                                              p.max_sent / cap)
                          for p, v in zip(patterns, volumes))
        else:
            capacity = self.topo.capacity
            flows = []
            for i, (p, v, g) in enumerate(zip(patterns, volumes, step.groups)):
                edges, coef = p.edges, p.coef
                if eff != 1.0 and p.crosses_nodes:
                    # the algorithm achieves only ``eff`` of the network: its inter-node hops weigh more
                    net_edges, net_coef = p.network_load()
                    coef = coef.copy()
                    coef[np.searchsorted(edges, net_edges)] += net_coef * (1.0 / eff - 1.0)
                if math.isfinite(cap):
                    # the ceiling on what a member sends per second: a private virtual link
                    edges = np.append(edges, len(self.topo.capacity) + i)
                    coef = np.append(coef, p.max_sent)
                flows.append(FlowSpec(edges, coef, v, p.latency, f"{op} {list(g)}"))
            if math.isfinite(cap):
                capacity = np.concatenate([capacity, np.full(len(flows), cap)])
            seconds, records, samples = run_flows(flows, capacity, record=self.trace)
            if self.trace:
                trace = (tuple(records), tuple(samples))
        return StepResult(op, seconds, len(step.groups), len(step.groups[0]), spanned, max(volumes), trace)
