"""Rendering of the device-order comparison of ``p2sim rank --compare-orders``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..studies.orders import OrderComparison
from ..formalism.placement import format_matrix
from ..util.units import format_seconds
from .tables import Column, Table

__all__ = ["comparison_text", "comparison_json", "comparison_table"]

TITLE = "device orders: best program per matrix under each order (gain = p2 best / aligned best)"


def comparison_text(rows: Sequence[OrderComparison]) -> str:
    lines = [TITLE]
    for c in rows:
        ar = c.aligned.allreduce.seconds
        head = f"  {format_matrix(c.matrix):<22} {c.algo:<4} AllReduce {format_seconds(ar):>10}"
        if c.same_groups:
            lines.append(f"{head}  same groups under both orders: best {format_seconds(c.aligned.best.seconds):>10} "
                         f"({ar / c.aligned.best.seconds:.2f}x)  {c.aligned.best.text}")
            continue
        lines.append(f"{head}  aligned {format_seconds(c.aligned.best.seconds):>10} "
                     f"({ar / c.aligned.best.seconds:.2f}x)  p2 {format_seconds(c.p2.best.seconds):>10} "
                     f"({c.p2.allreduce.seconds / c.p2.best.seconds:.2f}x)  gain {c.gain:.2f}x")
        lines.append(f"{'':6}aligned: {c.aligned.best.text}")
        lines.append(f"{'':6}p2:      {c.p2.best.text}")
    return "\n".join(lines)


def comparison_json(rows: Sequence[OrderComparison]) -> list[dict[str, Any]]:
    return [c.to_json() for c in rows]


def comparison_table(rows: Sequence[OrderComparison]) -> Table:
    """The comparison as a report table (Markdown and HTML)."""
    cols = (
        Column("matrix", "the parallelism matrix", lambda c: format_matrix(c.matrix), code=True, wrap=False),
        Column("algo", "the NCCL algorithm setting", lambda c: c.algo),
        Column("AllReduce", "the matrix's single AllReduce, aligned order",
               lambda c: format_seconds(c.aligned.allreduce.seconds), numeric=True),
        Column("aligned best", "fastest program under the aligned order",
               lambda c: format_seconds(c.aligned.best.seconds), numeric=True),
        Column("aligned best program", "that program", lambda c: c.aligned.best.text, code=True),
        Column("p2 best", "fastest program under P2's order", lambda c: format_seconds(c.p2.best.seconds),
               numeric=True),
        Column("p2 best program", "that program (same groups: the orders agree)",
               lambda c: "same groups" if c.same_groups else c.p2.best.text, code=True),
        Column("gain", "p2 best / aligned best", lambda c: f"{c.gain:.2f}x", numeric=True),
    )
    return Table.of("Device orders", cols, rows, intro=TITLE[len("device orders: "):].capitalize() + ".")
