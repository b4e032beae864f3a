"""Simulating programs on a system: one given in text form, or every synthesized one.

Examples
--------
>>> req = SimulateRequest.build(system="a100", axes="data=2,tensor=16", reduce="tensor",
...                             matrix="[[1 2] [2 8]]", program="AllReduce(slice=0, Inside)")
>>> result = run_simulate(req)
>>> [(r.text, round(r.total_seconds, 4)) for _, _, r in result.rows]
[('AllReduce(slice=0, Inside)', 1.0741)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..collectives.binding import Binding
from ..collectives.choice import serves
from ..util.algorithms import algorithm, forced
from ..formalism.hierarchy import LoweredStep, Order
from ..formalism.naming import describe_placement
from ..formalism.placement import Matrix, count_matrices, format_matrix, parse_matrix
from ..formalism.program import Program, parse_program
from ..formalism.synthesis import placement_lowerings, synthesize, validate_program
from ..sim import ModelConfig, ProgramResult, Simulator
from ..sim.engines import check_engine
from ..util.errors import InputError
from ..util.log import announce, progress
from ..util.table import Tabular
from ..util.units import format_seconds
from .jobsize import Limits, plural, program_counts
from .demand import DEFAULT_REDUCE, Demand
from .requests import DEFAULT_SETTINGS, DEFAULT_SYSTEM, EVERY_PROGRAM, Job, Rules, Settings, limits_of

__all__ = ["SimulateRequest", "SimulateResult", "run_simulate", "program_result_json"]


@dataclass(frozen=True)
class SimulateRequest:
    job: Job
    demand: Demand  # the one reduction: its axes (as given) and buffer per GPU
    matrices: tuple[Matrix, ...] | None  # None: every matrix
    program: str  # a program's text, or EVERY_PROGRAM
    settings: Settings
    limits: Limits
    trace: bool = False  # keep every flow (for a Chrome trace)

    @classmethod
    def build(cls, system: Any = DEFAULT_SYSTEM, nodes: Any = None, axes: Any = None, reduce: Any = DEFAULT_REDUCE, matrix: Any = None,
              program: str = EVERY_PROGRAM, algo: str = DEFAULT_SETTINGS.algo, proto: str = DEFAULT_SETTINGS.proto, bytes: Any = None,  # noqa: A002
              engine: str = DEFAULT_SETTINGS.engine, profile: Any = DEFAULT_SETTINGS.rules.profile.value, max_size: Any = DEFAULT_SETTINGS.rules.max_size, order: Any = DEFAULT_SETTINGS.order.value,
              trace: bool = False, max_matrices: Any = None, max_simulations: Any = None, yes: bool = False
              ) -> SimulateRequest:
        job = Job.build(system, nodes, axes)
        demand = Demand.of_reduce(reduce, bytes, job.axis_names, job.topology)
        check_engine(engine)
        if trace and engine == "analytic":
            raise InputError("trace: --trace needs --engine des; the analytic engine computes each step in closed form "
                             "and has no flows to trace")
        mats = None if matrix is None else (parse_matrix(matrix) if isinstance(matrix, str) else
                                            tuple(tuple(r) for r in matrix),)
        # the algorithm and protocol as given: the simulator checks them, after the program's own checks
        settings = Settings(algo, proto, engine, Rules.of(profile, max_size), Order.parse(order))
        return cls(job, demand, mats, program, settings, limits_of(yes, max_matrices, max_simulations), bool(trace))


@dataclass(frozen=True, repr=False)
class SimulateResult(Tabular):
    """Every simulated (matrix, program, result), with what ran them.

    ``table()``: the programs, as the JSON's ``programs``.
    """

    request: SimulateRequest
    reduce_axes: tuple[int, ...]
    config: ModelConfig
    rows: tuple[tuple[Matrix, Program, ProgramResult], ...]
    lowered: tuple[tuple[LoweredStep, ...], ...]  # each row's lowered steps (device groups)
    warnings: tuple[str, ...] = ()
    bounds: tuple[tuple[Binding, ...], ...] = ()  # each row's steps: what bounds them

    def placement(self, matrix: Matrix) -> str:
        job = self.request.job
        return describe_placement(matrix, job.axis_names, job.topology.level_names, job.spec.node_level)

    def table(self) -> list[dict[str, Any]]:
        bounds = self.bounds or ((),) * len(self.rows)
        return [dict(program_result_json(m, prog, r, b), placement=self.placement(m))
                for (m, prog, r), b in zip(self.rows, bounds)]

    def summary(self) -> str:
        job = self.request.job
        what = f"simulate on {job.spec.name} ({job.topology.node_count} nodes, axes {job.axes_text})"
        if not self.rows:
            return f"{what}: no programs"
        m, prog, r = min(self.rows, key=lambda row: row[2].total_seconds)
        return (f"{what}: {len(self.rows)} programs; fastest {format_matrix(m)} {prog} in "
                f"{format_seconds(r.total_seconds)}")

    def to_json(self) -> dict[str, Any]:
        req, job = self.request, self.request.job
        topo, s = job.topology, req.settings
        return {
            "system": topo.spec.name, "nodes": topo.node_count, "axes": list(job.axes),
            "axis_names": list(job.axis_names), "level_names": list(topo.level_names),
            "reduce_axes": list(self.reduce_axes), "order": s.order.value, "algo": s.algo, "model": s.engine,
            "bytes_per_gpu": self.request.demand.bytes_per_gpu, "proto": s.proto, "config": self.config.to_json(topo.spec),
            "programs": self.table(),
        }


def program_result_json(matrix: Matrix, program: Program, r: ProgramResult,
                        bounds: tuple[Binding, ...] = ()) -> dict[str, Any]:
    steps = [dict(s.to_json(), instruction=i.text) for s, i in zip(r.steps, program.instructions)]
    for step, b in zip(steps, bounds):
        step["bound"] = b.to_json()
    return {
        "matrix": [list(row) for row in matrix],
        "text": r.text,
        "total_seconds": r.total_seconds,
        "steps": steps,
    }


def run_simulate(req: SimulateRequest) -> SimulateResult:
    job, topo = req.job, req.job.topology
    h, p = job.hierarchy, job.axes
    settings, rules = req.settings, req.settings.rules
    if req.program == EVERY_PROGRAM:
        if req.matrices is None:
            req.limits.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {topo.spec.name}")
        lws = placement_lowerings(h, p, req.demand.reduce_axes, req.matrices, settings.order)
        counts = program_counts([lw.placement.matrix for lw in lws], req.demand.reduce_axes, rules.profile,
                                rules.max_size, req.limits)
        req.limits.check_simulations(sum(counts), f"{plural(len(lws), 'matrix')} with {sum(counts)} programs")
        work = [(lw.placement.matrix, lw, synthesize(lw.synthesis, rules.profile, rules.max_size))
                for lw in lws]
    else:
        # one program: check it on compact states; nothing is synthesized
        lws = placement_lowerings(h, p, req.demand.reduce_axes, req.matrices, settings.order)
        if len(lws) > 1:
            options = "; ".join(f'"{format_matrix(lw.placement.matrix)}"' for lw in lws)
            raise InputError(f"matrix: axes {','.join(map(str, p))} have {len(lws)} matrices; "
                             f"name one with --matrix ({options})")
        prog = parse_program(req.program)
        validate_program(lws[0].synthesis, prog)
        ops = [ins.op.value for ins in prog.instructions]
        algo = settings.algo
        if algo != "auto" and not any(serves(algo, op) for op in ops):
            raise InputError(f"algo: {algo} runs none of the program's collectives ({', '.join(dict.fromkeys(ops))}): "
                             f"it runs {', '.join(algorithm(forced(algo)[0]).collectives)} (NCCL's tuning.cc)")
        work = [(lws[0].placement.matrix, lws[0], (prog,))]
    sim = Simulator(topo, settings.sim, trace=req.trace)
    for _, lowering, programs in work:  # every program's steps can run the forced algorithm, before any runs
        for prog in programs:
            sim.check_forced(prog, lowering.lower(prog))
    warning = req.demand.warn_memory(job.topology)
    if req.program == EVERY_PROGRAM:
        announce(f"{plural(len(work), 'matrix')}, {plural(sum(len(w[2]) for w in work), 'simulation')}")
    rows, lowered, bounds = [], [], []
    # a line every few seconds on stderr: a program over 131,072 GPUs takes minutes, its first step the longest
    with progress("simulating", sum(len(w[2]) for w in work)) as advance:
        for matrix, lowering, programs in work:
            for prog in programs:
                rows.append((matrix, prog, sim.simulate(lowering, prog, req.demand.bytes_per_gpu)))
                lowered.append(tuple(lowering.lower(prog)))
                bounds.append(sim.bindings(lowering, prog, req.demand.bytes_per_gpu))
                advance(1)
    return SimulateResult(req, lws[0].reduce_axes, sim.config, tuple(rows), tuple(lowered),
                          () if warning is None else (warning,), tuple(bounds))
