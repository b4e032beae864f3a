"""Simulating every (matrix, program) of a configuration as one picklable task."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..formalism.placement import Matrix
from ..formalism.program import parse_program
from ..sim import SimulationContext, Simulator, StepResult
from ..formalism.synthesis import Synthesis, synthesize_placements
from ..topology import Topology
from ..topology.spec import SystemSpec
from .contexts import context_of
from .requests import Settings

__all__ = ["ConfigTask", "ProgramTiming", "ConfigResult", "run_task", "task_context", "ALLREDUCE_TEXT"]

ALLREDUCE_TEXT = "AllReduce(slice=0, Inside)"


@dataclass(frozen=True, kw_only=True)
class ConfigTask:
    """All inputs of one configuration's simulations (sent whole to a worker); built by keyword."""

    spec: SystemSpec
    nodes: int
    axes: tuple[int, ...]
    reduce_axes: tuple[int, ...]
    bytes_per_gpu: float
    settings: Settings = field(default_factory=Settings)  # one algorithm (Settings.each), not "both"
    matrices: tuple[Matrix, ...] | None = None
    programs: tuple[str, ...] | None = None  # only these programs (by text; None: every one)

    def synthesis(self, topo: Topology) -> Synthesis:
        """The task's matrices and their programs, by its rules and device order, on ``topo`` (the task's system)."""
        s = self.settings
        return synthesize_placements(topo.hierarchy, self.axes, self.reduce_axes, s.rules.profile, s.rules.max_size,
                                     self.matrices, s.order)


@dataclass(frozen=True)
class ProgramTiming:
    matrix: Matrix
    text: str
    seconds: float
    steps: tuple[StepResult, ...] = field(repr=False)


@dataclass(frozen=True)
class ConfigResult:
    task: ConfigTask
    programs: tuple[ProgramTiming, ...]
    counts: tuple[tuple[Matrix, int], ...] = ()  # programs per matrix, where not all are in ``programs``

    def count(self, matrix: Matrix) -> int:
        """How many programs the matrix has (simulated or not)."""
        return dict(self.counts).get(matrix, len(self.of(matrix)))

    def matrices(self) -> list[Matrix]:
        out: list[Matrix] = []
        for p in self.programs:
            if p.matrix not in out:
                out.append(p.matrix)
        return out

    def of(self, matrix: Matrix) -> list[ProgramTiming]:
        return [p for p in self.programs if p.matrix == matrix]

    def allreduce(self, matrix: Matrix) -> ProgramTiming:
        return next(p for p in self.of(matrix) if p.text == ALLREDUCE_TEXT)

    def best(self, matrix: Matrix) -> ProgramTiming:
        return min(self.of(matrix), key=lambda p: p.seconds)

    def better_than_allreduce(self) -> int:
        """Programs (over all matrices) faster than their matrix's AllReduce."""
        n = 0
        for m in self.matrices():
            ar = self.allreduce(m).seconds
            # below a relative 1e-9 two times are the same time in different float sums
            n += sum(1 for p in self.of(m) if p.seconds < ar * (1 - 1e-9))
        return n


def task_context(task: ConfigTask) -> SimulationContext:
    """The task's simulation context (its topology: ``.topo``), one per process and system.

    The tasks of one search that run in one process share its routes, ring searches and
    collectives (:func:`~p2sim.studies.contexts.context_of`: the job's own context in a serial
    run); what depends on the order in which groups came (decisions per group shape, and the
    step results built on them) is forgotten before each task, so a task's results never depend
    on the tasks before it (or on the executor that placed it).
    """
    ctx = context_of(task.spec, task.nodes)
    ctx.forget_order()
    return ctx


def run_task(task: ConfigTask, context: SimulationContext | None = None) -> ConfigResult:
    """Synthesize and simulate every program of every matrix of a task (or the task's ``programs``),
    in ``context`` (its topology the task's system; kept as it is) or else the task's own
    (:func:`task_context`)."""
    ctx = task_context(task) if context is None else context
    if ctx.geometry is not None:
        # the moved links that the bounds of a what-if's points kept (up to 32 MiB) are read by bounds only:
        # the simulations read the classes, and a search simulates once every bound is taken
        ctx.geometry.drop("links")
    topo = ctx.topo
    syn = task.synthesis(topo)
    sim = Simulator(topo, task.settings.sim, context=ctx)
    # programs compare as values: parsing the few wanted beats printing every one
    wanted = None if task.programs is None else {parse_program(t) for t in task.programs}
    out = []
    for mp in syn.matrices:
        found = set()
        for prog in mp.programs:
            if wanted is not None and prog not in wanted:
                continue
            found.add(prog)
            r = sim.simulate(mp.lowering, prog, task.bytes_per_gpu)
            out.append(ProgramTiming(mp.matrix, r.text, r.total_seconds, r.steps))
        # a program given by the user (whatif --program, validated there) that the rules' synthesis does not
        # list -- longer than --max-size, or outside the profile -- still runs, as simulate runs it
        for prog in [parse_program(t) for t in task.programs or ()]:
            if prog not in found:
                r = sim.simulate(mp.lowering, prog, task.bytes_per_gpu)
                out.append(ProgramTiming(mp.matrix, r.text, r.total_seconds, r.steps))
    return ConfigResult(task, tuple(out))
