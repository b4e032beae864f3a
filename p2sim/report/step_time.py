"""``p2sim step``'s answer as text: the step's time, throughput and memory, and the step by part."""

from __future__ import annotations

from ..studies.step_time import StepResult
from ..util.units import format_seconds

__all__ = ["step_text"]


def step_text(r: StepResult) -> str:
    """The answer: one configuration's step, its throughput and memory, then the step by part and by axis."""
    axes = ",".join(f"{a}={n}" for a, n in r.axes.items() if n > 1) or "one GPU"
    t = r.training
    lines = [f"{r.model} on {r.gpus} GPUs of {r.system}: {axes}",
             f"  seq {t['seq_length']}, micro-batch {t['micro_batch']}, global batch {t['global_batch']} "
             f"({r.micro_batches} micro-batches per data rank), {t['dtype']}, sp {'on' if t['sequence_parallel'] else 'off'}, "
             f"vp {t['virtual_stages']}, recompute {t['recompute']}, {t['data_parallel']}"
             + (", tp overlap" if t.get("tp_overlap") else "")
             + (f", dispatcher {t['dispatcher']}" if t.get("dispatcher", "alltoall") != "alltoall" else "")
             + (f", {t['offload']} layers' activations offloaded to host memory"
                + (f" ({format_seconds(r.offload_seconds)} of the compute waits for them)" if r.offload_seconds else "")
                if t.get("offload") else ""),
             "",
             f"step                 {format_seconds(r.step_seconds)}",
             f"tokens/s per GPU     {r.tokens_per_s_per_gpu:,.0f}",
             f"model TFLOP/s / GPU  {r.model_tflops_per_gpu:,.0f}  (MFU {100 * r.mfu:.1f} % of {r.peak_tflops:,.0f} dense)",
             f"memory per GPU       {r.memory_gib_per_gpu:.1f} GiB"
             + (f" of {r.memory_capacity_gib:.1f}" if r.memory_capacity_gib else "")
             + "  (" + ", ".join(f"{k} {v / 2**30:.1f}" for k, v in r.memory.parts().items() if v) + ")",
             "",
             "the step by part      seconds   share"]
    rows = [("compute", r.compute_seconds), ("pipeline bubble", r.bubble_seconds)]
    rows += [(f"exposed {a}", s) for a, s in r.exposed_comm_seconds.items() if s > 0]
    rows += [("optimizer", r.optimizer_seconds)]
    for name, s in rows:
        lines.append(f"  {name:18} {s:9.3f}  {100 * s / r.step_seconds:5.1f} %")
    hidden = {a: r.comm_seconds[a] for a in r.comm_seconds if r.comm_seconds[a] > 0}
    if hidden:
        lines += ["", "communication by axis (simulated, Megatron-LM's rank order): "
                  + ", ".join(f"{a} {format_seconds(s)}{_contention(r, a)} "
                              f"({format_seconds(r.exposed_comm_seconds.get(a, 0.0))} exposed)"
                              for a, s in hidden.items())]
    return "\n".join(lines)


def _contention(r: StepResult, axis: str) -> str:
    """`` + 6.7 ms contention`` where the axis shares links with another's traffic at the same time (an exposed
    time can then exceed the axis's time alone)."""
    extra = r.contention_seconds.get(axis, 0.0)
    return f" + {format_seconds(extra)} contention" if extra > 0 else ""
