"""One training configuration's step: its time by part, its throughput, its memory (``p2sim step``).

The compute of each pipeline stage per micro-batch is its operations' times (:mod:`p2sim.workload.compute`
timed by :mod:`p2sim.workload.op_time` with the GPU's data-sheet peaks); every collective of the step
(:func:`p2sim.workload.step_collectives`) is simulated once on the system under Megatron-LM's default rank
order (tensor innermost, then context, expert, data, pipeline: :func:`p2sim.formalism.mesh.megatron_matrix`),
as ``plan --model`` simulates its parts (:func:`p2sim.studies.step_plan.simulate_parts`); then the overlap
as the frameworks run it:

* **tensor** (sequence parallelism's AllGather/ReduceScatter, or the AllReduces) and **expert** (the
  AllToAll dispatch and combine) are exposed: each layer waits for them (Megatron-LM without
  ``--tp-comm-overlap``; no MoE overlap scheme);
* **context**: the ring exchange of K and V runs under the attention of the chunk before
  (Megatron-Core's context parallelism): exposed where it is longer than the stage's attention;
* **pipeline**: each send and receive is on the critical path -- every micro-batch's under 1F1B, the fill
  and drain's ``2 (p - 1)`` with the interleaved schedule's overlapped exchanges (Megatron-LM's
  ``overlap_p2p_comm``);
* **data**: the distributed optimizer's gradient ReduceScatter overlaps the last micro-batch's backward
  and the parameter AllGather the first micro-batch's forward (``--overlap-grad-reduce``,
  ``--overlap-param-gather``), all but the last bucket (Megatron-Core's bucket of ``max(40M, 1M x dp)``
  parameters); FSDP's per-layer gathers and scatters are prefetched under the layers' compute, exposed
  where the step's are longer than its compute.

Step = ``pipeline(stage times) + exposed pipeline + exposed data + optimizer``, with
:func:`p2sim.workload.schedule.pipeline_seconds`; the memory per GPU is :mod:`p2sim.workload.memory`'s, and a
configuration that does not fit the GPU is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..util.errors import InputError
from ..workload import load_model, step_collectives
from ..workload.compute import BACKWARD_ATTENTION, BACKWARD_MATMUL, head_ops, layer_kinds, layer_ops, model_flops
from ..workload.memory import GIB, MemoryUse, check_fits, memory_per_gpu, offloaded_bytes
from ..workload.op_time import DEFAULT, EfficiencyParams, OpTimer
from ..workload.schedule import bubble_seconds, chunk_layers
from ..workload.step import StepCollective
from ..workload.training import AXES, TrainingSpec, fit
# --train's step settings (FP8, recompute, tensor-parallel overlap) live with --train's text; kept here by name
from ..workload.recompute import check_recompute, recomputed_op_names
from ..workload.train_text import RECOMPUTE, StepSettings, step_settings
from .step_comm import contention, default_placement_rows, order_rows, simulate
from .step_job import StepJob, job_hierarchy, step_job
from .step_contention import SHARDED, axis_of, window_of, windows
from .step_workload import training_for

__all__ = ["StepSettings", "StepResult", "StepJob", "PreparedStep", "run_step", "step_job", "prepare_step", "finish_step",
           "step_settings", "job_hierarchy", "RECOMPUTE", "default_placement_rows", "order_rows"]

COMM_AXES = ("tensor", "context", "expert", "pipeline", "data")


@dataclass(frozen=True)
class StepResult:
    """One configuration's step: time by part, throughput, memory, and what it was computed from."""

    model: str
    system: str
    gpus: int
    axes: dict[str, int]
    micro_batches: int
    step_seconds: float
    compute_seconds: float
    bubble_seconds: float
    optimizer_seconds: float
    exposed_comm_seconds: dict[str, float]
    comm_seconds: dict[str, float]  # every collective's time by axis, count x one call, before overlap
    tokens_per_s_per_gpu: float
    model_tflops_per_gpu: float
    mfu: float
    peak_tflops: float
    memory: MemoryUse
    memory_capacity_gib: float | None
    training: dict[str, Any] = field(default_factory=dict)
    # what the exposed communication grew by where axes ran at the same time on shared links (step_contention)
    contention_seconds: dict[str, float] = field(default_factory=dict)
    contended: bool = True  # False: above finish_step's contention_limit, the contention not simulated
    offload_seconds: float = 0.0  # of the compute: the step's wait for offloaded activations (their copies' excess)

    @property
    def memory_gib_per_gpu(self) -> float:
        return self.memory.total / GIB

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "system": self.system, "gpus": self.gpus, "axes": dict(self.axes),
                "training": dict(self.training), "micro_batches": self.micro_batches,
                "step_seconds": self.step_seconds, "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
                "model_tflops_per_gpu": self.model_tflops_per_gpu, "mfu": self.mfu, "peak_tflops": self.peak_tflops,
                "memory_gib_per_gpu": self.memory_gib_per_gpu,
                "memory_gib_by_part": {k: v / GIB for k, v in self.memory.parts().items()},
                "memory_capacity_gib": self.memory_capacity_gib,
                "compute_seconds": self.compute_seconds, "bubble_seconds": self.bubble_seconds,
                "optimizer_seconds": self.optimizer_seconds,
                "exposed_comm_seconds": dict(self.exposed_comm_seconds), "comm_seconds": dict(self.comm_seconds),
                "contention_seconds": dict(self.contention_seconds), "offload_seconds": self.offload_seconds}


def _layer_seconds(timer: OpTimer, ops, fp8: bool, recompute: str, model: Any) -> tuple[float, float, float, float]:
    """(forward, backward with recompute, attention forward + backward, matrix multiplies forward + backward)
    of one layer's operations."""
    fwd = sum(timer.seconds(op, fp8) for op in ops)
    bwd = 0.0
    attention = 0.0
    matmul = sum(timer.seconds(op, fp8) for op in ops if op.kind == "matmul")
    for op in ops:
        if op.kind == "attention":
            b = timer.seconds(op, fp8, BACKWARD_ATTENTION, 2.0)
            attention += timer.seconds(op, fp8) + b
        elif op.kind == "matmul":
            b = timer.seconds(op, fp8, BACKWARD_MATMUL, BACKWARD_MATMUL)
            matmul += b
        elif op.backward:
            b = timer.seconds(op, fp8, 1.0, 2.0)  # a gradient kernel reads the forward's input and the gradient
        else:
            b = 0.0  # no gradient (the MoE dispatcher's token counts)
        bwd += b
    # host-bound: a layer's time is at least its kernels' dispatch (forward's, and the backward's twice as many
    # for the operations with a gradient)
    host = timer.params.host * sum(timer.kernels(op, fp8) for op in ops)
    host_bwd = 2 * timer.params.host * sum(timer.kernels(op, fp8) for op in ops if op.backward)
    fwd = max(fwd, host)
    bwd = max(bwd, host_bwd)
    if recompute == "full":
        bwd += fwd
    elif recompute != "none":  # the selective modules' operations run again (recompute.py)
        again = recomputed_op_names(recompute, model, "moe" if any(op.name == "experts up" for op in ops) else "dense")
        bwd += sum(timer.seconds(op, fp8) for op in ops if op.name in again)
    return fwd, bwd, attention, matmul


def _least_offload(memory: Any, layers: int, capacity_gib: float | None) -> int:
    """The fewest layers whose activations go to host memory for the step to fit (0 if it fits as it is; the most
    Megatron-Core allows, ``layers - 1``, if nothing fits: the memory check then says by how much)."""
    if capacity_gib is None or memory(0).total <= capacity_gib * GIB:
        return 0
    return next((n for n in range(1, layers) if memory(n).total <= capacity_gib * GIB), layers - 1)


def _offload_exposed(job: StepJob, model: Any, offload: int, tokens: int, tensor: int, sp: bool, expert: int,
                     fp8: bool, layers: Sequence[tuple[float, float, float, float]]) -> float:
    """Seconds a micro-batch waits for its offloaded activations: they go to host memory at the GPU's share of the
    host link (:func:`~p2sim.topology.host_memory.host_memory_rate`) while the forward runs on, and come back while
    the backward does (TransformerEngine's CPU offload copies on a side stream and prefetches the next layer's);
    only what outlasts the forward, or the backward, of the layers is exposed."""
    moved = offloaded_bytes(model, range(offload), tokens=tokens, tensor=tensor, sp=sp, expert=expert, fp8=fp8)
    copy = moved / job.host_rate
    forward, backward = sum(lf for lf, _, _, _ in layers), sum(lb for _, lb, _, _ in layers)
    return max(0.0, copy - forward) + max(0.0, copy - backward)


_axis_of = axis_of  # the axis a collective's time is charged to (step_contention's)


@dataclass(frozen=True)
class PreparedStep:
    """One configuration before its collectives are simulated: its memory, each stage's compute, and the
    step's least time (:attr:`bound`), which the collectives can only lengthen."""

    job: StepJob
    sizes: dict[str, int]
    training: TrainingSpec
    extra: StepSettings
    micro_batches: int
    memory: MemoryUse
    stage_compute: tuple[float, ...]
    stage_attention: tuple[float, ...]
    stage_matmul: tuple[float, ...]
    stage_layers: tuple[int, ...]
    optimizer: float
    offload_exposed: float = 0.0  # seconds a step waits for offloaded activations (in stage_compute already)

    @property
    def fits(self) -> bool:
        capacity = self.job.topo.spec.nccl.memory_gib
        return capacity is None or self.memory.total <= capacity * GIB

    @property
    def bound(self) -> float:
        """At most the step: ``m`` micro-batches of the slowest stage's compute, the bubble of the stages' compute
        and the optimizer.  Exposed communication only adds to a stage's time (and the bubble grows with every
        stage's: ``(sum - max) / v``), and pipeline and data exposure are added to the step, so the step
        :func:`finish_step` finds is never below it."""
        stages = self.stage_compute
        return self.micro_batches * max(stages) + bubble_seconds(stages, self.training.virtual_stages) + self.optimizer


def run_step(*, model: Any, system: Any, nodes: int | None = None, gpus: int | None = None,
             axes: Mapping[str, int], train: str | None = None, params: EfficiencyParams = DEFAULT,
             engine: str = "des", check_memory: bool = True) -> StepResult:
    """The step of ``model`` on ``gpus`` GPUs (or ``nodes`` nodes) of ``system``, configured by ``axes`` and ``train``.

    Raises
    ------
    InputError
        A model, system, axis or setting that does not fit, or a configuration that does not fit the
        GPU's memory: one line naming what and by how much.
    """
    spec_model = load_model(model)
    text, extra = step_settings(train)
    extra = extra.for_model(spec_model.name, spec_model.is_moe)
    training, _ = training_for(model, text)  # a preset's published sequence and batch where not given
    sizes = {a: 1 for a in AXES}
    for a, v in axes.items():
        if a not in AXES:
            raise InputError(f"axes: {a!r} is not an axis a training step uses (one of {', '.join(AXES)})")
        sizes[a] = v
    extra = extra.for_axes(sizes["tensor"], training.sequence_parallel)
    job = step_job(spec_model, system, nodes, gpus, params, engine)
    if math.prod(sizes.values()) != job.gpus:
        raise InputError(f"axes: {' x '.join(str(sizes[a]) for a in AXES)} = {math.prod(sizes.values())} GPUs, but the "
                         f"job has {job.gpus}")
    prepared = prepare_step(job, sizes, training, extra)
    if check_memory:
        check_fits(prepared.memory, job.topo.spec.nccl.memory_gib,
                   f"{spec_model.name} on {job.gpus} {job.topo.spec.nccl.gpu_model or 'GPUs'}")
    return finish_step(prepared)


def prepare_step(job: StepJob, sizes: Mapping[str, int], training: TrainingSpec, extra: StepSettings) -> PreparedStep:
    """A configuration's memory and compute per stage (checked by :func:`~p2sim.workload.training.fit`); one
    layer's times are kept in the job for every configuration with the same layer shape."""
    spec_model, timer = job.model, job.timer
    sizes = {a: sizes.get(a, 1) for a in AXES}
    f = fit(spec_model, training, sizes)
    t, c, p, d, e = (sizes[a] for a in AXES)
    v = training.virtual_stages
    m = f.micro_batches
    extra = extra.for_offload(p, spec_model.num_layers)
    check_recompute(spec_model, extra.recompute)

    def memory(offload: int) -> MemoryUse:
        return memory_per_gpu(spec_model, seq_length=training.seq_length, micro_batch=training.micro_batch,
                              micro_batches=m, tensor=t, context=c, pipeline=p, data=d, expert=e, virtual=v,
                              sp=training.sequence_parallel, recompute=extra.recompute,
                              data_parallel=training.data_parallel,
                              grad_bytes=training.grad_bytes, fp8=extra.fp8, offload=offload)

    if extra.offload == "auto":
        extra = replace(extra, offload=_least_offload(memory, spec_model.num_layers,
                                                      job.topo.spec.nccl.memory_gib))
    if extra.offload and job.host_rate <= 0:
        raise InputError(f"train: offload: {job.topo.spec.name} gives no path from a GPU to host memory "
                         "(a [node] CPU or memory the GPUs reach over PCIe or NVLink-C2C)")
    mem = memory(int(extra.offload))
    # ------------------------------------------------------------------ compute per stage, per micro-batch
    kinds = layer_kinds(spec_model)
    tokens = f.tokens
    common = dict(tokens=tokens, seq_length=training.seq_length, tensor=t, context=c, expert=e,
                  sequence_parallel=training.sequence_parallel, dtype_bytes=1.0 if extra.fp8 else 2.0,
                  fused_permute=extra.dispatcher != "alltoall")
    cache = job.layers
    shape = (tokens, training.seq_length, t, c, e, training.sequence_parallel, extra.fp8, extra.recompute,
             extra.dispatcher)

    def layer(i: int) -> tuple[float, float, float, float]:
        # GPT-OSS alternates sliding-window and full attention, sliding first (its layer_types)
        sliding = spec_model.sliding_window_layers > 0 and i % 2 == 0
        key = (kinds[i], sliding) + shape
        if key not in cache:
            cache[key] = _layer_seconds(timer, layer_ops(spec_model, kinds[i], sliding=sliding, **common),
                                        extra.fp8, extra.recompute, spec_model)
        return cache[key]

    sizes_c = chunk_layers(spec_model.num_layers, p, v)
    starts = [sum(sizes_c[:i]) for i in range(len(sizes_c))]
    head = sum(timer.seconds(op) * 3 for op in head_ops(spec_model, tokens=tokens, tensor=t))
    mtp = 0.0
    if spec_model.mtp_layers:
        lf, lb, _, _ = layer(spec_model.num_layers - 1)
        mtp = spec_model.mtp_layers * (lf + lb)
    stage_compute, stage_attention, stage_matmul, stage_layers = [], [], [], []
    for r in range(p):
        total = attention = matmuls = 0.0
        count = 0
        for j in range(v):
            ch = j * p + r
            for i in range(starts[ch], starts[ch] + sizes_c[ch]):
                lf, lb, la, lm = layer(i)
                total += lf + lb
                attention += la
                matmuls += lm
                count += 1
        if r == p - 1:
            total += head + mtp
        if extra.offload:  # p = 1: the one stage's copies to host memory and back, where they outlast compute
            exposed = _offload_exposed(job, spec_model, extra.offload, tokens, t, training.sequence_parallel, e,
                                       extra.fp8, [layer(i) for i in range(sizes_c[0])])
            total += exposed  # per micro-batch, as the stage's compute
        stage_compute.append(total)
        stage_attention.append(attention)
        stage_matmul.append(matmuls)
        stage_layers.append(count)
    # the optimizer: Adam over this GPU's shard of the parameters, memory-bound: FP32 master, momentum,
    # variance and gradient read, the three written back and the BF16 weight (30 bytes a parameter)
    optimizer = 30.0 * (mem.optimizer / 12.0) / (timer.hbm_tb_per_s * 1e12 * timer.params.memory)
    return PreparedStep(job, sizes, training, extra, m, mem, tuple(stage_compute), tuple(stage_attention),
                        tuple(stage_matmul), tuple(stage_layers), optimizer, m * exposed if extra.offload else 0.0)


def finish_step(prep: PreparedStep, matrix: Any = None, contention_limit: float = math.inf) -> StepResult:
    """The step of a prepared configuration: its collectives simulated (or found kept), their contention, the
    overlap, the step.

    ``matrix``: the placement as ``(row names, rows)`` (a plan's matrix with its axis names; columns the job's
    levels); None: Megatron-LM's default rank order.  ``contention_limit``: where the step without contention is
    above it, the contention is not simulated and that step is answered (``contended`` False): contention only
    lengthens a step, so a search that keeps steps at most the limit loses nothing by it."""
    job, training, sizes = prep.job, prep.training, prep.sizes
    collectives = step_collectives(job.model, training, sizes)
    seconds = (simulate(job.topo, job.hierarchy, job.used, job.per_node, sizes, collectives, job.engine, matrix)
               if collectives else {})
    alone = _assemble(prep, seconds, {})
    if not collectives or not windows(collectives, training.data_parallel, prep.micro_batches):
        return alone
    if alone.step_seconds > contention_limit:
        return replace(alone, contended=False)
    # the collectives that run at the same time as another axis's and share its links: slowed (1: not)
    slow = contention(job.topo, job.hierarchy, job.used, job.per_node, sizes, collectives, seconds,
                       training.data_parallel, prep.micro_batches, job.engine, matrix)
    return _assemble(prep, seconds, slow) if any(s > 1.0 for s in slow.values()) else alone


def _assemble(prep: PreparedStep, seconds: Mapping[StepCollective, float], slow: Mapping[StepCollective, float]
              ) -> StepResult:
    """The step from each collective's one-call time alone (``seconds``) and the slowdowns of those that run at
    the same time as another axis's (``slow``; absent: 1)."""
    job, training, extra, sizes = prep.job, prep.training, prep.extra, prep.sizes
    spec_model, topo, timer, gpus = job.model, job.topo, job.timer, job.gpus
    t, c, p, d, e = (sizes[a] for a in AXES)
    v, m, mem = training.virtual_stages, prep.micro_batches, prep.memory
    stage_compute, stage_attention = prep.stage_compute, prep.stage_attention
    stage_matmul, stage_layers = prep.stage_matmul, prep.stage_layers
    capacity = topo.spec.nccl.memory_gib
    # ------------------------------------------------------------------ communication
    comm = {a: 0.0 for a in COMM_AXES}
    for col, s in seconds.items():
        comm[_axis_of(col)] += s * col.count
    sharded = training.data_parallel in SHARDED
    fullest = max(stage_layers) or 1

    def per_mb(slowed: tuple[str, ...]) -> dict[str, float]:
        """The fullest stage's tensor, expert and context seconds per micro-batch, the collectives of the passes
        ``slowed`` at their contended times (none: as simulated alone, the same sums)."""
        by = {a: 0.0 for a in COMM_AXES}
        for col, s in seconds.items():
            by[_axis_of(col)] += s * col.count * (slow.get(col, 1.0) if window_of(col) in slowed else 1.0)
        return {a: by[a] / m for a in ("tensor", "expert", "context")}

    def stage_parts(mb: dict[str, float]) -> list[tuple[float, float, float, float]]:
        """Each stage's (compute, exposed tensor, expert, context) of one micro-batch."""
        out = []
        for r in range(p):
            share = stage_layers[r] / fullest
            tp, ep = mb["tensor"] * share, mb["expert"] * share
            if extra.tp_overlap:
                # userbuffers split each AllGather/ReduceScatter into chunks pipelined with its GEMM: exposed where
                # the layer's communication outlasts its matrix multiplies
                tp = max(0.0, tp - stage_matmul[r])
            cp = max(0.0, mb["context"] * share - stage_attention[r])
            out.append((stage_compute[r], tp, ep, cp))
        return out

    # FSDP's gathers and scatters run under every micro-batch: each is contended; the distributed optimizer's
    # reduction and gather under one micro-batch's backward and forward: that one is, below
    parts_of = stage_parts(per_mb(("forward", "backward") if sharded else ()))
    stage_total = [sum(x) for x in parts_of]
    slowest = max(range(p), key=lambda r: stage_total[r])
    bubble = bubble_seconds(stage_total, v)
    exposed = {"tensor": m * parts_of[slowest][1], "expert": m * parts_of[slowest][2],
               "context": m * parts_of[slowest][3], "pipeline": 0.0, "data": 0.0}
    contention = {a: 0.0 for a in COMM_AXES}
    if not sharded:
        for phase in ("forward", "backward"):
            if any(s > 1.0 and window_of(col) == phase for col, s in slow.items()):
                hit = stage_parts(per_mb((phase,)))[slowest]
                for i, a in ((1, "tensor"), (2, "expert"), (3, "context")):
                    contention[a] += hit[i] - parts_of[slowest][i]
    sends = [(col, s) for col, s in seconds.items() if col.op == "SendRecv" and col.axes == ("pipeline",)]
    if p > 1 and sends:
        t_send = max(s * (slow.get(col, 1.0) if sharded else 1.0) for col, s in sends)
        exposed["pipeline"] = t_send * (2 * (p - 1) + (2 * m if v == 1 else 0))
        if not sharded:  # the contended micro-batch's one exposed send each way
            contention["pipeline"] = sum(s * (slow.get(col, 1.0) - 1.0) for col, s in sends)
    # data: overlapped with the last micro-batch's backward (gradients) and the first one's forward (parameters)
    stage_params = (mem.weights / 2.0) if not sharded else None
    dp_size = d * c * e
    bucket = max(40e6, 1e6 * dp_size)
    local = stage_params if stage_params is not None else mem.optimizer / 12.0 * dp_size
    buckets = max(1, math.ceil(local / bucket))
    grads = sum(s * col.count * slow.get(col, 1.0) for col, s in seconds.items()
                if _axis_of(col) == "data" and col.phase == "backward")
    gathers = sum(s * col.count * slow.get(col, 1.0) for col, s in seconds.items()
                  if _axis_of(col) == "data" and col.phase in ("optimizer", "forward"))
    other = sum(s * col.count for col, s in seconds.items()
                if _axis_of(col) == "pipeline" and col.op == "AllReduce")
    one_mb = stage_compute[slowest]
    if sharded:
        whole = grads + gathers
        exposed["data"] = max(whole / max(1, fullest), whole - m * one_mb)
    else:
        backward = one_mb * 2 / 3
        forward = one_mb / 3
        exposed["data"] = (max(grads / buckets, grads - backward) if grads else 0.0) + \
                          (max(gathers / buckets, gathers - forward) if gathers else 0.0)
    for a, extra_s in contention.items():
        exposed[a] += extra_s
    exposed["pipeline"] += other
    if sharded and slow:
        # every micro-batch contended: the stage times (so the exposure above) hold it already; what it added,
        # said beside it (the slowest stage's m micro-batches, and every pipeline send)
        alone = stage_parts(per_mb(()))[slowest]
        for i, a in ((1, "tensor"), (2, "expert"), (3, "context")):
            contention[a] = max(0.0, m * (parts_of[slowest][i] - alone[i]))
        if p > 1 and sends:
            contention["pipeline"] = max(0.0, (t_send - max(s for _, s in sends)) * (2 * (p - 1) + (2 * m if v == 1 else 0)))
    optimizer = prep.optimizer
    compute = m * parts_of[slowest][0]
    step = compute + bubble + sum(exposed.values()) + optimizer
    tokens_step = training.seq_length * m * training.micro_batch * d * e
    flops = model_flops(spec_model, training.seq_length, m * training.micro_batch * d * e)
    tflops = flops / step / gpus / 1e12
    peak = timer.fp8_tflops if extra.fp8 and timer.fp8_tflops else timer.bf16_tflops
    settings = {"seq_length": training.seq_length, "micro_batch": training.micro_batch,
                "global_batch": m * training.micro_batch * d * e, "dtype": "fp8" if extra.fp8 else training.param_dtype,
                "grad_dtype": training.grad_dtype, "sequence_parallel": training.sequence_parallel,
                "virtual_stages": v, "recompute": extra.recompute, "data_parallel": training.data_parallel,
                "tp_overlap": extra.tp_overlap, "dispatcher": extra.dispatcher, "offload": extra.offload}
    return StepResult(spec_model.name, topo.spec.name, gpus, {a: sizes[a] for a in AXES}, m, step, compute, bubble,
                      optimizer, exposed, comm, tokens_step / step / gpus, tflops, tflops / peak, peak, mem, capacity,
                      settings, contention, offload_seconds=prep.offload_exposed)
