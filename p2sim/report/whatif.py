"""Plot of a what-if study: best predicted time against the first varied parameter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..studies.whatif import Variation
from .files import figure_png


def whatif_plot(variations: Sequence[Variation], rows: Sequence[dict[str, Any]]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = variations[0]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lines: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        rest = tuple((k, v) for k, v in r["point"].items() if k != first.target)
        lines.setdefault(rest, []).append(r)
    for rest, rs in lines.items():
        xs = [r["point"][first.target] for r in rs]
        label = ", ".join(f"{k}={v:g}" for k, v in rest) or "best"
        ax.plot(xs, [r["seconds"] for r in rs], marker="o", label=label)
        for r in rs:
            if r["winner_changed"]:
                ax.annotate("winner changes", (r["point"][first.target], r["seconds"]), fontsize=7,
                            xytext=(4, 6), textcoords="offset points")
    ax.set_xlabel(first.target)
    ax.set_ylabel("best predicted seconds")
    ax.set_yscale("log")
    ax.set_title("what-if: best matrix and program at each point")
    ax.legend(fontsize=8)
    return figure_png(fig)
