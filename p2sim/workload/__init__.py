"""A training step's workload: a model's description and its training settings in, every collective of one step out.

The layer right above :mod:`p2sim.formalism`: pure arithmetic on published formulas, no hardware.
:mod:`.model_spec` is a transformer's shape and parameter count, :mod:`.model_files` reads it from a
Hugging Face ``config.json``, a TOML or a shipped preset, :mod:`.training` holds how a step is run
(sequence, batches, dtypes, how each parallelism axis is used) and checks that it fits the model,
:mod:`.step` derives every collective of one step per rank, with its volume, count and source, and
:mod:`.step_table` renders them as a table; :mod:`.compute`, :mod:`.op_time`, :mod:`.schedule` and
:mod:`.memory` give a step's compute, its operations' times, the pipeline's bubble and the memory per GPU.  It imports only :mod:`p2sim.util`.

Modules
-------
:mod:`.compute`
    The compute of one training step: every operation of a layer with its shape, FLOPs and bytes, and the model FLOPs.
:mod:`.configurations`
    Every parallel configuration a model can train with on a number of GPUs: the configuration search's space.
:mod:`.memory`
    Memory per GPU of a training step: weights, gradients, optimizer states, activations, and what does not fit.
:mod:`.model_files`
    A model from a Hugging Face ``config.json``, a small TOML of :class:`ModelSpec`'s fields, or a shipped preset.
:mod:`.model_spec`
    A transformer as its configuration describes it, and the parameters those fields imply.
:mod:`.op_time`
    The time of one operation on one GPU, from its shape: a roofline with achievable fractions of the peaks.
:mod:`.recompute`
    Activation recomputation as Megatron-Core runs it: none, selective by module, or full.
:mod:`.schedule`
    The pipeline schedule: how a model's layers split over stages and virtual chunks, and the step's bubble.
:mod:`.step`
    Every collective of one training step, per rank, with its volume, count and published formula.
:mod:`.step_table`
    A step's collectives as a text table: axis, operation, phase, size, count, bytes per step, formula.
:mod:`.train_text`
    ``--train``'s text: a step's training settings as ``KEY=VALUE`` pairs, read into a :class:`TrainingSpec`.
:mod:`.training`
    How one training step runs: sequence, batches, dtypes, and how each parallelism axis is used.
"""

from __future__ import annotations

from .model_files import PRESETS, load_model
from .model_spec import ModelSpec
from .step import StepCollective, step_collectives
from .step_table import step_table as render_step
from .training import TrainingSpec, axis_sizes

__all__ = ["ModelSpec", "TrainingSpec", "StepCollective", "PRESETS", "load_model", "step_collectives", "render_step",
           "axis_sizes"]
