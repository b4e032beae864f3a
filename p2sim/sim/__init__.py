"""The simulator: a SimPy fluid engine and an analytic baseline behind one interface.

:mod:`.maxmin` shares links max-min fairly (incrementally, as flows come and go),
:mod:`.engine` runs the flows as SimPy processes (the only SimPy importer in p2sim),
:mod:`.symmetry` solves flows that are each other's images once, :mod:`.engines` names the
engines a run chooses among (des, analytic, baseline), :mod:`.model_config` holds the rates a run
gives the collective model, :mod:`.results` what a simulation answers, :mod:`.context` the caches
of one topology's simulations, and :mod:`.simulator` turns a lowered program into steps of
collectives and times them with the chosen engine (with lower bounds for the search).  Imports the formalism,
topology and collectives.

Modules
-------
:mod:`.context`
    A simulation context: everything the simulations of one topology keep, in one place.
:mod:`.engine`
    The discrete-event fluid engine: the only module that imports SimPy.
:mod:`.engines`
    The simulation engines a run chooses among (``--engine``): des, analytic and baseline.
:mod:`.flows`
    A step's flows as the engine takes them: each collective's flows, its caps as virtual links of their own.
:mod:`.joint`
    Steps of different collectives run at the same time: their flows share the links, max-min fairly, in one run.
:mod:`.maxmin`
    Max-min fair sharing of links among weighted fluid flows, kept up to date incrementally.
:mod:`.model_config`
    The rates a run gives the collective model: a system file's ``[model]`` table, or calibration's fit.
:mod:`.moved`
    Groups of a step that are one group moved between nodes: their classes, and the links all of them load.
:mod:`.nccl_plan`
    What NCCL would build on a system: each algorithm's protocol, channels and heads for one AllReduce.
:mod:`.repair`
    The level-ordered repair of max-min fair rates, like Dijkstra's algorithm over levels.
:mod:`.results`
    What a simulation answers: each step's time and what NCCL ran, and a program's steps.
:mod:`.sim_settings`
    What a simulator is asked to do, as one value: the algorithm setting, protocol, engine and rates.
:mod:`.simulator`
    Program-level simulation: lowered steps, buffer sizes, the engines that time a step, and reuse.
:mod:`.symmetry`
    Symmetry: flows that max-min sharing cannot tell apart are solved once per class.
"""

from .context import SimulationContext
from .engines import ENGINES
from .model_config import ModelConfig
from .results import ProgramResult, StepResult
from .sim_settings import SimSettings
from .simulator import Simulator, check_program_completes

__all__ = ["ENGINES", "ModelConfig", "ProgramResult", "StepResult", "SimulationContext", "SimSettings", "Simulator",
           "check_program_completes"]
