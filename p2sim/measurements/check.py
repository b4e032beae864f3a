"""``p2sim check``: the nccl-tests runs that measure a placement's steps, and verdicts on their logs.

The question nccl-tests users ask most is "is my number what I should get?".  For a
placement and program (given, or the best that ``rank`` finds), each step becomes one
nccl-tests command: the step's collective binary at the step's buffer size, one GPU per
process, with ``NCCL_TESTS_SPLIT`` (:mod:`p2sim.measurements.split`) where the step runs
several groups at once so that they share the links as they do in training, and ``-J``
for nccl-tests' JSON output.  Each command comes with its prediction and what bounds it.

Given logs (nccl-tests text or ``-J`` JSON, split runs included), every row is predicted
as ``validate`` predicts it and judged: *as predicted* when measured and predicted bus
bandwidths agree within ``tolerance``, else *slower* or *faster than predicted by X*,
naming the resource that bounds the prediction (:mod:`p2sim.collectives.binding`).

Examples
--------
>>> req = CheckRequest.build(system="dgx-h100", nodes=2, axes="data=16", reduce="data",
...                          matrix="[[2 8]]", program="ReduceScatter(slice=1, Inside) ; "
...                          "AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)", bytes="1GiB")
>>> steps = run_check(req).steps
>>> print(steps[0].command)
mpirun -np 16 -N 8 -x NCCL_TESTS_SPLIT="DIV 8" ./build/reduce_scatter_perf -b 1073741824 -e 1073741824 -g 1 -J step1.json
>>> steps[1].split, steps[1].group_size
('MOD 8', 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..formalism.placement import Matrix, Placement, format_matrix, parse_matrix
from ..formalism.naming import describe_placement
from ..formalism.program import parse_program
from ..sim import Simulator
from ..sim.sim_settings import SimSettings
from ..studies.plan import PlanRequest
from ..studies.rank import RankRequest, run_rank
from ..studies.demand import DEFAULT_REDUCE, Demand, no_model_options
from ..studies.requests import DEFAULT_SETTINGS, DEFAULT_SYSTEM, Job, RunOptions, Settings, reduces_something
from ..studies.simulate import SimulateRequest, run_simulate
from ..topology import system_ref
from ..util.errors import InputError
from ..util.parsing import as_text, positive_float
from ..util.table import Tabular
from ..util.units import format_seconds
from .collective_predict import predict_collectives
from .collective_rows import bus_factor
from .emulated import emulated_warnings
from .inputs import load_inputs
from .check_step import best_matrix, step_checks
from .nccl_commands import BINARIES, CheckStep, nccl_command
from .verdict import TOLERANCE, Verdict, verdicts

__all__ = ["CheckStep", "CheckRequest", "CheckResult", "run_check", "BINARIES"]

_FLOAT = 4  # nccl-tests' default type is float: sizes are whole elements, split evenly over the ranks


@dataclass(frozen=True)
class CheckRequest:
    job: Job
    demand: Demand  # the one reduction (--reduce, --bytes), or a model's step (--model): its collectives checked
    matrix: Matrix | None
    program: str | None  # None: the best that rank finds (for the matrix, when given)
    settings: SimSettings  # the algorithm and protocol as given: rank or simulate checks them
    workers: Any = None
    logs: tuple[str, ...] = ()  # nccl-tests logs (text or -J JSON) to judge
    tolerance: float = TOLERANCE

    @classmethod
    def build(cls, system: Any = DEFAULT_SYSTEM, nodes: Any = None, axes: Any = None, reduce: Any = DEFAULT_REDUCE, matrix: Any = None,
              program: str | None = None, bytes: Any = None, algo: str = DEFAULT_SETTINGS.algo, proto: str = DEFAULT_SETTINGS.proto,  # noqa: A002
              workers: Any = None, logs: Any = (), tolerance: Any = TOLERANCE, model: Any = None, train: Any = None,
              compute_per_layer: Any = None) -> CheckRequest:
        """``model`` (with ``train``, ``compute_per_layer``): one command per distinct collective of its step
        under the best placement plan --model finds (or ``matrix``); ``reduce``, ``bytes`` and ``program``
        are the step's to decide, refused beside it."""
        if model is not None:
            for name, value, unset in (("reduce", reduce, DEFAULT_REDUCE), ("bytes", bytes, None), ("program", program, None)):
                if value is not None and str(value) != str(unset):
                    raise InputError(f"{name}: with --model the step's collectives say what is reduced and with "
                                     f"what buffer; leave --{name} out (or check without --model)")
        else:
            no_model_options(train, compute_per_layer)
        job = Job.build(system, nodes, axes)
        if model is None:
            demand = Demand.of_reduce(reduce, bytes, job.axis_names, job.topology)
            reduces_something(job.axes, demand.reduce_axes)  # in range and more than one device, before any work
        else:  # the model and its settings checked against the axes, and what plan --model is given with it
            demand = Demand.of_model(model, train, compute_per_layer, job.axis_names, job.axes)
            Settings.of(algo, proto)
            RunOptions.of(workers)
        tol = positive_float(as_text(tolerance, "tolerance"), "tolerance")
        if tol < 1:
            raise InputError(f"tolerance: {tol:g} is a factor: 1 or more (1.25: within 25% either way)")
        logs = (logs,) if isinstance(logs, (str, Path)) else tuple(str(x) for x in logs or ())
        if program is not None and matrix is None:
            raise InputError("program: a program needs its placement; give --matrix too")
        mat = None
        if matrix is not None:  # checked against the job's hierarchy and axes before any work
            mat = parse_matrix(matrix) if isinstance(matrix, str) else tuple(tuple(r) for r in matrix)
            Placement.of(job.hierarchy, job.axes, mat)
        if program is not None:
            parse_program(program)
        return cls(job, demand, mat, program, SimSettings(algo, proto), workers, logs, tol)

    def plan_request(self) -> PlanRequest:
        """plan --model's request for the model's step (its best placement is the one checked, unless
        ``matrix``): the job, the demand, the algorithm and protocol, the workers."""
        return PlanRequest.of(self.job, self.demand, Settings.of(self.settings.algo, self.settings.proto),
                              run=RunOptions.of(self.workers))


@dataclass(frozen=True, repr=False)
class CheckResult(Tabular):
    """The steps' commands and predictions, and the logs' verdicts.

    ``table()``: the verdicts (as the JSON's ``rows``) when logs were given, else the steps.
    """

    request: CheckRequest
    matrix: Matrix
    program: str
    placement: str
    seconds: float
    steps: tuple[CheckStep, ...]
    rows: tuple[Verdict, ...] = ()
    warnings: tuple[str, ...] = ()

    def summary(self) -> str:
        topo = self.request.job.topology
        judged = f"; {len(self.rows)} log rows judged" if self.rows else ""
        return (f"check on {topo.spec.name} ({topo.node_count} nodes): {format_matrix(self.matrix)} {self.program} "
                f"in {format_seconds(self.seconds)}, {len(self.steps)} steps{judged}")

    def to_json(self) -> dict[str, Any]:
        topo = self.request.job.topology
        return {"system": topo.spec.name, "nodes": topo.node_count, "gpus_per_node": topo.gpus_per_node,
                "matrix": [list(r) for r in self.matrix], "placement": self.placement, "program": self.program,
                "seconds": self.seconds, "steps": [s.to_json() for s in self.steps],
                "tolerance": self.request.tolerance, "rows": [v.to_json() for v in self.rows],
                "warnings": list(self.warnings)}

    def table(self) -> list[dict[str, Any]]:
        if self.request.logs:
            return [v.to_json() for v in self.rows]
        return [s.to_json() for s in self.steps]


def _chosen(req: CheckRequest) -> tuple[Matrix, str]:
    if req.program is not None:
        return req.matrix, req.program
    job = req.job
    best = run_rank(RankRequest.build(system=job.spec, nodes=job.topology.node_count,
                                      axes=dict(zip(job.axis_names, job.axes)),
                                      reduce=[job.axis_names[a] for a in req.demand.reduce_axes],
                                      matrix=None if req.matrix is None else format_matrix(req.matrix),
                                      bytes=req.demand.bytes_per_gpu, top=1, algo=req.settings.algo,
                                      proto=req.settings.proto, workers=req.workers)).best
    return best.matrix, best.timing.text


def _run_step(req: CheckRequest) -> CheckResult:
    """check --model: the step's distinct collectives under the chosen placement, each with its count."""
    plan = req.plan_request()
    matrix = best_matrix(plan) if req.matrix is None else req.matrix
    steps = step_checks(plan, matrix, req.settings)
    rows, warnings = _judge(req)
    job = req.job
    placement = describe_placement(matrix, job.axis_names, job.topology.level_names, job.spec.node_level)
    # every AllReduce as NCCL's own, as nccl-tests measures it: plan --model's "AllReduce only", not its step time
    # (each reduction by its best program), so that the two answers say why they differ
    what = (f"the step of {req.demand.workload.model.name} ({len(steps)} distinct collectives, count x time summed; "
            "each AllReduce as NCCL's plain AllReduce: plan's 'AllReduce only')")
    return CheckResult(req, matrix, what, placement, sum(s.seconds * (s.count or 1) for s in steps), steps, rows,
                       warnings + _unmatched(rows, list(steps)))


def run_check(req: CheckRequest) -> CheckResult:
    if req.demand.whole_step:
        return _run_step(req)
    job, topo = req.job, req.job.topology
    matrix, program = _chosen(req)
    sim_req = SimulateRequest.build(system=job.spec, nodes=topo.node_count, axes=dict(zip(job.axis_names, job.axes)),
                                    reduce=[job.axis_names[a] for a in req.demand.reduce_axes],
                                    matrix=format_matrix(matrix), program=program, algo=req.settings.algo,
                                    proto=req.settings.proto, bytes=req.demand.bytes_per_gpu)
    result = run_simulate(sim_req)
    _, prog, timing = result.rows[0]
    sim = Simulator(topo, req.settings)
    steps = []
    for i, (ins, low, st) in enumerate(zip(prog.instructions, result.lowered[0], timing.steps), 1):
        if not low.groups:
            continue
        size = max(_FLOAT * len(low.groups[0]), int(st.buffer_bytes) // (_FLOAT * len(low.groups[0]))
                   * _FLOAT * len(low.groups[0]))
        seconds = sim.step(low, (float(size),) * len(low.groups)).seconds
        bound = sim.binding(low, (float(size),) * len(low.groups))
        command, split, note = nccl_command(topo, low.groups, ins.op.value, size, i)
        busbw = size / seconds * bus_factor(ins.op.value, len(low.groups[0]))
        steps.append(CheckStep(i, ins.text, ins.op.value, len(low.groups), len(low.groups[0]), st.nodes_spanned, size,
                               split, command, seconds, busbw, bound, note))
    rows, warnings = _judge(req)
    return CheckResult(req, matrix, program, result.placement(matrix), timing.total_seconds, tuple(steps), rows,
                       tuple(result.warnings) + warnings + _unmatched(rows, steps))


def _unmatched(rows: tuple[Verdict, ...], steps: list[CheckStep]) -> tuple[str, ...]:
    """One warning per log and communicator shape that is none of the steps: its verdict is right
    for that communicator, but says nothing about the placement's program.

    A row is a step's when its collective, communicator size and nodes spanned are the step's
    (how many communicators ran at once may differ: a step measured one group alone still is it).
    """
    shapes = {(s.collective, s.group_size, s.nodes_spanned) for s in steps}
    seen: set[tuple] = set()
    out = []
    for v in sorted(rows, key=lambda v: (v.prediction.row.source, v.prediction.row.line)):
        r = v.prediction.row
        key = (r.source, r.collective, r.nodes, r.gpus_per_node)
        if (r.collective, r.ranks, r.nodes) in shapes or key in seen:
            continue
        seen.add(key)
        node = "node" if r.nodes == 1 else "nodes"
        ran = f"; {r.groups} at once" if r.groups > 1 else ""
        known = ", ".join(f"step {s.index} {s.collective} on {s.group_size} ranks of {s.nodes_spanned} "
                          f"node{'s' if s.nodes_spanned > 1 else ''}" for s in steps)
        out.append(f"{r.source}:{r.line}: {r.collective} on {r.ranks} ranks ({r.nodes} {node} x {r.gpus_per_node} "
                   f"GPUs{ran}) is none of the program's steps ({known}): its verdicts judge that communicator, "
                   "not the placement")
    return tuple(out)


def _judge(req: CheckRequest) -> tuple[tuple[Verdict, ...], tuple[str, ...]]:
    """The logs' rows, predicted on the request's system as ``validate`` predicts them, and judged."""
    if not req.logs:
        return (), ()
    spec = req.job.spec
    # the logs' rows name their system as find_spec finds it again: a catalogue's by name, a file by its path
    system = system_ref(spec)
    data = load_inputs(list(req.logs), system=spec)
    if data.programs:
        raise InputError(f"logs: {data.programs[0].source} holds program measurements; check reads nccl-tests logs "
                         "(text or -J JSON); score programs with p2sim validate")
    if not data.collectives:
        raise InputError(f"logs: no nccl-tests rows in {', '.join(req.logs)}")
    rows = [r for r in data.collectives]
    specs = {system: spec}
    warns = tuple(emulated_warnings(rows))
    return tuple(verdicts(predict_collectives(rows, specs), req.tolerance)), warns
