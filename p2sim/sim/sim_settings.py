"""What a simulator is asked to do, as one value: the algorithm setting, protocol, engine and rates.

The studies build it once (:class:`p2sim.studies.requests.Settings` checks the text a user
gives) and hand it down whole to :class:`~p2sim.sim.Simulator`, ``Simulator(topology, settings, context)``;
nothing below turns it back into text to parse it again.  Its fields' defaults are the defaults of every
command (``p2sim.options`` reads them): NCCL's own choice, as with ``NCCL_ALGO`` and ``NCCL_PROTO`` unset,
and the contention-aware des engine.

Examples
--------
>>> from p2sim.sim import Simulator
>>> from p2sim.topology import load_system
>>> sim = Simulator(load_system("a100", 2), SimSettings(algo="ring"))
>>> sim.algo, sim.proto, sim.engine
('ring', 'auto', 'des')
"""

from __future__ import annotations

from dataclasses import dataclass

from .model_config import ModelConfig

__all__ = ["SimSettings", "DEFAULT_SIM_SETTINGS"]


@dataclass(frozen=True)
class SimSettings:
    """One algorithm setting (``auto``: NCCL's choice, or one forced algorithm), protocol, engine and rates."""

    algo: str = "auto"  # NCCL's own choice, as with NCCL_ALGO unset
    proto: str = "auto"  # NCCL's own choice, as with NCCL_PROTO unset
    engine: str = "des"  # the contention-aware simulation (p2sim.sim.engines)
    config: ModelConfig | None = None  # the rates; None: the system file's [model] settings


DEFAULT_SIM_SETTINGS = SimSettings()
