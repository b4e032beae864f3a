"""The placement and programs that ``--emit`` writes out, chosen from a rank or plan result.

A framework runs a program only when each of its steps is a collective over slices of the
per-level mesh (:func:`p2sim.formalism.level_mesh.mesh_program`): PyTorch further needs
every order-sensitive step's members by rank.  When the fastest program does not run
there (a ``Reduce`` / ``Broadcast`` or ``Master`` step), the emitted one is the fastest
ranked program that does, and the header says what that costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..formalism.hierarchy import Order
from ..formalism.level_mesh import LevelDim, MeshStep, level_dims, mesh_program
from ..formalism.mesh import megatron_match
from ..formalism.naming import describe_placement
from ..formalism.placement import Placement
from ..studies.plan import PlanResult
from ..studies.rank import RankResult
from ..studies.step_time import StepSettings
from ..workload.training import TrainingSpec
from ..studies.config_task import ALLREDUCE_TEXT
from ..util.parsing import default_axis_names
from ..util.units import format_seconds

__all__ = ["MeshReduction", "TrainingAssumed", "MeshChoice", "rank_mesh_choice", "plan_mesh_choice"]

# one AllReduce over the whole reduction group (the sweep's own constant): always a mesh slice
_ALLREDUCE = ALLREDUCE_TEXT
# forms that take the ranking's best as it is: JSON carries any program; Megatron-LM runs its own
# reductions, so its form says the best program without running it on a mesh
_AS_RANKED = ("json", "megatron")


@dataclass(frozen=True)
class MeshReduction:
    """One reduction of the chosen plan: its axes, the program emitted and its steps on the mesh."""

    axes: tuple[int, ...]
    algo: str
    program: str
    seconds: float
    steps: tuple[MeshStep, ...] | None = None  # None: the program is not a mesh program (json form only)
    note: str = ""  # why another program than the fastest was emitted


@dataclass(frozen=True)
class TrainingAssumed:
    """The training settings a model's step was predicted with (``plan --model``'s ``--train``): what
    ``--emit megatron`` passes on to Megatron-LM beside the placement."""

    training: TrainingSpec
    num_layers: int  # the model's transformer layers, which the pipeline stages split
    extra: StepSettings = StepSettings()  # FP8, recompute, tensor-parallel overlap (``p2sim step``'s --train)
    moe: bool = False  # the model routes tokens to experts (its dispatcher's settings apply)


@dataclass(frozen=True)
class MeshChoice:
    system: str
    nodes: int
    gpus_per_node: int
    placement: Placement
    reductions: tuple[MeshReduction, ...]

    axis_names: tuple[str, ...] = ()  # --axes data=8,..; empty: axis0, axis1, ..
    notes: tuple[str, ...] = ()  # what the table says beside the answer (scope, warnings): every form says it
    level_names: tuple[str, ...] = ()
    node_level: int | None = None
    order: Order = Order.ALIGNED
    proto: str = "auto"  # the NCCL protocol the programs were predicted with (--proto)
    training: TrainingAssumed | None = None  # a model's step (plan --model): its training settings

    @property
    def names(self) -> tuple[str, ...]:
        return self.axis_names or default_axis_names(len(self.placement.axes))

    @property
    def levels(self) -> tuple[str, ...]:
        return self.level_names or tuple(f"level{j}" for j in range(len(self.placement.hierarchy)))

    @cached_property
    def dims(self) -> tuple[LevelDim, ...]:
        return level_dims(self.placement, self.names, self.levels)

    @property
    def described(self) -> str:
        return describe_placement(self.placement.matrix, self.names, self.levels, self.node_level)

    @property
    def megatron(self) -> str:
        return megatron_match(self.placement, self.names)


def _pick(candidates, placement_of, reduce_axes, order, form: str):
    """The first candidate (fastest first) whose program runs on the mesh, with a note when not the first."""
    ascending = form == "torch"
    first = None
    for cand in candidates:
        steps = mesh_program(placement_of(cand), reduce_axes, cand.timing.text, order, ascending)
        if first is None:
            first = (cand, steps)
        if not isinstance(steps, str):
            if cand is first[0]:
                return cand, steps, ""
            best = first[0]
            return cand, steps, (f"the fastest program, {best.algo} {best.timing.text} "
                                 f"({format_seconds(best.seconds)}), does not run on a {form} mesh ({first[1]}); "
                                 f"this one is {cand.seconds / best.seconds:.3f}x its time")
    return first[0], None, f"no ranked program runs on a {form} mesh ({first[1]})"


def rank_mesh_choice(result: RankResult, form: str = "json") -> MeshChoice:
    """The best placement of a ranking with its program, or the fastest the framework runs."""
    job, topo = result.request.job, result.request.job.topology
    red = tuple(sorted(set(result.reduce_axes)))
    order = result.request.settings.order

    def placement_of(entry) -> Placement:
        return Placement.of(topo.hierarchy, job.axes, entry.matrix)

    if form in _AS_RANKED:
        entry, steps = result.best, mesh_program(placement_of(result.best), red, result.best.timing.text, order)
        steps, note = (None, "") if isinstance(steps, str) else (steps, "")
    else:
        entry, steps, note = _pick(result.ranking.entries, placement_of, red, order, form)
    if steps is None and form not in _AS_RANKED:  # no ranked program runs there: one AllReduce always does
        summary = next(m for m in result.ranking.matrices if m.matrix == entry.matrix)
        steps = mesh_program(placement_of(entry), red, _ALLREDUCE, order, form == "torch")
        note = (f"{note}; this is one AllReduce over the reduction ({summary.allreduce.seconds / entry.seconds:.3f}x "
                "the fastest program's time)")
        reduction = MeshReduction(red, summary.algo, _ALLREDUCE, summary.allreduce.seconds, steps, note)
    else:
        reduction = MeshReduction(red, entry.algo, entry.timing.text, entry.seconds, steps, note)
    notes = tuple(n for n in (result.scope,) + tuple(result.warnings) if n)
    return MeshChoice(topo.spec.name, topo.node_count, topo.gpus_per_node, placement_of(entry), (reduction,),
                      job.axis_names, notes, topo.level_names, job.spec.node_level, order,
                      result.request.settings.proto)


def plan_mesh_choice(result: PlanResult, form: str = "json") -> MeshChoice:
    """The best plan's placement with every reduction's program (a plain AllReduce where it does not run)."""
    job, best, topo = result.request.job, result.best, result.request.job.topology
    placement = Placement.of(topo.hierarchy, job.axes, best.matrix)
    order = result.request.settings.order
    reductions = []
    for c in best.choices:
        steps = mesh_program(placement, c.reduction.axes, c.program, order, form == "torch")
        if not isinstance(steps, str) or form in _AS_RANKED:
            reductions.append(MeshReduction(c.reduction.axes, c.algo, c.program, c.seconds,
                                            None if isinstance(steps, str) else steps))
            continue
        plain = mesh_program(placement, c.reduction.axes, _ALLREDUCE, order, form == "torch")
        note = (f"the chosen program, {c.algo} {c.program} ({format_seconds(c.seconds)}), does not run on a {form} "
                f"mesh ({steps}); this is one AllReduce ({c.allreduce_seconds / c.seconds:.3f}x its time)")
        reductions.append(MeshReduction(c.reduction.axes, "auto", _ALLREDUCE, c.allreduce_seconds, plain, note))
    demand = getattr(result.request, "demand", None)  # stand-ins (tests') may lack it
    work = None if demand is None else demand.workload  # a model's step: its training settings emitted
    training = None if work is None else TrainingAssumed(work.training, work.model.num_layers, work.extra,
                                                         work.model.is_moe)
    return MeshChoice(topo.spec.name, topo.node_count, topo.gpus_per_node, placement, tuple(reductions),
                      job.axis_names, tuple(result.warnings), topo.level_names, job.spec.node_level, order,
                      result.request.settings.proto, training)
