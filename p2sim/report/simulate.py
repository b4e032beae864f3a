"""Rendering of simulation results and topology summaries."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..collectives.binding import Binding
from ..formalism.naming import axes_text, matrix_legend, order_label, reduce_text
from ..studies.simulate import SimulateResult
from ..util.fileio import replace_file
from ..formalism.placement import Matrix, format_matrix
from ..formalism.program import Program
from ..sim import ProgramResult
from ..sim.nccl_plan import PLAN_BYTES, AlgorithmPlan
from ..studies.topology_summary import TopologySummary
from ..topology import Topology
from ..topology.bisection import MAX_BISECTION_LINKS
from ..util.units import format_bytes, format_seconds


def span_text(nodes_spanned: int) -> str:
    return "inside a node" if nodes_spanned == 1 else f"across {nodes_spanned} nodes"


def choice_text(step: Any) -> str:
    """What NCCL ran for a step: ``ring/Simple x24`` (channels), several when its groups differ."""
    return ", ".join(f"{a}/{p} x{c}" for a, p, c in step.choices) or "-"


def results_text(rows: list[tuple[Matrix, Program, ProgramResult]],
                 describe: Callable[[Matrix], str] | None = None, bounds: Sequence[Sequence[Binding]] = ()) -> str:
    """Each program's time and its steps', in adaptive units; ``describe`` puts a matrix in words; ``bounds``
    (per row, per step) say what bounds each step."""
    lines = []
    current = None
    for k, (matrix, program, r) in enumerate(rows):
        bound = list(bounds[k]) if k < len(bounds) else []
        if matrix != current:
            current = matrix
            words = f"  ({describe(matrix)})" if describe is not None else ""
            lines.append(f"matrix {format_matrix(matrix)}{words}")
        lines.append(f"  {format_seconds(r.total_seconds):>10}  {r.text}")
        for i, (s, ins) in enumerate(zip(r.steps, program.instructions)):
            why = f"; bound by {bound[i].text}" if i < len(bound) else ""
            lines.append(f"      {format_seconds(s.seconds):>10}  {ins.text:<40s} {s.groups} x {s.group_size} GPUs, "
                         f"{span_text(s.nodes_spanned)}, {format_bytes(s.buffer_bytes)}, {choice_text(s)}{why}")
    return "\n".join(lines)


def simulate_text(result: SimulateResult) -> str:
    """``p2sim simulate``'s answer: a header, the matrix legend, every program and its steps."""
    req, job = result.request, result.request.job
    topo, names, s = job.topology, job.axis_names, req.settings
    return "\n".join([
        f"{topo.spec.name}, {topo.node_count} nodes, {topo.devices} GPUs; axes {axes_text(job.axes, names)} reduce "
        f"{reduce_text(result.reduce_axes, names)}{order_label(s.order, result.reduce_axes)}; {s.algo}, "
        f"{s.engine} engine, {format_bytes(req.demand.bytes_per_gpu)} per GPU",
        matrix_legend(names, topo.level_names),
        results_text(list(result.rows), result.placement, result.bounds)])


def _shown_path(path: str) -> str:
    """A path relative to the working directory when it lies below it."""
    import os

    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def topology_json(summary: TopologySummary) -> dict[str, Any]:
    """``p2sim topo --json``: the summary as a document (the system file's path relative to here)."""
    return {
        "system": summary.system,
        "description": summary.description,
        "file": _shown_path(summary.source),
        "nodes": summary.nodes,
        "hierarchy": [{"name": n, "cardinality": c} for n, c in summary.hierarchy],
        "devices": summary.devices,
        "components": dict(summary.components),
        "links": {c.name: {"directed_edges": c.directed_edges, "bandwidth_GBps": list(c.bandwidth_gbps),
                           "latency_us": list(c.latency_us), "efficiency": c.efficiency} for c in summary.links},
        "fabric": summary.fabric,
        "bisection_GBps": summary.bisection_gbps,
        "assumed": list(summary.assumed),
        "nccl": [dataclasses.asdict(p) for p in summary.nccl],
    }


def topology_text(summary: TopologySummary) -> str:
    """``p2sim topo``'s answer in words."""
    d = topology_json(summary)
    lines = [
        f"{d['system']}: {d['description']}",
        f"  file       {d['file']}",
        "  hierarchy  " + ", ".join(f"{h['name']} {h['cardinality']}" for h in d["hierarchy"])
        + f"  ({d['devices']} GPUs on {d['nodes']} nodes)",
        "  components " + ", ".join(f"{n} {k}" for k, n in d["components"].items()),
        "  links (per direction; effective: the file's rate x its class's efficiency):",
    ]
    for c, e in d["links"].items():
        bw = "/".join(f"{b:g}" for b in e["bandwidth_GBps"])
        lat = "/".join(f"{t:g}" for t in e["latency_us"])
        eff = "" if e["efficiency"] == 1 else f" ({e['efficiency']:g} of the data sheet)"
        lines.append(f"    {c:<10s} {e['directed_edges'] // 2:5d} links  {bw} GB/s{eff}  {lat} us")
    if d["fabric"] is not None:
        f = d["fabric"]
        lines.append(f"  fabric     {f['routing']} routing" + (f", {f['rails']} rails" if f["rails"] > 1 else ""))
        for tier in f["tiers"]:
            sharp = ", SHARP" if tier["sharp"] else ""
            if "nodes" in tier:
                lines.append(f"    {tier['tier']:<10s} {tier['groups']:5d} groups of {tier['nodes']} nodes, "
                             f"{tier['ports']} uplinks of {tier['uplink_GBps'] / tier['ports']:g} GB/s "
                             f"({tier['uplink_GBps']:g} GB/s up per group, {tier['connect']}{sharp})")
            else:
                lines.append(f"    {tier['tier']:<10s} top tier ({tier['connect']}{sharp})")
    if d["nodes"] > 1 and "nodes" not in d["bisection_GBps"]:
        links = sum(e["directed_edges"] for e in d["links"].values())
        lines.append(f"  bisection  not computed between the two halves of the nodes ({links:,} directed links: a "
                     f"max flow over more than {MAX_BISECTION_LINKS:,} takes minutes)")
    for k, v in d["bisection_GBps"].items():
        what = "between the two halves of the nodes" if k == "nodes" else "between the two halves of a node's GPUs"
        lines.append(f"  bisection  {v:g} GB/s per direction {what}")
    for a in d["assumed"]:
        lines.append(f"  assumed    {a}")
    lines.append(f"  NCCL       as p2sim derives it from NCCL's rules, for an AllReduce of {format_bytes(PLAN_BYTES)} "
                 "over every GPU (each algorithm forced):")
    for p in d["nccl"]:
        lines.append(f"    {AlgorithmPlan(**p).text()}")
    return "\n".join(lines)


DRAW_SUFFIXES = (".png", ".svg", ".pdf")  # the picture formats --draw writes (by matplotlib)


def draw_topology(topo: Topology, path: str) -> None:
    """Write a picture of the graph: one column per node, network on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    # a row and a colour for every component kind a system file may name (spec.KINDS)
    layer = {"network_switch": 0, "nic": 1, "memory": 2, "cpu": 3, "pcie_switch": 4, "nvswitch": 5, "gpu": 6}
    colours = {"network_switch": "#7f7f7f", "nic": "#d62728", "memory": "#9467bd", "cpu": "#1f77b4",
               "pcie_switch": "#17becf", "nvswitch": "#2ca02c", "gpu": "#ff7f0e"}
    g = topo.graph
    per_node_width = max(topo.gpus_per_node, 4) + 2
    totals = Counter((d["node"], d["kind"]) for _, d in g.nodes(data=True))
    seen: Counter = Counter()
    pos = {}
    for name, d in g.nodes(data=True):
        key = (d["node"], d["kind"])
        i = seen[key]
        seen[key] += 1
        # spread each kind evenly over its node's column (the network over all columns)
        width = per_node_width * (topo.node_count if d["node"] is None else 1)
        left = 0 if d["node"] is None else d["node"] * per_node_width
        pos[name] = (left + 1 + (width - 2) * (i + 0.5) / totals[key], -layer[d["kind"]])
    fig, ax = plt.subplots(figsize=(max(8, topo.node_count * per_node_width * 0.45), 6))
    classes = sorted(set(topo.edge_class))
    cmap = plt.get_cmap("tab10")
    for ci, c in enumerate(classes):
        es = [(u, v) for k, (u, v) in enumerate(topo.edges) if topo.edge_class[k] == c and u < v]
        nx.draw_networkx_edges(g.to_undirected(as_view=True), pos, edgelist=es, ax=ax, edge_color=[cmap(ci)],
                               width=1.2, label=c, arrows=False)
    nx.draw_networkx_nodes(g, pos, ax=ax, node_size=60, node_shape="s",
                           node_color=[colours[d["kind"]] for _, d in g.nodes(data=True)])
    kinds = sorted({d["kind"] for _, d in g.nodes(data=True)}, key=layer.get)
    handles, labels = ax.get_legend_handles_labels()
    for k in kinds:  # components (squares) beside link classes (lines)
        handles.append(plt.Line2D([], [], marker="s", linestyle="", color=colours[k]))
        labels.append(k.replace("_", " "))
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.set_title(f"{topo.spec.name}: {topo.devices} GPUs on {topo.node_count} nodes")
    ax.axis("off")
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, dpi=120, format=Path(path).suffix.lstrip(".").lower() or "png")
    plt.close(fig)
    replace_file(path, buf.getvalue(), "draw")
