"""The simulator: a SimPy fluid engine and an analytic baseline behind one interface."""

from .model import MODELS, ModelConfig, ProgramResult, StepResult
from .simulator import Simulator, check_program_completes

__all__ = ["MODELS", "ModelConfig", "ProgramResult", "StepResult", "Simulator", "check_program_completes"]
