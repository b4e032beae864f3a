"""What a simulator is asked to do, as one value: the algorithm setting, protocol, engine and rates.

The studies build it once (:class:`p2sim.studies.requests.Settings` checks the text a user
gives) and hand it down whole to :class:`~p2sim.sim.Simulator`; nothing below turns it
back into text to parse it again.

Examples
--------
>>> from p2sim.topology import load_system
>>> sim = SimSettings(algo="ring").simulator(load_system("a100", 2))
>>> sim.algo, sim.proto, sim.engine
('ring', 'auto', 'des')
"""

from __future__ import annotations

from dataclasses import dataclass

from ..topology import Topology
from .context import SimulationContext
from .model_config import ModelConfig
from .simulator import Simulator

__all__ = ["SimSettings"]


@dataclass(frozen=True)
class SimSettings:
    """One algorithm setting (``auto``: NCCL's choice, or one forced algorithm), protocol, engine and rates."""

    algo: str = "auto"
    proto: str = "auto"
    engine: str = "des"
    config: ModelConfig | None = None  # the rates; None: the system file's [model] settings

    def simulator(self, topo: Topology, context: SimulationContext | None = None, trace: bool = False) -> Simulator:
        """A simulator of ``topo`` with these settings, in ``context`` (default: a fresh one)."""
        return Simulator(topo, self.algo, self.engine, self.config, trace=trace, proto=self.proto, context=context)
