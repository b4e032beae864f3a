"""Rendering of size sweeps: nccl-tests' table, with what NCCL picked, and bus bandwidth against size.

``sweep --out`` writes the text table, a page (HTML and Markdown) that opens with the answer
(the largest size's time and bus bandwidth, where the bandwidth reaches half its peak and
where NCCL's choice changes) above a table in units, and the log-log plots.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..studies.size_sweep import SweepPoint, SweepResult
from ..util.units import format_bytes, format_seconds
from .answer import Answer
from .files import data_uris, figure_png, render
from .plot_units import bytes_axis, seconds_axis
from .tables import Column, Table

__all__ = ["sweep_table", "sweep_plot", "sweep_header", "sweep_text", "sweep_report", "sweep_answer", "SWEEP_COLUMNS"]

# the redop column nccl-tests prints per program (alltoall.cu prints none; sendrecv.cu its nominal sum)
REDOP = {"AllReduce": "sum", "ReduceScatter": "sum", "Reduce": "sum", "AllGather": "none", "Broadcast": "none",
         "AllToAll": "none", "SendRecv": "sum"}


def sweep_table(header: str, collective: str, points: Sequence[SweepPoint], ranks: Sequence[tuple[int, int]] = (),
                system: str = "") -> str:
    """The sweep as an nccl-tests log (2.13+ layout) that p2sim's own reader takes back, then NCCL's choices.

    ``ranks`` are the (node, GPU) of each rank, written as nccl-tests' rank lines (hosts
    ``node0``, ``node1``, ...) so that a reader knows the nodes and GPUs per node.  Every
    time is the prediction, in place as out of place; ``#wrong`` is ``N/A`` (nothing was
    checked).  The algorithm, protocol and channels NCCL would pick follow the run as
    comment lines, which nccl-tests readers skip.
    """
    root = "0" if collective in ("Broadcast", "Reduce") else "-1"
    binary = {"AllReduce": "all_reduce", "ReduceScatter": "reduce_scatter", "AllGather": "all_gather",
              "Broadcast": "broadcast", "Reduce": "reduce", "AllToAll": "alltoall", "SendRecv": "sendrecv"}[collective] + "_perf"
    first, last = (points[0].size, points[-1].size) if points else (0, 0)
    factor = points[1].size // points[0].size if len(points) > 1 else 1
    lines = [f"# p2sim sweep: {header}",
             "# every time below is p2sim's prediction (in place as out of place); nccl-tests' layout, so that "
             "validate, calibrate and check read it back",
             f"# Collective test starting: {binary}",
             f"# nThread 1 nGpus 1 minBytes {first} maxBytes {last} step: {factor}(factor) warmup iters: 0 iters: 0 "
             "agg iters: 1 validation: 0 graph: 0",
             "#", "# Using devices"]
    for k, (node, gpu) in enumerate(ranks):
        lines.append(f"#  Rank {k:>2} Group  0 Pid {0:>6} on {f'node{node}':>10} device {gpu:>2} [0x00] p2sim {system}")
    lines += ["#",
              f"# {'size':>10} {'count':>13} {'type':>9} {'redop':>7} {'root':>7} {'time':>8} {'algbw':>7} "
              f"{'busbw':>7} {'#wrong':>7} {'time':>8} {'algbw':>7} {'busbw':>7} {'#wrong':>7}",
              f"# {'(B)':>10} {'(elements)':>13} {'':>9} {'':>7} {'':>7} {'(us)':>8} {'(GB/s)':>7} {'(GB/s)':>7} "
              f"{'':>7} {'(us)':>8} {'(GB/s)':>7} {'(GB/s)':>7}"]
    for p in points:
        cols = f"{p.seconds * 1e6:8.2f} {p.algbw / 1e9:7.2f} {p.busbw / 1e9:7.2f} {'N/A':>7}"
        lines.append(f"  {p.size:>10} {p.count:>13} {'float':>9} {REDOP[collective]:>7} {root:>7} {cols} {cols}")
    avg = sum(p.busbw for p in points) / len(points) / 1e9 if points else 0.0
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {avg:.4f}", "#",
              "# NCCL's choice per size (p2sim):", f"# {'size':>10}  algo/proto x channels"]
    lines += [f"# {p.size:>10}  {p.algo}/{p.proto} x{p.channels}" for p in points]
    return "\n".join(lines)


def _choice(p: SweepPoint) -> str:
    return f"{p.algo}/{p.proto}"


def sweep_plot(title: str, points: Sequence[SweepPoint]) -> bytes:
    """Predicted time and bus bandwidth against size, log-log, coloured by NCCL's (algorithm, protocol)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    choices = list(dict.fromkeys(_choice(p) for p in points))
    cmap = matplotlib.colormaps["tab10"]
    sizes = [p.size for p in points]
    for ax, values in ((left, [p.seconds for p in points]), (right, [p.busbw / 1e9 for p in points])):
        ax.plot(sizes, values, color="grey", lw=1, zorder=1)
        for i, c in enumerate(choices):
            sel = [(p.size, v) for p, v in zip(points, values) if _choice(p) == c and v > 0]
            ax.scatter([x for x, _ in sel], [v for _, v in sel], color=cmap(i % 10), label=c, zorder=2, s=28)
        bytes_axis(ax, min(sizes), max(sizes))
        ax.set_xlabel("size per GPU")
        ax.grid(True, which="major", alpha=0.3)
    seconds_axis(left)
    left.set_ylabel("predicted time")
    left.set_title("time against size")
    right.set_yscale("log")
    right.set_ylabel("bus bandwidth (GB/s)")
    right.set_title("bus bandwidth against size")
    right.legend(title="NCCL's choice", fontsize=8)
    fig.suptitle(title, fontsize=10)
    return figure_png(fig)


SWEEP_COLUMNS: tuple[Column, ...] = (
    Column("size", "nccl-tests' size: the larger of a rank's input and output", lambda p: format_bytes(p.size),
           numeric=True),
    Column("count", "elements (float32) per rank", lambda p: str(p.count), numeric=True),
    Column("time", "predicted time of one collective", lambda p: format_seconds(p.seconds), numeric=True),
    Column("algbw (GB/s)", "size / time", lambda p: f"{p.algbw / 1e9:.2f}", numeric=True),
    Column("busbw (GB/s)", "algbw times nccl-tests' factor for the collective (comparable with link rates)",
           lambda p: f"{p.busbw / 1e9:.2f}", numeric=True),
    Column("NCCL's choice", "algorithm / protocol x channels NCCL would run at this size",
           lambda p: f"{p.algo}/{p.proto} x{p.channels}", code=True, wrap=False),
)


def sweep_answer(result: SweepResult) -> Answer:
    """The largest size's time and bus bandwidth, where the bandwidth reaches half its peak, where NCCL switches."""
    req, points = result.request, result.points
    topo = req.topology
    last, first = points[-1], points[0]
    peak = max(points, key=lambda p: p.busbw)
    nodes = f"{topo.node_count} node{'s' if topo.node_count > 1 else ''}"
    text = (f"{req.collective} on {nodes} x {req.gpus_per_node} GPUs of {topo.spec.name} "
            f"({req.settings.engine} engine): "
            f"{format_bytes(last.size)} takes {format_seconds(last.seconds)} at {last.busbw / 1e9:.1f} GB/s bus "
            f"bandwidth (`{last.algo}/{last.proto} x{last.channels}`)")
    if len(points) > 1:
        text += f" and {format_bytes(first.size)} takes {format_seconds(first.seconds)}"
    text += "."
    if peak.busbw > 0:
        half = next(p for p in points if p.busbw >= peak.busbw / 2)
        text += (f" Bus bandwidth peaks at {peak.busbw / 1e9:.1f} GB/s ({format_bytes(peak.size)}) and reaches half "
                 f"of that from {format_bytes(half.size)} on")
    switches = [p for i, p in enumerate(points) if i == 0 or _choice(p) != _choice(points[i - 1])]
    text += ("; NCCL runs " + ", then ".join(f"`{_choice(p)}` from {format_bytes(p.size)}" for p in switches)
             if len(switches) > 1 else f"; NCCL runs `{_choice(first)}` at every size") + "."
    return Answer(text)


def sweep_header(result: SweepResult) -> str:
    req = result.request
    return (f"{req.topology.spec.name}, {req.topology.node_count} node(s) x {req.gpus_per_node} GPUs, {req.collective}; "
            f"algo {req.settings.algo}, proto {req.settings.proto}, {req.settings.engine} engine (predicted)")


def sweep_text(result: SweepResult) -> str:
    """``p2sim sweep``'s table: an nccl-tests log of the predictions."""
    req = result.request
    gpn = req.topology.gpus_per_node
    ranks = [divmod(m, gpn) for m in req.members]
    return sweep_table(sweep_header(result), req.collective, result.points, ranks, req.topology.spec.name)


def sweep_report(result: SweepResult) -> dict[str, bytes]:
    """``sweep --out``'s files: the page (HTML, Markdown), the plot and nccl-tests' text table."""
    header = sweep_header(result)
    images = {"sweep.png": sweep_plot(header, result.points)}
    captions = {"sweep.png": "Predicted time (left) and bus bandwidth (right) against size, log-log; colour = the "
                             "algorithm and protocol NCCL would pick."}
    uris = data_uris(images)
    data = {"title": f"p2sim sweep: {result.request.collective} on {result.request.topology.spec.name}",
            "answer": sweep_answer(result), "header": header,
            "tables": [Table.of("Sizes", SWEEP_COLUMNS, result.points, intro="One row per size, as nccl-tests prints "
                                "them (one pass, predicted).")],
            "images": [{"name": n, "caption": captions[n], "uri": uris[n]} for n in images]}
    files = {"sweep.md": render("sweep.md", **data), "sweep.html": render("sweep.html", **data)}
    files.update(images)
    files["sweep.txt"] = (sweep_text(result) + "\n").encode()
    return files
