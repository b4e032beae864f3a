"""Link-level bisection figures of a topology (networkx max flows), for ``p2sim topo``."""

from __future__ import annotations

import math

import networkx as nx

from .graph import GB, Topology

__all__ = ["bisection", "MAX_BISECTION_LINKS"]

# a max flow over more directed links than this takes minutes in networkx: skipped (and said)
MAX_BISECTION_LINKS = 100_000


def bisection(topo: Topology) -> dict[str, float]:
    """Link-level bisection figures in GB/s per direction.

    ``nodes``: max flow from the GPUs of the first half of the nodes to those of the
    second half (only up to :data:`MAX_BISECTION_LINKS` directed links); ``node_gpus``: the
    same between the two halves of node 0's GPUs.
    """
    out: dict[str, float] = {}

    def cut(g: nx.DiGraph, left: list[str], right: list[str]) -> float:
        h = g.copy()
        for x in left:
            h.add_edge("_s", x, bandwidth=math.inf)
        for x in right:
            h.add_edge(x, "_t", bandwidth=math.inf)
        return nx.maximum_flow_value(h, "_s", "_t", capacity="bandwidth") / GB

    if topo.node_count > 1 and len(topo.edges) <= MAX_BISECTION_LINKS:
        half = topo.node_count // 2
        left = [topo.gpu_name(d) for d in range(half * topo.gpus_per_node)]
        right = [topo.gpu_name(d) for d in range(half * topo.gpus_per_node, topo.devices)]
        out["nodes"] = cut(topo.graph, left, right)
    node0 = topo.graph.subgraph(x for x, d in topo.graph.nodes(data=True) if d["node"] == 0)
    half = topo.gpus_per_node // 2
    if half:
        out["node_gpus"] = cut(
            nx.DiGraph(node0),
            [topo.gpu_name(d) for d in range(half)],
            [topo.gpu_name(d) for d in range(half, topo.gpus_per_node)],
        )
    return out
