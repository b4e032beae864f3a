"""The link-bottleneck baseline: NCCL's ring and tree bandwidth formulas on one ring or tree.

This is the model p2sim had before its channel structure, kept as the reference every
validation compares against: one ring over the group's GPUs in index order (one channel
per NIC the first node's members use), or one chain-plus-double-binary-tree through each
node's first GPU, each hop on the default route of its GPUs; the time is NCCL's latency
formula (Simple protocol, the routes' own latencies) plus the buffer times the busiest
hop's bytes over the slowest hop's bandwidth.  No NVLS, no protocols, no contention.
Which formula an algorithm runs is the algorithm's to say
(:func:`p2sim.collectives.algorithms.baseline_seconds`): this module imports no algorithm.

Examples
--------
>>> from p2sim.topology import load_system
>>> topo = load_system("a100", nodes=2)
>>> round(ring_baseline(topo, "AllReduce", range(32), 2**32), 3)   # 2*31/32 x 4 GiB / 8 GB/s
1.04
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import groupby

from ..topology import Topology
from .hops.ring import chain_pairs, ring_factor

__all__ = ["ring_baseline", "tree_baseline"]

BASE_S = 8.4e-6  # NCCL's base latency of the Simple protocol


def _latency(topo: Topology, pairs: list[tuple[int, int]], op: str, n: int, nodes: int, tree: bool,
             per_node: int) -> float:
    routes = [topo.router.route(a, b) for a, b in pairs]
    intra = max((r.latency for r in routes if not r.inter_node), default=0.0)
    inter = max((r.latency for r in routes if r.inter_node), default=0.0)
    if tree:
        depth = math.ceil(math.log2(nodes)) if nodes > 1 else 0
        return BASE_S + 2 * ((per_node - 1) * intra + depth * inter)
    nsteps, ninter = (2 * (n - 1), 2 * (nodes - 1)) if op == "AllReduce" else (n - 1, nodes - 1)
    return BASE_S + (nsteps - ninter) * intra + ninter * inter


def _bottleneck(topo: Topology, pairs: list[tuple[int, int]]) -> float:
    return min(float(topo.capacity[list(topo.router.route(a, b).edges)].min()) for a, b in pairs)


def tree_baseline(topo: Topology, op: str, members: Iterable[int], nbytes: float) -> float:
    """Uncontended time of an AllReduce over ``members`` on one chain-plus-double-binary-tree."""
    members = list(members)
    n = len(members)
    segs = [list(s) for _, s in groupby(sorted(members), key=topo.node_of)]
    nodes = len(segs)
    pairs = [(c, p) for seg in segs for c, p in zip(seg[1:], seg)]
    heads = [s[0] for s in segs]
    pairs += [(heads[i], heads[i + 1]) for i in range(len(heads) - 1)]
    both = pairs + [(b, a) for a, b in pairs]
    lat = _latency(topo, both, op, n, nodes, True, max(len(s) for s in segs))
    return lat + nbytes * 2.0 / _bottleneck(topo, both)  # tree algorithm bandwidth = half the bus bandwidth


def ring_baseline(topo: Topology, op: str, members: Iterable[int], nbytes: float) -> float:
    """Uncontended time of ``op`` over ``members`` on one ring in index order."""
    members = list(members)
    n = len(members)
    segs = [list(s) for _, s in groupby(sorted(members), key=topo.node_of)]
    nodes = len(segs)
    pairs = chain_pairs(op, sorted(members), members[0])
    chans = 1 if nodes < 2 else max(1, len({topo.router.nic_of(m) for m in segs[0]}))
    lat = _latency(topo, pairs, op, n, nodes, False, 0)
    return lat + nbytes * ring_factor(op, n) / (_bottleneck(topo, pairs) * chans)

