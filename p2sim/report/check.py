"""``p2sim check`` as text: the nccl-tests command of each step with its prediction, then each log row's verdict."""

from __future__ import annotations

from ..measurements.check import CheckResult
from ..util.units import format_bytes, format_seconds

__all__ = ["check_text"]


def check_text(result: CheckResult) -> str:
    req = result.request
    topo = req.job.topology
    lines = [f"{topo.spec.name}, {topo.node_count} nodes x {topo.gpus_per_node} GPUs; placement {result.placement}",
             f"program {result.program}: {format_seconds(result.seconds)} predicted",
             "",
             "nccl-tests commands that measure each step (from nccl-tests' directory; one GPU per process):"]
    if req.demand.whole_step:  # a model's step: one command per distinct collective, how often a step runs it
        lines[1:] = [f"{result.program}: {format_seconds(result.seconds)} predicted", "",
                     "nccl-tests commands that measure each distinct collective of the step (from nccl-tests' "
                     "directory; one GPU per process):"]
    for s in result.steps:
        where = f"{s.groups} groups of {s.group_size}" if s.groups > 1 else f"one group of {s.group_size}"
        span = "inside a node" if s.nodes_spanned == 1 else f"across {s.nodes_spanned} nodes"
        count = "" if s.count is None else f", {s.count} a step"
        lines += [f"# step {s.index} {s.instruction}: {s.collective}, {where} {span}, {format_bytes(s.size)} each"
                  + (" (at once)" if s.split else "") + count,
                  s.command,
                  f"#   predicted {format_seconds(s.seconds)}, busbw {s.busbw / 1e9:.2f} GB/s; bound by {s.bound.text}"]
        if s.note:
            lines.append(f"#   note: {s.note}")
    if result.rows:
        lines += ["", f"verdicts (as predicted: measured busbw within {req.tolerance:g}x of the prediction):",
                  f"{'source':<34} {'place':<5} {'collective':<13} {'size':>10} {'groups':>6} {'measured':>10} "
                  f"{'predicted':>10}  verdict"]
        for v in result.rows:
            p, r = v.prediction, v.prediction.row
            src = f"{r.source.rsplit('/', 1)[-1]}:{r.line}"
            # nccl-tests times each size out of place and in place: one row each, from one log line
            place = "in" if r.in_place else "out"
            lines.append(f"{src:<34} {place:<5} {r.collective:<13} {format_bytes(r.size_bytes):>10} {r.groups:>6} "
                         f"{r.busbw / 1e9:>7.2f} GB/s {p.busbw(p.seconds) / 1e9:>7.2f} GB/s  {v.text}")
        counts = {k: sum(1 for v in result.rows if v.verdict == k) for k in ("as predicted", "slower", "faster")}
        lines.append(f"{len(result.rows)} rows: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    lines += [f"WARNING {w}" for w in result.warnings]
    return "\n".join(lines)
