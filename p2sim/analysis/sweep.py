"""Simulating every (matrix, program) of a configuration as one picklable task."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..placement import Matrix
from ..sim import ModelConfig, Simulator, StepResult
from ..synthesis import DEFAULT_MAX_SIZE, synthesize_placements
from ..topology import Topology
from ..topology.spec import SystemSpec

__all__ = ["SweepTask", "ProgramTiming", "ConfigResult", "run_task", "ALLREDUCE_TEXT"]

ALLREDUCE_TEXT = "AllReduce(slice=0, Inside)"


@dataclass(frozen=True)
class SweepTask:
    """All inputs of one configuration's simulations (sent whole to a worker)."""

    spec: SystemSpec
    nodes: int
    axes: tuple[int, ...]
    reduce_axes: tuple[int, ...]
    algo: str
    model: str
    bytes_per_gpu: float
    config: ModelConfig | None = None  # None: the system file's [model] settings
    profile: str = "paper"
    max_size: int = DEFAULT_MAX_SIZE
    matrices: tuple[Matrix, ...] | None = None
    proto: str = "auto"
    order: str = "aligned"  # the device order of reduction groups (p2sim.hierarchy.Order)


@dataclass(frozen=True)
class ProgramTiming:
    matrix: Matrix
    text: str
    seconds: float
    steps: tuple[StepResult, ...] = field(repr=False)


@dataclass(frozen=True)
class ConfigResult:
    task: SweepTask
    programs: tuple[ProgramTiming, ...]

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


def run_task(task: SweepTask, topology: Topology | None = None) -> ConfigResult:
    """Synthesize and simulate every program of every matrix of a task."""
    topo = topology if topology is not None else Topology(task.spec, task.nodes)
    syn = synthesize_placements(topo.hierarchy, task.axes, task.reduce_axes, task.profile, task.max_size,
                                task.matrices, task.order)
    sim = Simulator(topo, task.algo, task.model, task.config, proto=task.proto)
    out = []
    for mp in syn.matrices:
        for prog in mp.programs:
            r = sim.simulate(mp.lowering, prog, task.bytes_per_gpu)
            out.append(ProgramTiming(mp.matrix, r.text, r.total_seconds, r.steps))
    return ConfigResult(task, tuple(out))
