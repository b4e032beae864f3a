"""NCCL's latency model (src/graph/tuning.cc), used for start-up terms and the analytic baseline.

``time = base + (nsteps - nInter) * intraLat + nInter * interLat`` for rings and
``base + 2 * ((ppn - 1) * intraLat + log2(nNodes) * interLat)`` for trees, where the
hardware latencies are those of the routes actually used (sums of link latencies).
"""

from __future__ import annotations

import math

__all__ = ["BASE_LATENCY_S", "ring_latency", "tree_latency", "ring_steps"]

# NCCL's base latency of the Simple protocol, about 8.4 us per collective.
BASE_LATENCY_S = 8.4e-6


def ring_steps(op: str, ranks: int, nodes: int) -> tuple[int, int]:
    """(nsteps, nInter) of a ring collective."""
    if op == "AllReduce":
        return 2 * (ranks - 1), 2 * (nodes - 1)
    return ranks - 1, nodes - 1


def ring_latency(op: str, ranks: int, nodes: int, intra: float, inter: float, base: float = BASE_LATENCY_S) -> float:
    nsteps, ninter = ring_steps(op, ranks, nodes)
    return base + (nsteps - ninter) * intra + ninter * inter


def tree_latency(per_node: int, nodes: int, intra: float, inter: float, base: float = BASE_LATENCY_S) -> float:
    depth = math.ceil(math.log2(nodes)) if nodes > 1 else 0
    return base + 2 * ((per_node - 1) * intra + depth * inter)
