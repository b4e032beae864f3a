"""Rendering of the device-order comparison of ``p2sim rank --compare-orders``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..analysis.orders import OrderComparison
from ..placement import format_matrix

__all__ = ["comparison_text", "comparison_json", "comparison_markdown"]

TITLE = "device orders: best program per matrix under each order (gain = p2 best / aligned best)"


def comparison_text(rows: Sequence[OrderComparison]) -> str:
    lines = [TITLE]
    for c in rows:
        ar = c.aligned.allreduce.seconds
        head = f"  {format_matrix(c.matrix):<22} {c.algo:<4} AllReduce {ar:10.4f} s"
        if c.same_groups:
            lines.append(f"{head}  same groups under both orders: best {c.aligned.best.seconds:10.4f} s "
                         f"({ar / c.aligned.best.seconds:.2f}x)  {c.aligned.best.text}")
            continue
        lines.append(f"{head}  aligned {c.aligned.best.seconds:10.4f} s ({ar / c.aligned.best.seconds:.2f}x)  "
                     f"p2 {c.p2.best.seconds:10.4f} s ({c.p2.allreduce.seconds / c.p2.best.seconds:.2f}x)  "
                     f"gain {c.gain:.2f}x")
        lines.append(f"{'':6}aligned: {c.aligned.best.text}")
        lines.append(f"{'':6}p2:      {c.p2.best.text}")
    return "\n".join(lines)


def comparison_json(rows: Sequence[OrderComparison]) -> list[dict[str, Any]]:
    return [c.to_json() for c in rows]


def comparison_markdown(rows: Sequence[OrderComparison]) -> list[str]:
    md = ["## Device orders", "", TITLE[len("device orders: "):].capitalize() + ".", "",
          "| matrix | algo | AllReduce s | aligned best s | aligned best program | p2 best s | p2 best program "
          "| gain |",
          "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in rows:
        p2 = "same groups" if c.same_groups else f"`{c.p2.best.text}`"
        md.append(f"| `{format_matrix(c.matrix)}` | {c.algo} | {c.aligned.allreduce.seconds:.4f} | "
                  f"{c.aligned.best.seconds:.4f} | `{c.aligned.best.text}` | {c.p2.best.seconds:.4f} | {p2} | "
                  f"{c.gain:.2f}x |")
    return md + [""]
