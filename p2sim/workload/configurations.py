"""Every parallel configuration a model can train with on a number of GPUs: the configuration search's space.

A configuration is the axes' sizes (tensor, context, pipeline, expert, data: their product the GPUs),
the virtual stages and the micro-batch; :func:`candidates` lists every one that Megatron-LM's rules
accept (:func:`~p2sim.workload.training.fit` is the one statement of them: heads and query groups
split over the tensor axis, the sequence over 2 x context, the experts over the expert axis, the
global batch over micro-batch x data x expert, the interleaved schedule's micro-batches over the
stages), within the limits a demanding user would set anyway:

* the tensor axis stays inside one NVLink domain (``tensor_limit``: a node's GPUs, a rack's on NVL72):
  its AllReduces or AllGather/ReduceScatter pairs run every layer, and no published run splits them
  over the network (Megatron-LM's guidance, Narayanan et al. 2021 section 3.3: "tensor model
  parallelism ... within a multi-GPU server");
* a model split over the tensor axis runs with sequence parallelism (Korthikanti et al. 2022 show it is
  never slower and always smaller; Megatron-LM needs it for MoE);
* virtual stages split the layers evenly, or with the embedding and the loss counted as a layer each
  (the layouts Megatron-LM's ``--account-for-embedding/loss-in-pipeline-split`` give): ``(layers +
  2) / (pipeline x virtual)`` layers a chunk;
* micro-batches are powers of two up to ``max_micro_batch``.

The list is in a fixed order (tensor, context, pipeline, expert, virtual, micro-batch, all
ascending): the same inputs give the same list.

Examples
--------
>>> from p2sim.workload.model_files import load_model
>>> from p2sim.workload.training import TrainingSpec
>>> t = TrainingSpec(seq_length=8192, global_batch=64)
>>> cs = candidates(load_model("llama3-8b"), 16, t, tensor_limit=8)
>>> len(cs), cs[0].label
(452, 'tensor=1 context=1 pipeline=1 data=16 mbs=1')
>>> [c.label for c in cs if c.axes["tensor"] == 8 and c.axes["pipeline"] == 2 and c.micro_batch == 1]
['tensor=8 context=1 pipeline=2 data=1 mbs=1', 'tensor=8 context=1 pipeline=2 data=1 vp=2 mbs=1', \
'tensor=8 context=1 pipeline=2 data=1 vp=4 mbs=1', 'tensor=8 context=1 pipeline=2 data=1 vp=8 mbs=1', \
'tensor=8 context=1 pipeline=2 data=1 vp=16 mbs=1']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from ..util.errors import InputError
from .model_spec import ModelSpec
from .training import AXES, TrainingSpec, fit

__all__ = ["Configuration", "candidates", "divisors", "MAX_MICRO_BATCH"]

MAX_MICRO_BATCH = 16  # the largest micro-batch tried (the published recipes use 1-4: step_times_dev.csv)


@dataclass(frozen=True)
class Configuration:
    """One way to run a training step: the axes' sizes and the training settings with its virtual
    stages, micro-batch and sequence parallelism (``training``, checked by :func:`~p2sim.workload.training.fit`)."""

    axes: Mapping[str, int]
    training: TrainingSpec

    @property
    def micro_batch(self) -> int:
        return self.training.micro_batch

    @property
    def virtual_stages(self) -> int:
        return self.training.virtual_stages

    @property
    def label(self) -> str:
        """``tensor=8 context=1 pipeline=2 data=1 vp=2 mbs=1`` (the expert axis where it is split, vp where > 1)."""
        shown = [f"{a}={self.axes[a]}" for a in ("tensor", "context", "pipeline", "expert", "data")
                 if a != "expert" or self.axes[a] > 1]
        vp = [f"vp={self.virtual_stages}"] if self.virtual_stages > 1 else []
        return " ".join(shown + vp + [f"mbs={self.micro_batch}"])


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending.

    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _virtual(layers: int, pipeline: int) -> list[int]:
    """Virtual stages for ``pipeline`` stages: 1, and each count > 1 whose chunks split the layers evenly or
    with the embedding and the loss counted as a layer each."""
    if pipeline < 2:
        return [1]
    return [1] + [v for v in range(2, layers // pipeline + 1)
                  if layers % (pipeline * v) == 0 or (layers + 2) % (pipeline * v) == 0]


def candidates(model: ModelSpec, gpus: int, training: TrainingSpec, *, tensor_limit: int,
               max_micro_batch: int = MAX_MICRO_BATCH) -> list[Configuration]:
    """Every configuration of ``model`` on ``gpus`` GPUs that fits (see the module), in a fixed order.

    ``training`` gives the sequence, the global batch and the dtypes; its micro-batch, virtual stages,
    schedule and sequence parallelism are what the search varies.  ``tensor_limit`` is the NVLink domain's
    GPUs.  A global batch must be given (the search divides it).

    Raises
    ------
    InputError
        No global batch, or no configuration fits (the message says what the rules ask).
    """
    if training.global_batch is None:
        raise InputError("search: give the global batch (--train global_batch=...): the configurations divide it")
    for name, value in (("gpus", gpus), ("tensor_limit", tensor_limit), ("max_micro_batch", max_micro_batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"search: {name}: {value!r} should be a positive integer")
    micro = [m for m in (2**k for k in range(max_micro_batch.bit_length())) if m <= max_micro_batch]
    experts = divisors(model.experts) if model.is_moe else [1]
    out: list[Configuration] = []
    for t in divisors(gpus):
        if t > tensor_limit:
            break
        for c in divisors(gpus // t):
            for p in divisors(gpus // (t * c)):
                for e in experts:
                    if (gpus // (t * c * p)) % e:
                        continue
                    d = gpus // (t * c * p * e)
                    axes = MappingProxyType(dict(zip(AXES, (t, c, p, d, e))))
                    for v in _virtual(model.num_layers, p):
                        for m in micro:
                            out += _fitting(model, training, axes, v, m)
    if not out:
        raise InputError(f"search: no configuration of {model.name} fits {gpus} GPUs with global batch "
                         f"{training.global_batch} and sequence {training.seq_length} (tensor within {tensor_limit} "
                         "GPUs; heads, sequence, experts and batch must divide as Megatron-LM needs)")
    return out


def _fitting(model: ModelSpec, training: TrainingSpec, axes: Mapping[str, int], virtual: int,
             micro: int) -> list[Configuration]:
    """The configuration of these sizes, if :func:`fit` accepts it (a list of none or one)."""
    settings = replace(training, micro_batch=micro, virtual_stages=virtual,
                       schedule="interleaved" if virtual > 1 else "1f1b",
                       sequence_parallel=axes["tensor"] > 1)
    try:
        fit(model, settings, axes)
    except InputError:
        return []
    return [Configuration(axes, settings)]
