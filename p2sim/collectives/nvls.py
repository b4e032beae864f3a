"""NVLink SHARP (NVLS): the NVSwitch reduces and multicasts.

With NVLS (NVSwitch gen3 and later, Hopper GPUs and later) a GPU reads a reduced chunk
from the switch with one ``multimem.ld_reduce`` and writes a chunk to every GPU with one
``multimem.st``.  An AllReduce over ``n`` GPUs: each GPU owns ``1/n`` of the buffer, so
it sends its whole buffer ``S`` towards the switch (every chunk to its owner's
reduction) and receives its reduced ``S/n``; then it multicasts that ``S/n`` and
receives every owner's result, ``S``.  Per GPU and direction that is ``S (n+1)/n``
through its NVLink port -- about the buffer once, where a ring moves ``2(n-1)/n S``
each way.  ReduceScatter is the first half (up ``S``, down ``S/n``), AllGather the second
(up ``S/n``, down ``S``).  NVLS reaches ``nvlsEfficiency`` of NVLink (85% on Hopper).

Across nodes NCCL combines it with a tree (NVLS-Tree): inside each node NVLS reduces
the buffer to a few *head* GPUs (one per NIC), each head runs a double binary tree
across the nodes for its slice through its NIC, and NVLS multicasts the results back.
NCCL runs 16 NVLS channels on Hopper (``src/transport/nvls.cc``).

Switch traffic is written as hops to or from :data:`SWITCH`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..topology import Topology
from .channels import Segment, entry_gpus, node_nics
from .pattern import Hop
from .tree import double_tree, link_pair

__all__ = ["SWITCH", "nvls_switch", "nvls_hops", "nvls_tree_hops", "nvls_heads"]

SWITCH = -1  # the NVSwitch as a hop's source or destination


def nvls_switch(topo: Topology, seg: Segment) -> str | None:
    """The NVLS-capable NVSwitch every member of the segment is attached to, if any."""
    g = topo.template  # every node is node 0's template
    common = None
    for m in seg.members:
        gpu = topo.gpu_names[m % topo.gpus_per_node]
        switches = {s.split("/", 1)[1] for s in g.successors(gpu) if g.nodes[s]["kind"] == "nvswitch"
                    and s.split("/", 1)[1] in topo.spec.nvls_switches}
        common = switches if common is None else common & switches
    return f"n{seg.node}/{min(common)}" if common else None


def _port(topo: Topology, m: int, switch: str, up: float, down: float, efficiency: float) -> list[Hop]:
    gpu = topo.gpu_name(m)
    out = []
    if up > 0:
        out.append(Hop(m, SWITCH, up, (topo.edge_index(gpu, switch),), False, 1 / efficiency))
    if down > 0:
        out.append(Hop(SWITCH, m, down, (topo.edge_index(switch, gpu),), False, 1 / efficiency))
    return out


def nvls_hops(topo: Topology, op: str, seg: Segment, switch: str, efficiency: float) -> list[Hop]:
    """One node's NVLS collective, per byte of buffer (its link loads divided by ``efficiency``)."""
    n = len(seg.members)
    up, down = {"AllReduce": (1 + 1 / n, 1 + 1 / n), "ReduceScatter": (1.0, 1 / n),
                "AllGather": (1 / n, 1.0)}[op]
    hops: list[Hop] = []
    for m in seg.members:
        hops += _port(topo, m, switch, up, down, efficiency)
    return hops


def nvls_heads(topo: Topology, segs: Sequence[Segment]) -> list[list[tuple[int, str]]]:
    """Per node, the NVLS-Tree heads and their NICs: for each NIC in NCCL's order, the first
    member near it that is not a head yet."""
    out = []
    for seg in segs:
        heads: list[tuple[int, str]] = []
        for nic in node_nics(topo, seg) or (topo.nic_of(seg.members[0]),):
            h = next((m for m in entry_gpus(topo, seg, nic) if m not in {x for x, _ in heads}), None)
            if h is not None:
                heads.append((h, nic))
        out.append(heads)
    return out


def nvls_tree_hops(topo: Topology, segs: Sequence[Segment], switches: Sequence[str],
                   efficiency: float) -> list[list[Hop]]:
    """NVLS-Tree AllReduce: one flow per head slot, per byte of its slice."""
    heads = nvls_heads(topo, segs)
    count = min(len(h) for h in heads)
    out = []
    for j in range(count):
        hops: list[Hop] = []
        nics, tops = {}, []
        for seg, sw, hs in zip(segs, switches, heads):
            head, nic = hs[j]
            for m in seg.members:  # every member sends its part of the slice, then receives the result
                hops += _port(topo, m, sw, 1.0, 1.0, efficiency)
            hops += _port(topo, head, sw, 1.0, 1.0, efficiency)  # the head: reduced in, multicast out
            nics[seg.node] = nic
            tops.append(head)
        for parents in double_tree(len(tops)):
            for r, p in enumerate(parents):
                if p is not None:
                    hops += link_pair(topo, tops[r], tops[p], 0.5, nics)
        out.append(hops)
    return out
