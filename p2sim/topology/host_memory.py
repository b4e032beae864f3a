"""How fast a node's GPUs reach their host's memory all at once: what activation offloading moves over.

Megatron-Core's activation offloading (``--cpu-offloading``, TransformerEngine's CPU offload) copies a layer's
saved activations to host memory during the forward and back before its backward, on every GPU at once.  Each
GPU's copies take its path to the nearest host memory through the node's host components only (PCIe switches,
CPUs, NVLink-C2C), never through another GPU or a NIC; the links those paths share are shared by the GPUs that
cross them.  So a GPU's rate is the least, over its path's links, of the link's bandwidth over the GPUs that
cross it: a DGX H100's GPU its PCIe switch's x16 link (two GPUs on each host switch share the way up), a
GB200's its 450 GB/s NVLink-C2C link to its Grace.  The shipped GB200 and GB300 files give Grace no memory
link, so the two GPUs of a Grace are not charged for sharing its LPDDR5X (about 0.5 TB/s): their rate is the
C2C link's, an upper bound where both copy at full speed at once.

Examples
--------
>>> from p2sim.topology import load_system
>>> round(host_memory_rate(load_system("gb200-nvl72", 1)) / 1e9, 1), round(host_memory_rate(load_system("dgx-h100", 1)) / 1e9, 1)
(450.0, 24.0)
"""

from __future__ import annotations

from collections import Counter

import networkx as nx

from .graph import Topology
from .paths import hop_weight

__all__ = ["host_memory_rate", "HOST_KINDS"]

HOST_KINDS = ("pcie_switch", "cpu", "memory")  # what a copy to host memory may cross (not GPUs, NVSwitches, NICs)


def _paths(topo: Topology) -> list[list[str]]:
    g = topo.template
    # host memory where the file models it, else the CPUs (as NCCL's staging through host memory takes them)
    memories = ([n for n, d in g.nodes(data=True) if d["kind"] == "memory"]
                or [n for n, d in g.nodes(data=True) if d["kind"] == "cpu"])
    out = []
    for gpu in topo.gpu_names:
        view = nx.subgraph_view(g, filter_node=lambda x, gpu=gpu: x == gpu or g.nodes[x]["kind"] in HOST_KINDS)
        lengths, paths = nx.single_source_dijkstra(view, gpu, weight=hop_weight)
        reached = [m for m in memories if m in paths]
        if not reached:
            return []
        out.append(paths[min(reached, key=lambda m: (lengths[m], m))])
    return out


def host_memory_rate(topo: Topology) -> float:
    """Bytes per second each GPU of a node moves to host memory while every GPU of the node does (the least
    over the GPUs); 0 where a system file gives no host memory a GPU reaches."""
    paths = _paths(topo)
    if not paths:
        return 0.0
    g = topo.template
    users = Counter(e for p in paths for e in zip(p, p[1:]))
    return min(min(g.edges[e]["bandwidth"] / users[e] for e in zip(p, p[1:])) for p in paths)
