"""Ring orders inside a node: NCCL's topology search, as a search for the best rings.

NCCL searches the node's graph for rings whose bottleneck bandwidth is highest and runs
several channels over different rings so that a mesh's links are all used
(``src/graph/search.cc``).  p2sim does the same exactly for small groups: it lists every
ring over the group's GPUs (each run in both directions, as NCCL pairs a ring with its
reverse on NVLink), keeps those NCCL's search would consider -- the nearest path type
first (NVLink-only rings if there are any: NCCL widens to PCIe only when NVLink cannot
close a ring) and at least 0.49 of the best ring's bottleneck (NCCL lowers its channel
speed no further) -- and a linear program picks the mix of them -- the share of
channels on each -- that moves the most data without overloading any link.  The throughput it
finds depends only on the links, never on how the GPUs are numbered.  For groups of
more than :data:`EXACT_LIMIT` GPUs it compares a few candidate orders (index order and
PCIe locality order) and keeps the best single ring.

Routes and capacities are those of :class:`~p2sim.topology.Topology` (node 0).

Examples
--------
>>> from p2sim.topology import load_system
>>> topo = load_system("v100", nodes=1)
>>> rings = best_rings(topo, (0, 1, 2, 3, 4, 5, 6, 7))
>>> [r for r, _ in rings]       # the NVLink ring
[(0, 1, 2, 3, 4, 5, 6, 7)]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ...topology import Topology
from ...topology.settings import P2P_LEVELS

__all__ = ["best_rings", "ring_throughput", "EXACT_LIMIT"]

EXACT_LIMIT = 9  # (n-1)!/2 rings: 20160 at 9 GPUs, solved in well under a second
# NCCL's search lowers the channels' speed only while it stays above 0.49 of the best
# speed it has found (src/graph/search.cc), so rings slower than that take no part
NEAR_BEST = 0.49


def _loads(topo: Topology, order: Sequence[int]) -> dict[int, float]:
    """Link load of one ring run both ways, half the data each way, per byte per hop."""
    out: dict[int, float] = {}
    n = len(order)
    for i in range(n):
        a, b = order[i], order[(i + 1) % n]
        for s, d in ((a, b), (b, a)):
            for e in topo.router.intra_route(s, d)[0]:
                out[e] = out.get(e, 0.0) + 0.5
    return out


def _ring_type(topo: Topology, order: Sequence[int]) -> str:
    """The farthest path type among a ring's hops."""
    n = len(order)
    return max((topo.router.intra_type(order[i], order[(i + 1) % n]) for i in range(n)), key=P2P_LEVELS.index)


def ring_throughput(topo: Topology, order: Sequence[int]) -> float:
    """Bytes per second each hop of the ring (both directions together) can carry."""
    loads = _loads(topo, order)
    return min(topo.capacity[e] / v for e, v in loads.items())


def _one_switch(topo: Topology, local: Sequence[int]) -> bool:
    """Every pair meets through one NVSwitch (or a direct link) with equal links: any order is as good."""
    routes = {len(topo.router.intra_route(a, b)[0]) for a in local for b in local if a != b}
    if routes != {2}:
        return False
    caps = {float(topo.capacity[e]) for a in local for b in local if a != b for e in topo.router.intra_route(a, b)[0]}
    kinds = {topo.template.nodes[topo.edge_name(topo.router.intra_route(a, b)[0][0])[1]]["kind"]
             for a in local for b in local if a != b}
    return kinds == {"nvswitch"} and len(caps) == 1


def _locality_order(topo: Topology, local: Sequence[int]) -> tuple[int, ...]:
    """GPUs grouped by their PCIe switches and CPUs: consecutive GPUs share the most."""
    def key(a: int) -> tuple:
        path = topo.router.intra_route(a, local[0])[0] if a != local[0] else ()
        near = [topo.edge_name(e)[1] for e in path[:2]]
        return (tuple(sorted(near)), a)
    return tuple(sorted(local, key=key))


def best_rings(topo: Topology, local: Sequence[int]) -> tuple[tuple[tuple[int, ...], float], ...]:
    """Rings over local GPUs ``local`` (node-0 indices) with their shares of the channels (summing to 1).

    Each ring is a cyclic order starting at its smallest GPU.
    """
    local = tuple(sorted(local))
    if len(local) <= 3 or _one_switch(topo, local):
        return ((local, 1.0),)
    if len(local) > EXACT_LIMIT:
        cands = {local, _locality_order(topo, local)}
        best = max(sorted(cands), key=lambda o: ring_throughput(topo, o))
        return ((best, 1.0),)
    first, rest = local[0], local[1:]
    rings = [(first,) + p for p in itertools.permutations(rest) if p[0] < p[-1]]
    kinds = [_ring_type(topo, r) for r in rings]
    nearest = min(kinds, key=P2P_LEVELS.index)
    rings = [r for r, k in zip(rings, kinds) if k == nearest]
    loads = [_loads(topo, r) for r in rings]
    alone = [min(topo.capacity[e] / v for e, v in ld.items()) for ld in loads]
    keep = [j for j, t in enumerate(alone) if t >= NEAR_BEST * max(alone)]
    rings, loads = [rings[j] for j in keep], [loads[j] for j in keep]
    links = sorted({e for ld in loads for e in ld})
    index = {e: i for i, e in enumerate(links)}
    a = np.zeros((len(links), len(rings)))
    for j, ld in enumerate(loads):
        for e, v in ld.items():
            a[index[e], j] = v
    cap = topo.capacity[links] / topo.capacity[links].max()  # scaled: the LP is better conditioned
    from scipy.optimize import linprog  # here, not at import: scipy.optimize costs 0.3 s of a start

    res = linprog(-np.ones(len(rings)), A_ub=a, b_ub=cap, bounds=(0, None), method="highs")
    if res.status != 0:  # cannot happen with positive capacities; keep the best single ring
        best = max(rings, key=lambda r: ring_throughput(topo, r))
        return ((best, 1.0),)
    w = res.x
    total = w.sum()
    keep = [(rings[j], float(w[j] / total)) for j in np.flatnonzero(w > 1e-9 * w.max())]
    return tuple(keep)
