"""The simulator: a SimPy fluid engine and an analytic baseline behind one interface.

:mod:`.maxmin` shares links max-min fairly (incrementally, as flows come and go),
:mod:`.engine` runs the flows as SimPy processes (the only SimPy importer in p2sim),
:mod:`.symmetry` solves flows that are each other's images once, :mod:`.model` holds the
configuration and results, :mod:`.context` the caches of one topology's simulations, and
:mod:`.simulator` turns a lowered program into steps of collectives and times them (with lower
bounds for the search).  Imports the formalism,
topology and collectives.
"""

from .context import SimulationContext
from .model import MODELS, ModelConfig, ProgramResult, StepResult
from .simulator import Simulator, check_program_completes

__all__ = ["MODELS", "ModelConfig", "ProgramResult", "StepResult", "SimulationContext", "Simulator",
           "check_program_completes"]
