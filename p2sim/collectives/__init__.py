"""Collective expansion: a lowered step becomes NCCL-style ring or tree traffic patterns.

``algo="tree"`` applies to AllReduce only; NCCL runs the other collectives as rings
even under ``NCCL_ALGO=Tree``, and so does p2sim.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InputError
from ..topology import Topology
from .latency import BASE_LATENCY_S
from .pattern import Hop, Pattern
from .ring import ring_pattern
from .tree import tree_pattern
from .volumes import step_fractions, step_volumes

__all__ = ["ALGORITHMS", "Expander", "Pattern", "Hop", "step_fractions", "step_volumes", "check_algo"]

ALGORITHMS = ("ring", "tree")


def check_algo(algo: str) -> str:
    if algo not in ALGORITHMS:
        raise InputError(f"algo: {algo!r} is not one of {', '.join(ALGORITHMS)}")
    return algo


class Expander:
    """Expands (algorithm, collective, group) into a :class:`Pattern`, cached per topology."""

    def __init__(self, topo: Topology, base_latency: float = BASE_LATENCY_S) -> None:
        self.topo = topo
        self.base_latency = base_latency
        self._cache: dict[tuple[str, str, tuple[int, ...]], Pattern] = {}

    def pattern(self, algo: str, op: str, members: Sequence[int]) -> Pattern:
        use = "tree" if algo == "tree" and op == "AllReduce" else "ring"
        key = (use, op, tuple(members))
        hit = self._cache.get(key)
        if hit is None:
            if use == "tree":
                hit = tree_pattern(self.topo, members, self.base_latency)
            else:
                hit = ring_pattern(self.topo, op, members, self.base_latency)
            self._cache[key] = hit
        return hit
