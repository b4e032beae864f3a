"""Rendering of size sweeps: nccl-tests' table, with what NCCL picked, and bus bandwidth against size."""

from __future__ import annotations

from collections.abc import Sequence

from ..studies.size_sweep import SweepPoint, SweepResult
from .files import figure_png

__all__ = ["sweep_table", "sweep_plot", "sweep_header", "sweep_text", "sweep_report"]

REDOP = {"AllReduce": "sum", "ReduceScatter": "sum", "Reduce": "sum", "AllGather": "none", "Broadcast": "none"}


def sweep_table(header: str, collective: str, points: Sequence[SweepPoint]) -> str:
    """nccl-tests' columns (one pass, predicted), then the algorithm, protocol and channels NCCL would use."""
    root = "0" if collective in ("Broadcast", "Reduce") else "-1"
    lines = [f"# {header}",
             f"# {'size':>10} {'count':>13} {'type':>9} {'redop':>7} {'root':>7} {'time':>9} {'algbw':>7} "
             f"{'busbw':>7}  algo/proto x channels",
             f"# {'(B)':>10} {'(elements)':>13} {'':>9} {'':>7} {'':>7} {'(us)':>9} {'(GB/s)':>7} {'(GB/s)':>7}"]
    for p in points:
        lines.append(f"  {p.size:>10} {p.count:>13} {'float':>9} {REDOP[collective]:>7} {root:>7} "
                     f"{p.seconds * 1e6:9.2f} {p.algbw / 1e9:7.2f} {p.busbw / 1e9:7.2f}  {p.algo}/{p.proto} x{p.channels}")
    return "\n".join(lines)


def sweep_plot(title: str, points: Sequence[SweepPoint]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    choices = list(dict.fromkeys(f"{p.algo}/{p.proto}" for p in points))
    cmap = matplotlib.colormaps["tab10"]
    ax.plot([p.size for p in points], [p.busbw / 1e9 for p in points], color="grey", lw=1, zorder=1)
    for i, c in enumerate(choices):
        sel = [p for p in points if f"{p.algo}/{p.proto}" == c]
        ax.scatter([p.size for p in sel], [p.busbw / 1e9 for p in sel], color=cmap(i % 10), label=c, zorder=2, s=28)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(title)
    ax.legend(title="NCCL's choice")
    return figure_png(fig)


def sweep_header(result: SweepResult) -> str:
    req = result.request
    return (f"{req.topology.spec.name}, {req.topology.node_count} node(s) x {req.gpus_per_node} GPUs, {req.collective}; "
            f"algo {req.algo}, proto {req.proto}, {req.model} model (predicted)")


def sweep_text(result: SweepResult) -> str:
    """``p2sim sweep``'s table."""
    return sweep_table(sweep_header(result), result.request.collective, result.points)


def sweep_report(result: SweepResult) -> dict[str, bytes]:
    """``sweep --out``'s files: the table and the plot."""
    return {"sweep.png": sweep_plot(sweep_header(result), result.points),
            "sweep.txt": (sweep_text(result) + "\n").encode()}
