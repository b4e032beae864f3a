"""Which links NCCL's transports use inside a node: P2P, SHM, GPUDirect RDMA and PXN.

Pure functions on a :class:`NodeView` (what the rules read of a node: the template graph,
its GPUs, its host components and ``NCCL_P2P_LEVEL``); every path is a list of node names
of node 0 (the node template), which the topology shifts to any node.

NCCL's rules, as ``src/graph/paths.cc`` applies them with default settings:

* **Path types**, nearest first: ``NVL`` (NVLink, or one NVSwitch), ``PIX`` (one PCIe
  switch), ``PXB`` (several PCIe switches), ``PHB`` (through a CPU), ``SYS`` (across
  CPUs).
* **GPU to GPU**: NVLink or a shared NVSwitch first.  Otherwise peer-to-peer over PCIe
  when the path type is at most ``NCCL_P2P_LEVEL`` (default ``PXB``); farther apart,
  the SHM transport stages the data in host memory (the receiver's CPU socket), which
  the path then crosses twice (written, then read) when the file models that memory.
* **GPU and NIC**: GPUDirect RDMA when the path type is at most ``NCCL_NET_GDR_LEVEL``
  (default ``PXB``; clusters whose NICs hang off the CPU's root ports set ``PHB``).  When it is farther, a GPU sends through an
  NVLink peer that is close to the NIC (PXN, NCCL >= 2.12, GPU-to-NIC direction only);
  otherwise through host memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx

from ..util.errors import TopologyError
from .settings import P2P_LEVELS

__all__ = ["NodeView", "path_type", "host_path", "gpu_gpu_path", "gpu_nic_path", "nic_gpu_path", "local_nics",
           "hop_weight"]


@dataclass(frozen=True, eq=False)
class NodeView:
    """What NCCL's path rules read of a system: node 0's graph and its parts.

    ``graph`` holds node 0 (and node 1) and the network, with the node and edge attributes
    of :class:`~p2sim.topology.graph.Topology`; ``gpus`` are node 0's GPUs in local order,
    ``host`` its PCIe switches and CPUs (what host paths may pass through), ``p2p_level``
    is ``NCCL_P2P_LEVEL``, ``gdr_level`` ``NCCL_NET_GDR_LEVEL`` and ``source`` the system
    file, for messages.
    """

    graph: nx.DiGraph
    gpus: tuple[str, ...]
    host: frozenset[str]
    p2p_level: str
    source: str
    gdr_level: str = "PXB"
    # host paths and nearest NICs, found once each (a node of 72 GPUs and NICs asks thousands of times)
    memo: dict = field(default_factory=dict, compare=False, repr=False)

GB = 1e9
_RANK = {t: i for i, t in enumerate(P2P_LEVELS)}


def hop_weight(u: str, v: str, data: dict) -> float:
    """Fewest hops first, then lowest latency, then widest links."""
    return 1.0 + data["latency"] * 1e3 + 1.0 / (1.0 + data["bandwidth"] / GB) * 1e-3


def path_type(topo: NodeView, path: list[str]) -> str:
    """NCCL's type of a path (its intermediate components decide)."""
    kinds = [topo.graph.nodes[x]["kind"] for x in path[1:-1]]
    cpus = sum(k == "cpu" for k in kinds)
    if cpus:
        return "PHB" if cpus == 1 else "SYS"
    switches = sum(k == "pcie_switch" for k in kinds)
    if switches:
        return "PIX" if switches == 1 else "PXB"
    return "NVL"


def at_most(kind: str, level: str) -> bool:
    return _RANK[kind] <= _RANK[level]


def host_path(topo: NodeView, src: str, dst: str) -> list[str] | None:
    """Shortest path between two node-0 components through PCIe switches and CPUs only."""
    key = ("host", src, dst)
    if key not in topo.memo:
        topo.memo[key] = _host_path(topo, src, dst)
    hit = topo.memo[key]
    return None if hit is None else list(hit)


def _host_path(topo: NodeView, src: str, dst: str) -> tuple[str, ...] | None:
    allowed = topo.host

    view = nx.subgraph_view(topo.graph, filter_node=lambda x: x in allowed or x == src or x == dst)
    try:
        return tuple(nx.shortest_path(view, src, dst, weight=hop_weight))
    except nx.NetworkXNoPath:
        return None


def _memory_of(topo: NodeView, cpu: str) -> str | None:
    return next((m for m in topo.graph.successors(cpu) if topo.graph.nodes[m]["kind"] == "memory"), None)


def _stage(topo: NodeView, path: list[str], near_end: bool) -> list[str]:
    """Route ``path`` through host memory: via the memory of its CPU nearest the chosen end."""
    cpus = [i for i, x in enumerate(path) if topo.graph.nodes[x]["kind"] == "cpu"]
    if not cpus:
        return path
    i = cpus[-1] if near_end else cpus[0]
    mem = _memory_of(topo, path[i])
    if mem is None:
        return path  # the file does not model memory: the CPU is the staging point
    return path[: i + 1] + [mem] + path[i:]


def _shm_path(topo: NodeView, src: str, dst: str) -> list[str] | None:
    """GPU to GPU through host memory of the receiver's CPU (NCCL's SHM transport)."""
    g = topo.graph
    cpus = [c for c in topo.host if g.nodes[c]["kind"] == "cpu"]
    best = None
    for cpu in sorted(cpus):
        down = host_path(topo, cpu, dst)
        up = host_path(topo, src, cpu)
        if down is None or up is None:
            continue
        key = (len(down), len(up))
        if best is None or key < best[0]:
            best = (key, up + down[1:])
    if best is None:
        return None
    path = best[1]
    mem_at = next(i for i in range(len(path) - 1, -1, -1) if g.nodes[path[i]]["kind"] == "cpu")
    mem = _memory_of(topo, path[mem_at])
    return path if mem is None else path[: mem_at + 1] + [mem] + path[mem_at:]


def gpu_gpu_path(topo: NodeView, a: str, b: str) -> tuple[list[str], str]:
    """The path NCCL uses between two GPUs of node 0, and its transport (``P2P`` or ``SHM``)."""
    g = topo.graph
    if g.has_edge(a, b):
        return [a, b], "P2P"
    switches = [s for s in g.successors(a) if g.nodes[s]["kind"] == "nvswitch" and g.has_edge(s, b)]
    if switches:
        best = max(switches, key=lambda s: (min(g.edges[a, s]["bandwidth"], g.edges[s, b]["bandwidth"]), s))
        return [a, best, b], "P2P"
    path = host_path(topo, a, b)
    if path is not None and at_most(path_type(topo, path), topo.p2p_level):
        return path, "P2P"
    shm = _shm_path(topo, a, b)
    if shm is None:
        raise TopologyError(f"{topo.source}: GPU {a} cannot reach GPU {b} inside a node "
                            "(no NVLink, NVSwitch or PCIe/host path)")
    return shm, "SHM"


def _nic_direct(topo: NodeView, gpu: str, nic: str) -> tuple[list[str], str] | None:
    path = host_path(topo, gpu, nic)
    return None if path is None else (path, path_type(topo, path))


def local_nics(topo: NodeView, gpu: str, nics: Iterable[str]) -> list[str]:
    """The NICs nearest to ``gpu`` (best path type, then fewest hops), in file order."""
    nics = tuple(nics)
    key = ("local", gpu, nics)
    if key not in topo.memo:
        topo.memo[key] = tuple(_local_nics(topo, gpu, nics))
    return list(topo.memo[key])


def _local_nics(topo: NodeView, gpu: str, nics: tuple[str, ...]) -> list[str]:
    scored = []
    for order, nic in enumerate(nics):
        d = _nic_direct(topo, gpu, nic)
        if d is not None:
            scored.append(((_RANK[d[1]], len(d[0])), order, nic))
    if not scored:
        return []
    best = min(s[0] for s in scored)
    return [nic for key, _, nic in sorted(scored) if key == best]


def gpu_nic_path(topo: NodeView, gpu: str, nic: str, nics: Iterable[str]) -> list[str]:
    """GPU to NIC (sending): GPUDirect RDMA if near, else PXN through a near NVLink peer, else host memory."""
    d = _nic_direct(topo, gpu, nic)
    if d is not None and at_most(d[1], topo.gdr_level):
        return d[0]
    for peer in topo.gpus:
        if peer == gpu or nic not in local_nics(topo, peer, nics):
            continue
        pd = _nic_direct(topo, peer, nic)
        via, transport = gpu_gpu_path(topo, gpu, peer)
        if pd is not None and at_most(pd[1], topo.gdr_level) and transport == "P2P" and path_type(topo, via) == "NVL":
            return via + pd[0][1:]
    if d is None:
        raise TopologyError(f"{topo.source}: GPU {gpu} has no path to NIC {nic}")
    return _stage(topo, d[0], near_end=True)


def nic_gpu_path(topo: NodeView, nic: str, gpu: str) -> list[str]:
    """NIC to GPU (receiving): GPUDirect RDMA if near, else through host memory (no PXN this way)."""
    d = _nic_direct(topo, gpu, nic)
    if d is None:
        raise TopologyError(f"{topo.source}: NIC {nic} has no path to GPU {gpu}")
    back = host_path(topo, nic, gpu)
    assert back is not None
    return back if at_most(d[1], topo.gdr_level) else _stage(topo, back, near_end=False)
