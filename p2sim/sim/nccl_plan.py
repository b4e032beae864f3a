"""What NCCL would build on a system: each algorithm's protocol, channels and heads for one AllReduce.

``p2sim topo`` prints these beside what the system file states, because they are derived rather
than read: the channel counts, NVLS heads and CollNet heads come from NCCL's rules as p2sim models
them (:mod:`p2sim.collectives.algorithms`), for an AllReduce over every GPU of the system at
:data:`PLAN_BYTES`, with NCCL's own (analytic) choice of protocol per algorithm.  An algorithm that
cannot run there is listed with NCCL's reason, so a user sees at a glance why, say, CollNet is absent.

Examples
--------
>>> from p2sim.topology import load_system
>>> plan = nccl_plan(load_system("dgx-h100", nodes=2))
>>> [(p.algo, p.runs) for p in plan][:2]
[('ring', True), ('tree', True)]
>>> next(p for p in plan if p.algo == "nvls_tree").heads
8
"""

from __future__ import annotations

from dataclasses import dataclass

from ..collectives.algorithms import REGISTRY, Algorithm
from ..collectives.channels import segments
from ..formalism.hierarchy import LoweredStep
from ..formalism.semantics import Op
from ..topology import Topology
from ..util.errors import InputError
from .context import SimulationContext
from .model_config import ModelConfig
from .sim_settings import SimSettings
from .simulator import Simulator

__all__ = ["PLAN_BYTES", "AlgorithmPlan", "nccl_plan"]

PLAN_BYTES = 2**30  # a large message: the channel counts NCCL settles on (no medium-size cuts)


@dataclass(frozen=True)
class AlgorithmPlan:
    """One algorithm on a system: whether NCCL can run it for an AllReduce over every GPU, and how.

    ``why`` is NCCL's reason when it cannot (``runs`` false); ``heads`` is the GPUs per node that
    carry the node's traffic into the network or the switch (0 where the algorithm has none).
    """

    algo: str
    runs: bool
    proto: str = ""
    channels: int = 0
    heads: int = 0
    why: str = ""

    def text(self) -> str:
        """One line, as ``p2sim topo`` prints it."""
        if not self.runs:
            return f"{self.algo}: not run ({self.why})"
        heads = f", {self.heads} heads per node" if self.heads else ""
        return f"{self.algo}: {self.channels} channels, {self.proto}{heads}"


def nccl_plan(topo: Topology) -> list[AlgorithmPlan]:
    """Each registered algorithm, forced, on an AllReduce of :data:`PLAN_BYTES` over every GPU of ``topo``."""
    members = tuple(range(topo.devices))
    segs = segments(topo, members)
    ctx = SimulationContext(topo)
    cfg = ModelConfig.of(topo.spec)
    step = LoweredStep(Op("AllReduce"), (members,))
    out = []
    for name, algo in REGISTRY.items():
        why = algo.why_not_system(topo) or algo.why_not_group(topo, "AllReduce", segs, ctx)
        if why is None and not algo.usable(topo, "AllReduce", segs, ctx):
            why = "NCCL does not run it on this group"
        if why is not None or topo.devices < 2:
            out.append(AlgorithmPlan(name, False, why=why or "a single GPU"))
            continue
        try:
            sim = Simulator(topo, SimSettings(name, engine="analytic", config=cfg), context=ctx)
            res = sim.step(step, (float(PLAN_BYTES),))
        except InputError as e:  # a protocol or shape the forced algorithm refuses
            out.append(AlgorithmPlan(name, False, why=str(e)))
            continue
        _, proto, channels = res.choices[0]
        # heads only where the algorithm has them (NVLS, NVLS-Tree, CollNet Direct): the base's 1 means none
        has_heads = type(algo).heads is not Algorithm.heads
        out.append(AlgorithmPlan(name, True, proto, channels, algo.heads(topo, members, ctx) if has_heads else 0))
    return out
