"""The configuration search's answer, as ``p2sim plan --model`` (no ``--axes``) prints it.

One line of what was searched and cut, a table of the top configurations with the step by part, then why
each loses to the best, and the configuration ``--compare`` named beside the pick.
"""

from __future__ import annotations

from ..studies.config_search import Ranked, SearchResult, loses_because
from ..util.units import format_seconds

__all__ = ["search_text"]

_PARTS = ("compute", "bubble", "exposed tensor", "exposed context", "exposed expert", "exposed pipeline",
          "exposed data", "optimizer")


def _row(place: str, r: Ranked) -> list[str]:
    parts = r.parts()
    offload = r.step.training.get("offload", 0)
    memory = r.recompute + (f", offload {offload}" if offload else "")  # activations in host memory (layers)
    return ([place, r.configuration.label, memory, r.order, format_seconds(r.step_seconds),
             f"{r.step.tokens_per_s_per_gpu:,.0f}", f"{r.step.mfu * 100:.1f}", f"{r.step.memory_gib_per_gpu:.1f}"]
            + [format_seconds(parts[p]) for p in _PARTS])


def _table(rows: list[list[str]]) -> list[str]:
    head = ["#", "configuration", "recompute", "rank order", "step", "tok/s/GPU", "MFU %", "GiB", "compute", "bubble",
            "tensor", "context", "expert", "pipeline", "data", "optimizer"]
    widths = [max(len(x[i]) for x in [head] + rows) for i in range(len(head))]
    fmt = lambda cells: "  ".join(c.ljust(w) if i in (1, 2, 3) else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [fmt(head)] + [fmt(r) for r in rows]


def search_text(result: SearchResult) -> str:
    """The search's answer: what was searched and cut, the top configurations by part, why each loses."""
    t = result.training
    lines = [f"{result.model} on {result.gpus:,} GPUs of {result.system}: seq {t['seq_length']}, global batch "
             f"{t['global_batch']}, {t['dtype']}, {t['data_parallel']}; recompute {'/'.join(t['recompute'])}"
             + (" (activation offloading before recompute where it hides)" if "none" in t["recompute"] else "")
             + (", tensor-parallel overlap" if t.get("tp_overlap") else "")
             + (f", dispatcher {t['dispatcher']}" if t.get("dispatcher", "alltoall") != "alltoall" else ""),
             f"{result.considered:,} configurations: {result.cut_memory:,} do not fit the memory, "
             f"{result.cut_recompute:,} fit with a lighter recompute, {result.cut_bound:,} cut by their lower bound "
             f"(compute + bubble + optimizer above the top {len(result.ranked)}), {result.finished:,} simulated",
             ""]
    rows = [_row(str(i + 1), r) for i, r in enumerate(result.ranked)]
    if result.compared is not None:
        place = "-" if result.compared_place is None else f"{result.compared_place}"
        rows.append(_row(f"({place})", result.compared))
    lines += _table(rows)
    lines += ["", "step by part: compute of the slowest stage, pipeline bubble, exposed communication by axis, "
              "optimizer (they sum to the step); rank order: the faster of Megatron-LM's default tp-cp-ep-dp-pp "
              "and tp-cp-ep-pp-dp (Meta's Llama 3 order: data outermost)", ""]
    best = result.best
    lines.append(f"best: {best.label}")
    for i, r in enumerate(result.ranked[1:], start=2):
        lines.append(f"{i}: {loses_because(r, best)}")
    if result.compared is not None:
        c = result.compared
        where = ("below every configuration simulated" if result.compared_place is None else
                 f"at best {result.compared_place}{_suffix(result.compared_place)} (of {result.finished} simulated)")
        lines.append(f"compared: {c.label}: {format_seconds(c.step_seconds)}, {where}; "
                     f"{loses_because(c, best)}")
    if result.tightest_unfit:
        lines.append(f"nearest to fitting of those cut by memory: {result.tightest_unfit}")
    return "\n".join(lines)


def _suffix(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
