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
from dataclasses import dataclass, replace
from typing import Any

from ..formalism.placement import Matrix
from ..topology.fabric_spec import ROUTINGS, check_tiers
from ..topology.faults import NodeFault, UplinkFault, parse_fault
from ..topology.settings import MAX_BANDWIDTH_GBPS
from ..topology.spec import SystemSpec
from ..util.errors import InputError, PlacementError
from ..util.parsing import named_parts

__all__ = ["Variation", "parse_vary", "Point", "points", "resolve_axes", "apply_setting", "winner_key"]


@dataclass(frozen=True)
class Variation:
    """A target and its values: ``nodes``, ``CLASS.bandwidth`` / ``.latency``, a fabric tier's
    ``TIER.oversubscription`` / ``.nodes`` / ``.uplinks``, ``routing`` (adaptive, ecmp), or a fault:
    ``nodeN.COMPONENT.bandwidth``, ``nodeN.speed`` (a slow node), ``TIERg.uplinks`` (one group's)."""

    target: str
    values: tuple[int | float | str, ...]


_VARY = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*=\s*(.+)$")
_TIER_KEYS = ("oversubscription", "nodes", "uplinks")


def _numbers(text: str, raw: str) -> list[float]:
    values = []
    for part in raw.split(","):
        try:
            values.append(float(part))
        except ValueError:
            raise InputError(f"vary: {part.strip()!r} in {text!r} is not a number") from None
    return values


def parse_vary(text: str, spec: SystemSpec) -> Variation:
    """Parse one ``--vary`` against a system (the targets: :class:`Variation`).

    Examples
    --------
    >>> from p2sim.topology import find_spec
    >>> parse_vary("leaf.oversubscription=1,2,4", find_spec("superpod-h100"))
    Variation(target='leaf.oversubscription', values=(1.0, 2.0, 4.0))
    >>> parse_vary("routing=ecmp,adaptive", find_spec("superpod-h100")).values
    ('ecmp', 'adaptive')
    """
    m = _VARY.match(text)
    if not m:
        raise InputError(f"vary: {text!r} is not TARGET=V1,V2,.. (CLASS.bandwidth, CLASS.latency, nodes, TIER.oversubscription, "
                         "TIER.nodes, TIER.uplinks, routing, nodeN.COMPONENT.bandwidth, nodeN.speed, TIERg.uplinks)")
    target, raw = m.group(1), m.group(2)
    fabric = spec.fabric
    tiers = [] if fabric is None else [t.name for t in fabric.tiers]
    if target == "routing":
        if fabric is None:
            raise InputError(f"vary: routing: {spec.name} has no [fabric] to route over")
        values = [v.strip() for v in raw.split(",")]
        bad = [v for v in values if v not in ROUTINGS]
        if bad:
            raise InputError(f"vary: routing {bad[0]!r} is not one of {', '.join(ROUTINGS)}")
        return Variation(target, tuple(values))
    values = _numbers(text, raw)
    if target == "nodes":
        if any(v != int(v) or v < 1 for v in values):
            raise InputError(f"vary: node counts in {text!r} must be positive integers")
        return Variation(target, tuple(int(v) for v in values))  # counts, in JSON and CSV too
    fault = parse_fault(target, 1.0)
    if fault is not None:
        if isinstance(fault, NodeFault) and fault.component is None:
            if any(not 0 < v <= 1e3 for v in values):
                raise InputError(f"vary: a node's speed in {text!r} is a factor in (0, 1000]")
        elif any(not 0 < v <= MAX_BANDWIDTH_GBPS for v in values):
            raise InputError(f"vary: values in {text!r} must be positive (GB/s, or ports)")
        if isinstance(fault, UplinkFault) and fault.tier not in tiers:
            raise InputError(f"vary: {spec.name} has no fabric tier {fault.tier!r}"
                             + (f" (tiers: {', '.join(tiers)})" if tiers else ""))
        return Variation(target, tuple(values))
    name, _, what = target.rpartition(".")
    if what in _TIER_KEYS and name in tiers:
        if fabric.tier(name).nodes is None:
            raise InputError(f"vary: {name} is the top tier: it has no {what}")
        if any(not v > 0 for v in values) or (what in ("nodes", "uplinks") and any(v != int(v) for v in values)):
            raise InputError(f"vary: {what} in {text!r} must be positive" + (" integers" if what != "oversubscription"
                                                                              else ""))
        return Variation(target, tuple(int(v) if what in ("nodes", "uplinks") else v for v in values))
    if what not in ("bandwidth", "latency"):
        raise InputError(f"vary: {target!r} is not a target (CLASS.bandwidth, CLASS.latency, nodes, TIER.oversubscription, "
                         "TIER.nodes, TIER.uplinks, routing, nodeN.COMPONENT.bandwidth, nodeN.speed, TIERg.uplinks)")
    if name not in spec.classes:
        raise InputError(f"vary: {spec.name} has no link class {name!r} (classes: {', '.join(sorted(spec.classes))})")
    if what == "bandwidth" and any(not v > 0 for v in values):
        raise InputError(f"vary: bandwidths in {text!r} must be positive")
    if what == "latency" and any(v < 0 for v in values):
        raise InputError(f"vary: latencies in {text!r} must be >= 0")
    return Variation(target, tuple(values))


@dataclass(frozen=True)
class Point:
    settings: tuple[tuple[str, int | float | str], ...]
    spec: SystemSpec
    nodes: int

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.settings)


def apply_setting(spec: SystemSpec, target: str, value: float | str) -> SystemSpec:
    """The system with one what-if setting made (``nodes`` is not a system setting)."""
    if target == "routing":
        return spec.with_fabric(replace(spec.fabric, routing=value))
    fault = parse_fault(target, value) if not isinstance(value, str) else None
    if fault is not None:
        return spec.with_fault(fault)
    name, _, what = target.rpartition(".")
    if what in _TIER_KEYS and spec.fabric is not None and name in [t.name for t in spec.fabric.tiers]:
        changes = {"nodes": int(value)} if what == "nodes" else (
            {"oversubscription": float(value), "uplinks": None} if what == "oversubscription"
            else {"uplinks": float(value), "oversubscription": None})
        fabric = spec.fabric.with_tier(name, **changes)
        check_tiers(fabric, f"vary {target}={value:g}")
        return spec.with_fabric(fabric)
    return spec.with_class(name, **{what: value})


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
        twice = sorted({x for x in v.values if v.values.count(x) > 1}, key=str)
        if twice:
            shown = f"{twice[0]:g}" if isinstance(twice[0], float) else twice[0]
            raise InputError(f"vary: {v.target} lists the value {shown} twice")
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
                s = apply_setting(s, target, value)
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
