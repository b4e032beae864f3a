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
from ..topology import ranges
from ..topology.fabric_spec import ROUTINGS, check_ports, check_tiers, uplink_ports
from ..topology.faults import UplinkFault, check_fault, parse_fault
from ..topology.nccl_env import ENV_KEYS, with_env
from ..topology.settings import IB_TRANSPORTS, MAX_QPS
from ..topology.spec import SystemSpec
from ..util.errors import InputError, PlacementError
from ..util.parsing import named_parts

__all__ = ["Variation", "parse_vary", "Point", "points", "resolve_axes", "apply_setting", "winner_key"]


@dataclass(frozen=True)
class Variation:
    """A target and its values: ``nodes``, ``CLASS.bandwidth`` / ``.latency``, a fabric tier's
    ``TIER.oversubscription`` / ``.nodes`` / ``.uplinks``, ``routing`` (adaptive, ecmp),
    ``qps_per_connection`` (``[nccl] ib_qps_per_connection``: the flows an ECMP fabric hashes), an NCCL
    environment variable (``NCCL_NVLS_ENABLE=0,1``, ``NCCL_PROTO=LL128,Simple``: one value a point, read as
    :mod:`p2sim.topology.nccl_env` reads a job's), or a fault: ``nodeN.COMPONENT.bandwidth``, ``nodeN.speed``
    (a slow node), ``TIERg.uplinks`` (one group's)."""

    target: str
    values: tuple[int | float | str, ...]


_VARY = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*=\s*(.+)$")
_TIER_KEYS = ("oversubscription", "nodes", "uplinks")


_TARGETS = ("CLASS.bandwidth, CLASS.latency, nodes, TIER.oversubscription, TIER.nodes, TIER.uplinks, routing, "
            "qps_per_connection, NCCL_* (NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE, NCCL_PROTO, NCCL_ALGO, ...), "
            "nodeN.COMPONENT.bandwidth, nodeN.speed, TIERg.uplinks")
QPS = "qps_per_connection"  # [nccl] ib_qps_per_connection, NCCL_IB_QPS_PER_CONNECTION


def _numbers(text: str, raw: str) -> list[float]:
    values = []
    for part in raw.split(","):
        try:
            values.append(float(part))
        except ValueError:
            raise InputError(f"--vary: {part.strip()!r} in {text!r} is not a number") from None
    return values


def _tier_setting(spec: SystemSpec, target: str) -> tuple[str, str] | None:
    """``(tier, key)`` when ``target`` is a tier's setting (a tier's exact name wins over ``TIERg.uplinks``)."""
    name, _, what = target.rpartition(".")
    tiers = [] if spec.fabric is None else [t.name for t in spec.fabric.tiers]
    return (name, what) if what in _TIER_KEYS and name in tiers else None


def _node_rates(spec: SystemSpec) -> list[float]:
    """The data-sheet rates (GB/s) of a node's links, its network cables included: what a slow node scales."""
    links = spec.node_links + spec.network_links
    rates = [ln.bandwidth if ln.bandwidth is not None else spec.classes[ln.cls].bandwidth for ln in links]
    return rates + ([spec.classes[spec.fabric.link].bandwidth] if spec.fabric is not None else [])


def _check_fault(spec: SystemSpec, target: str, values: list[float]) -> None:
    """Each value of a fault by the rule of the field it changes (:func:`~p2sim.topology.faults.check_fault`)."""
    fabric = spec.fabric
    tiers = [] if fabric is None else [t.name for t in fabric.tiers]
    for v in values:
        fault = parse_fault(target, v)
        ports = None
        if isinstance(fault, UplinkFault):
            if fault.tier not in tiers:
                raise InputError(f"--vary: {spec.name} has no fabric tier {fault.tier!r}"
                                 + (f" (tiers: {', '.join(tiers)})" if tiers else ""))
            t = tiers.index(fault.tier)
            if t == len(tiers) - 1:
                raise InputError(f"--vary: {fault.tier} is the top tier: it has no uplinks")
            ports = uplink_ports(fabric, spec.classes, sum(k == "nic" for _, k in spec.components))[1][t]
        check_fault(fault, f"--vary: {target}", _node_rates(spec), ports, InputError)


def parse_vary(text: str, spec: SystemSpec) -> Variation:
    """Parse one ``--vary`` against a system (the targets: :class:`Variation`).

    Every value obeys the range of the field it sets in a system file (:mod:`p2sim.topology.ranges`),
    and a message names ``--vary``, the target and the value.

    Examples
    --------
    >>> from p2sim.topology import find_spec
    >>> parse_vary("leaf.oversubscription=1,2,4", find_spec("superpod-h100"))
    Variation(target='leaf.oversubscription', values=(1.0, 2.0, 4.0))
    >>> parse_vary("routing=ecmp,adaptive", find_spec("superpod-h100")).values
    ('ecmp', 'adaptive')
    >>> parse_vary("leaf.oversubscription=inf", find_spec("superpod-h100"))
    Traceback (most recent call last):
    ...
    p2sim.util.errors.InputError: --vary: leaf.oversubscription: inf must be a number in [0.000976562, 1024] (down : up bandwidth of a switch group)
    """
    m = _VARY.match(text)
    if not m:
        raise InputError(f"--vary: {text!r} is not TARGET=V1,V2,.. ({_TARGETS})")
    target, raw = m.group(1), m.group(2)
    where = f"--vary: {target}"
    if target == "routing":
        if spec.fabric is None:
            raise InputError(f"--vary: routing: {spec.name} has no [fabric] to route over")
        values = [v.strip() for v in raw.split(",")]
        bad = [v for v in values if v not in ROUTINGS]
        if bad:
            raise InputError(f"--vary: routing {bad[0]!r} is not one of {', '.join(ROUTINGS)}")
        return Variation(target, tuple(values))
    if target in ENV_KEYS:  # an NCCL setting: each value checked as a job's environment is
        values = [v.strip() for v in raw.split(",")]
        for v in values:
            with_env(spec, ((target, v),), f"--vary {target}")
        return Variation(target, tuple(values))
    values = _numbers(text, raw)
    if target == QPS:
        if spec.fabric is None:
            raise InputError(f"--vary: {QPS}: {spec.name} has no [fabric] whose switches would hash the queue pairs")
        if spec.nccl.transport not in IB_TRANSPORTS:
            raise InputError(f"--vary: {QPS}: {spec.name}'s transport is {spec.nccl.transport}; queue pairs are "
                             f"NCCL's IB transport's ({', '.join(IB_TRANSPORTS)})")
        return Variation(target, tuple(ranges.whole(where, v, 1, MAX_QPS, "queue pairs per connection, "
                                                    "NCCL_IB_QPS_PER_CONNECTION", InputError) for v in values))
    if target == "nodes":
        return Variation(target, tuple(ranges.node_count(where, v, InputError) for v in values))  # counts, in JSON too
    tier = _tier_setting(spec, target)
    if tier is None and parse_fault(target, 1.0) is not None:
        _check_fault(spec, target, values)
        return Variation(target, tuple(values))
    name, _, what = target.rpartition(".")
    if tier is not None:
        if spec.fabric.tier(name).nodes is None:
            raise InputError(f"--vary: {name} is the top tier: it has no {what}")
        if what == "oversubscription":
            return Variation(target, tuple(ranges.oversubscription(where, v, InputError) for v in values))
        if what == "nodes":
            return Variation(target, tuple(ranges.node_count(where, v, InputError) for v in values))
        return Variation(target, tuple(ranges.whole(where, v, 1, ranges.MAX_UPLINKS, "uplink ports", InputError)
                                       for v in values))
    if what not in ("bandwidth", "latency"):
        raise InputError(f"--vary: {target!r} is not a target ({_TARGETS})")
    if name not in spec.classes:
        raise InputError(f"--vary: {spec.name} has no link class {name!r} (classes: {', '.join(sorted(spec.classes))})")
    check = ranges.bandwidth if what == "bandwidth" else ranges.latency
    return Variation(target, tuple(check(where, v, InputError) for v in values))


@dataclass(frozen=True)
class Point:
    settings: tuple[tuple[str, int | float | str], ...]
    spec: SystemSpec
    nodes: int

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.settings)


def apply_setting(spec: SystemSpec, target: str, value: float | str) -> SystemSpec:
    """The system with one what-if setting made (``nodes`` is not a system setting).

    What a setting implies beyond its own range -- tiers that still nest, a fabric's uplink
    ports within the physical bound (:func:`~p2sim.topology.fabric_spec.check_ports`) -- is
    checked on the result, in a message that names the setting.
    """
    if target == "routing":
        return spec.with_fabric(replace(spec.fabric, routing=value))
    if target == QPS:
        return replace(spec, nccl=replace(spec.nccl, ib_qps_per_connection=int(value)))
    if target in ENV_KEYS:
        return with_env(spec, ((target, str(value)),), f"--vary {target}")
    tier = _tier_setting(spec, target)
    fault = parse_fault(target, value) if tier is None and not isinstance(value, str) else None
    if fault is not None:
        return spec.with_fault(fault)
    name, _, what = target.rpartition(".")
    if tier is not None:
        changes = {"nodes": int(value)} if what == "nodes" else (
            {"oversubscription": float(value), "uplinks": None} if what == "oversubscription"
            else {"uplinks": float(value), "oversubscription": None})
        fabric = spec.fabric.with_tier(name, **changes)
        check_tiers(fabric, f"--vary {target}={value:g}", InputError)
        out = spec.with_fabric(fabric)
    else:
        out = spec.with_class(name, **{what: value})
    if out.fabric is not None:
        check_ports(out.fabric, out.classes, sum(k == "nic" for _, k in out.components), "--vary",
                    f"{target}={value:g}", InputError)
    return out


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
    p2sim.util.errors.InputError: --vary: nodes is varied twice; give its values in one --vary nodes=V1,V2,..
    """
    seen: set[str] = set()
    for v in variations:
        if v.target in seen:
            raise InputError(f"--vary: {v.target} is varied twice; give its values in one --vary {v.target}=V1,V2,..")
        seen.add(v.target)
        twice = sorted({x for x in v.values if v.values.count(x) > 1}, key=str)
        if twice:
            shown = f"{twice[0]:g}" if isinstance(twice[0], float) else twice[0]
            raise InputError(f"--vary: {v.target} lists the value {shown} twice")
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
