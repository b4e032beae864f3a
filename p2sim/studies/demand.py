"""What a study is asked to make fast, as one value: the :class:`Demand`, whatever the kind of question.

A study answers one of two kinds of question: the collectives a user names (rank's and simulate's one reduction,
``--reduce`` and ``--bytes``; plan's ``--reduction`` list), or a training model's whole step (``--model``,
``--train``, ``--compute-per-layer``).  Both are a Demand: an ordered set of reductions (:class:`Reduction`:
the axes reduced, the buffer per GPU, the calls per step) and, for a model's step, the model's workload
(:class:`~p2sim.studies.step_workload.StepWorkload`: its other collectives, training settings, compute per
layer and so the overlap).  The studies read the reductions, the other collectives (``parts``, none for named
reductions) and the overlap (none without a compute time) from it alike.

Its constructors turn the forms a user gives into the value, each input refused with its field and value,
and each is called once, where a request is built:

* :meth:`Demand.of_reduce`: one reduction, ``--reduce`` and ``--bytes`` (rank, simulate, check; whatif at each
  point, where P2's default buffer grows with the node count);
* :meth:`Demand.of_reductions`: plan's ``--reduction`` list (texts like ``"tensor:64MiB x 24"`` or
  :class:`Reduction` values);
* :meth:`Demand.of_model`: a model's step on the job's axes, with any ``--reduction`` given added.

A new kind of question is a new constructor here (and the study that reads what it adds); see
docs/architecture.md.

Examples
--------
>>> d = Demand.of_reductions(["data:1GiB", "tensor:64MiB x 24"], ("data", "tensor"), (4, 8))
>>> [(r.axes, r.bytes, r.count) for r in d.reductions], d.whole_step, d.parts
([((0,), 1073741824, 1), ((1,), 67108864, 24)], False, ())
>>> Demand.of_reductions([], ("data",), (8,))
Traceback (most recent call last):
...
p2sim.util.errors.InputError: reduction: give at least one --reduction AXES:SIZE[ x COUNT], or --model NAME|FILE
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..topology import Topology
from ..util.errors import InputError
from ..util.parsing import MAX_BYTES, as_text, axis_indices, byte_size, positive_int
from ..util.units import format_bytes, format_int
from .requests import default_bytes, reduces_something, warn_memory
from .step_workload import Overlap, StepPart, StepWorkload, step_workload

__all__ = ["DEFAULT_REDUCE", "Reduction", "parse_reduction", "Demand", "no_model_options"]

DEFAULT_REDUCE = "0"  # the reduction axes when none are given: the first axis


@dataclass(frozen=True)
class Reduction:
    """A reduction of a step: over ``axes`` (job axis indices), ``bytes`` per GPU, ``count`` calls a step."""

    axes: tuple[int, ...]
    bytes: int
    count: int = 1

    @property
    def label(self) -> str:
        return f"{','.join(map(str, self.axes))}:{self.bytes}B x {self.count}"


_RED = re.compile(r"^\s*([\w,\s-]+?)\s*:\s*([^x]+?)\s*(?:x\s*(\S+))?\s*$")


def parse_reduction(text: str, names: Sequence[str] = ()) -> Reduction:
    """Parse ``"0:4GiB"``, ``"1:512MiB x 24"``, ``"0,2:1GiB"`` or, with axis names, ``"tensor:512MiB x 24"``.

    Examples
    --------
    >>> parse_reduction("1:512MiB x 24")
    Reduction(axes=(1,), bytes=536870912, count=24)
    >>> parse_reduction("data,pipeline:1GiB", ("data", "tensor", "pipeline")).axes
    (0, 2)
    """
    m = _RED.match(text)
    if not m:
        raise InputError(f"reduction: {text!r} is not AXES:SIZE[ x COUNT], e.g. \"1:512MiB x 24\"")
    axes = axis_indices(m.group(1), tuple(names), "reduction axes")
    count = 1 if m.group(3) is None else positive_int(m.group(3), "reduction count")
    return Reduction(tuple(sorted(set(axes))), byte_size(m.group(2), "reduction size"), count)


def no_model_options(train: Any, compute_per_layer: Any) -> None:
    """Without ``--model``, its step's options are refused, one line naming the first given."""
    for name, value in (("train", train), ("compute-per-layer", compute_per_layer)):
        if value is not None:
            raise InputError(f"{name}: describes the training step of a --model; give --model NAME|FILE")


def _checked(given: Any, names: Sequence[str], sizes: Sequence[int]) -> tuple[Reduction, ...]:
    """``--reduction``'s values (one text or Reduction, or several) parsed, each reducing something and at most
    1 PiB a step."""
    if isinstance(given, (str, Reduction)):
        given = [given]
    parsed = tuple(r if isinstance(r, Reduction) else parse_reduction(r, names) for r in given)
    for r in parsed:
        reduces_something(tuple(sizes), r.axes)
        if not isinstance(r.count, int) or r.count < 1 or r.bytes * r.count > MAX_BYTES:
            # as a model's step is bounded (p2sim.workload.step): its count reaches float() too
            raise InputError(f"reduction: {format_bytes(r.bytes)} x {format_int(r.count)}"
                             " is more than 1 PiB in one step (or no positive count): no step reduces that much")
    return parsed


@dataclass(frozen=True)
class Demand:
    """What a study is asked to make fast: ``reductions`` in order and, for a model's step, its ``workload``.

    ``default_bytes``: the one reduction's buffer is P2's default (it grows with the node count), for the
    memory warning's words.
    """

    reductions: tuple[Reduction, ...]
    workload: StepWorkload | None = None  # a model's step: its other collectives, training, compute, overlap
    default_bytes: bool = False

    @classmethod
    def of_reduce(cls, reduce: Any, bytes: Any, names: Sequence[str], topo: Topology) -> Demand:  # noqa: A002
        """One reduction, as ``--reduce`` (axes by index or name, kept as given: a study validates them against
        the axes after its other checks) and ``--bytes`` (None: P2's buffer on ``topo``) give it.

        >>> from p2sim.topology import load_system
        >>> d = Demand.of_reduce("tensor", None, ("data", "tensor"), load_system("a100", 2))
        >>> d.reduce_axes, d.bytes_per_gpu, d.default_bytes
        ((1,), 4294967296, True)
        """
        red = axis_indices(as_text(reduce, "reduce"), tuple(names), "reduce")
        nbytes = default_bytes(topo) if bytes is None else byte_size(as_text(bytes, "bytes"))
        return cls((Reduction(tuple(red), nbytes),), None, bytes is None)

    @classmethod
    def of_reductions(cls, given: Any, names: Sequence[str], sizes: Sequence[int]) -> Demand:
        """The reductions of plan's ``--reduction`` (texts or :class:`Reduction` values), at least one."""
        if isinstance(given, (str, Reduction)):
            given = [given]
        if not given:
            raise InputError("reduction: give at least one --reduction AXES:SIZE[ x COUNT], or --model NAME|FILE")
        return cls(_checked(given, names, sizes))

    @classmethod
    def of_model(cls, model: Any, train: Any, compute_per_layer: Any, names: Sequence[str], sizes: Sequence[int],
                 given: Any = ()) -> Demand:
        """A model's whole step on the job's axes (``names``, ``sizes``): its AllReduces first, then the
        reductions ``given``, equal ones (axes and size) one reduction with their counts added."""
        work = step_workload(model, train, names, sizes, compute_per_layer)
        counts: dict[tuple[tuple[int, ...], int], int] = {}
        for axes, nbytes, count in [*work.reductions, *((r.axes, r.bytes, r.count)
                                                         for r in _checked(given, names, sizes))]:
            counts[(axes, nbytes)] = counts.get((axes, nbytes), 0) + count
        return cls(tuple(Reduction(a, b, n) for (a, b), n in counts.items()), work)

    @property
    def whole_step(self) -> bool:
        """Whether this is a model's whole step (its other collectives charged, its report by axis)."""
        return self.workload is not None

    @property
    def reduce_axes(self) -> tuple[int, ...]:
        """The first reduction's axes (rank's and simulate's one reduction)."""
        return self.reductions[0].axes

    @property
    def bytes_per_gpu(self) -> int:
        """The first reduction's buffer per GPU (rank's and simulate's one reduction)."""
        return self.reductions[0].bytes

    @property
    def parts(self) -> tuple[StepPart, ...]:
        """The step's collectives other than its reductions (none for named reductions)."""
        return () if self.workload is None else self.workload.parts

    @property
    def overlap(self) -> Overlap | None:
        """The data reduction's overlap with the last backward compute (None: no compute time, no overlap)."""
        backward = None if self.workload is None else self.workload.backward_seconds
        return None if backward is None else Overlap(backward, self.workload.overlapped)

    @property
    def largest(self) -> int:
        """The largest buffer per GPU of any of its collectives."""
        return max([r.bytes for r in self.reductions] + [p.size for p in self.parts])

    def warn_memory(self, topo: Topology, hint: str = "give --bytes") -> str | None:
        """The warning (logged, and returned) where its largest buffer exceeds the GPU's memory."""
        return warn_memory(topo.spec, self.largest, self.default_bytes, topo.node_count, hint)
