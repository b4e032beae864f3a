"""What-if variations: link classes or the node count varied over values, as points of a Cartesian product.

``--vary nic.bandwidth=12.5,25,50 --vary nodes=2,4,8`` makes the Cartesian product
of the values.  Each point is a modified system (a whole link class changed through
:meth:`SystemSpec.with_class`, or another node count); at every point all matrices
and programs are ranked and the best one reported.  With a varying node count the
axes may hold one ``*``, the axis that absorbs the remaining devices.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..util.errors import InputError, PlacementError
from ..util.parsing import named_parts
from ..formalism.placement import Matrix
from ..topology.spec import SystemSpec

__all__ = ["Variation", "parse_vary", "Point", "points", "resolve_axes"]


@dataclass(frozen=True)
class Variation:
    target: str  # "nodes" or "<class>.bandwidth" / "<class>.latency"
    values: tuple[float, ...]


_VARY = re.compile(r"^\s*(nodes|[A-Za-z_][\w-]*\.(?:bandwidth|latency))\s*=\s*(.+)$")


def parse_vary(text: str, spec: SystemSpec) -> Variation:
    """Parse ``nic.bandwidth=12.5,25`` or ``nodes=2,4,8`` against a system."""
    m = _VARY.match(text)
    if not m:
        raise InputError(f"vary: {text!r} is not CLASS.bandwidth=V,.. , CLASS.latency=V,.. or nodes=N,..")
    target = m.group(1)
    values = []
    for part in m.group(2).split(","):
        try:
            v = float(part)
        except ValueError:
            raise InputError(f"vary: {part.strip()!r} in {text!r} is not a number") from None
        values.append(v)
    if target == "nodes":
        if any(v != int(v) or v < 1 for v in values):
            raise InputError(f"vary: node counts in {text!r} must be positive integers")
    else:
        cls, what = target.split(".")
        if cls not in spec.classes:
            raise InputError(f"vary: {spec.name} has no link class {cls!r} (classes: {', '.join(sorted(spec.classes))})")
        if what == "bandwidth" and any(not v > 0 for v in values):
            raise InputError(f"vary: bandwidths in {text!r} must be positive")
        if what == "latency" and any(v < 0 for v in values):
            raise InputError(f"vary: latencies in {text!r} must be >= 0")
    return Variation(target, tuple(values))


@dataclass(frozen=True)
class Point:
    settings: tuple[tuple[str, float], ...]
    spec: SystemSpec
    nodes: int

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v:g}" for k, v in self.settings)


def points(spec: SystemSpec, nodes: int, variations: Sequence[Variation]) -> list[Point]:
    """The Cartesian product of the variations' values, the first varying fastest.

    A target varied twice, or a value given twice, would make points that overwrite or
    repeat each other, so both are refused.

    Examples
    --------
    >>> from p2sim.topology import find_spec
    >>> points(find_spec("a100"), 2, [Variation("nodes", (2.0,)), Variation("nodes", (4.0,))])
    Traceback (most recent call last):
    ...
    p2sim.util.errors.InputError: vary: nodes is varied twice; give its values in one --vary nodes=V1,V2,..
    """
    seen: set[str] = set()
    for v in variations:
        if v.target in seen:
            raise InputError(f"vary: {v.target} is varied twice; give its values in one --vary {v.target}=V1,V2,..")
        seen.add(v.target)
        twice = sorted({x for x in v.values if v.values.count(x) > 1})
        if twice:
            raise InputError(f"vary: {v.target} lists the value {twice[0]:g} twice")
    out = []
    # the first variation varies fastest, so that consecutive points form its series
    order = list(reversed(variations))
    for rev in itertools.product(*[[(v.target, x) for x in v.values] for v in order]):
        combo = tuple(reversed(rev))
        s, n = spec, nodes
        for target, value in combo:
            if target == "nodes":
                n = int(value)
            else:
                cls, what = target.split(".")
                s = s.with_class(cls, **{what: value})
        out.append(Point(tuple(combo), s, n))
    return out


def resolve_axes(text: str | None, devices: int) -> tuple[int, ...]:
    """Axis sizes, where one ``*`` takes the devices the others leave."""
    if text is None:
        return (devices,)
    parts, _ = named_parts(text, "axes")  # data=*,tensor=16 as well as *,16
    stars = [i for i, p in enumerate(parts) if p == "*"]
    if len(stars) > 1:
        raise InputError("axes: at most one '*'")
    sizes = []
    for p in parts:
        if p == "*":
            sizes.append(0)
            continue
        try:
            sizes.append(int(p))
        except ValueError:
            raise InputError(f"axes: {p!r} is neither an integer nor '*'") from None
        if sizes[-1] < 1:
            raise InputError(f"axes: {p!r} must be positive")
    if stars:
        rest = math.prod(s for s in sizes if s)
        if devices % rest:
            raise PlacementError(f"axes: {text!r} cannot fill {devices} devices")
        sizes[stars[0]] = devices // rest
    return tuple(sizes)


def winner_key(matrix: Matrix, algo: str, program: str) -> tuple[Any, ...]:
    """What makes a winner: algorithm, program, and which levels each axis is split over.

    The levels (not the factors) keep the key comparable across node counts, where
    ``[[2 1] [1 16]]`` and ``[[4 1] [1 16]]`` are the same placement idea.
    """
    return (algo, program, tuple(tuple(x > 1 for x in row) for row in matrix))
