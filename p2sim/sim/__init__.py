"""The simulator: a SimPy fluid engine and an analytic baseline behind one interface.

:mod:`.maxmin` shares links max-min fairly (incrementally, as flows come and go),
:mod:`.engine` runs the flows as SimPy processes (the only SimPy importer in p2sim),
:mod:`.symmetry` solves flows that are each other's images once, :mod:`.model` holds the
configuration and results, :mod:`.context` the caches of one topology's simulations, and
:mod:`.simulator` turns a lowered program into steps of collectives and times them (with lower
bounds for the search).  Imports the formalism,
topology and collectives.

Modules
-------
:mod:`.context`
    A simulation context: everything the simulations of one topology keep, in one place.
:mod:`.engine`
    The discrete-event fluid engine: the only module that imports SimPy.
:mod:`.maxmin`
    Max-min fair sharing of links among weighted fluid flows, kept up to date incrementally.
:mod:`.model`
    Simulation results and the effective model configuration kept with them.
:mod:`.sim_settings`
    What a simulator is asked to do, as one value: the algorithm setting, protocol, model and rates.
:mod:`.simulator`
    Program-level simulation: lowered steps, buffer sizes, step models and reuse.
:mod:`.symmetry`
    Symmetry: flows that max-min sharing cannot tell apart are solved once per class.
"""

from .context import SimulationContext
from .model import MODELS, ModelConfig, ProgramResult, StepResult
from .simulator import Simulator, check_program_completes

__all__ = ["MODELS", "ModelConfig", "ProgramResult", "StepResult", "SimulationContext", "Simulator",
           "check_program_completes"]
