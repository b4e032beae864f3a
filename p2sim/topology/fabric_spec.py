"""The ``[fabric]`` table of a system file: the cluster above the node, for any node count.

A fabric is a stack of *tiers*, innermost first.  Tier ``t`` groups the nodes into switch
groups of ``nodes`` nodes each (the top tier, without ``nodes``, joins every node):

* the first tier's switches are the **leaves** the NICs are cabled to (``rails = R``:
  rail-optimised, NIC ``i`` of every node of a leaf group on leaf ``i mod R`` of that
  group; ``rails = 1``: all of a node's NICs on one leaf);
* every tier but the top one has **uplinks** to the next: ``oversubscription`` (down :
  up bandwidth, 1 = non-blocking) or ``uplinks`` (ports per switch group), each port of
  the link class named after the tier (its ``bandwidth`` the port speed, its
  ``latency`` one traversal);
* a tier joins the groups of the tier below either through its own switches
  (``connect = "clos"``, a fat tree's spine or core) or directly, every pair of groups
  by its share of their uplinks (``connect = "all-to-all"``: a dragonfly's switches
  inside a group, or its groups joined by global links).

``routing`` says how a flow crosses parallel links: ``adaptive`` spreads it evenly over
all of them (adaptive routing, packet spraying; a dragonfly's non-minimal paths), ``ecmp``
hashes each flow -- one per queue pair of a channel's connection, ``[nccl]
ib_qps_per_connection`` -- onto one uplink port of a Clos tier (every tier with its own seed,
``seed`` mixed with the tier's index: no polarization across tiers) and takes the direct links of
an all-to-all tier (minimal routing), so that flows can collide.  ``sharp =
true`` on a tier (or on the fabric) marks switches that reduce in the network (InfiniBand
SHARP, NCCL's CollNet).

Examples
--------
>>> f = parse_fabric({"rails": 8, "tiers": [{"name": "leaf", "nodes": 32}, {"name": "spine"}]},
...                  {"nic": 1, "leaf": 1}, "x.toml")
>>> [t.name for t in f.tiers], f.tiers[0].oversubscription, f.routing
(['leaf', 'spine'], 1.0, 'adaptive')
>>> parse_fabric({"tiers": [{"name": "leaf", "nodes": 32}, {"name": "spine"}]}, {"nic": 1}, "x.toml")
Traceback (most recent call last):
...
p2sim.util.errors.TopologyError: x.toml: fabric.tiers[0]: the leaf tier has uplinks, so it needs a link class 'leaf' in [classes] (their port speed); or make it the top tier (no nodes)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..util.errors import InputError, TopologyError
from . import ranges
from .ranges import MAX_OVERSUBSCRIPTION, MAX_UPLINKS

__all__ = ["Tier", "FabricSpec", "parse_fabric", "check_tiers", "check_ports", "uplink_ports", "ROUTINGS", "CONNECTS",
           "MAX_OVERSUBSCRIPTION", "MAX_PORTS_PER_NIC"]

ROUTINGS = ("adaptive", "ecmp")
CONNECTS = ("clos", "all-to-all")
GB = 1e9
# uplink ports of a switch group per NIC under it.  A NIC's cable carries at most 8 lanes (OSFP 800G:
# 8 x 100G), so broken out to the slowest ports it takes 8 at 1:1; the most uplinks per host port of a
# documented fabric are a dragonfly switch's (HPE Slingshot's Rosetta: 16 host ports, 48 to other
# switches, 3 per NIC; topologies/perlmutter.toml).  Beyond it an ECMP fabric's ports -- arrays per
# port -- would grow with a typed oversubscription, uplinks or port speed instead of with the nodes
MAX_PORTS_PER_NIC = 8


@dataclass(frozen=True)
class Tier:
    """One tier of a fabric (see the module docstring)."""

    name: str
    nodes: int | None  # nodes under one switch group; None: the top tier
    oversubscription: float | None = 1.0  # down : up bandwidth of a group's uplinks
    uplinks: float | None = None  # uplink ports per group (instead of oversubscription)
    connect: str = "clos"  # how this tier joins the groups of the tier below
    sharp: bool = False


@dataclass(frozen=True)
class FabricSpec:
    """Tiers innermost first; ``link`` is the class of the NIC-to-leaf cables."""

    tiers: tuple[Tier, ...]
    rails: int = 1
    routing: str = "adaptive"
    seed: int = 0
    link: str = "nic"

    def tier(self, name: str) -> Tier:
        return next(t for t in self.tiers if t.name == name)

    def index(self, name: str) -> int:
        """The position of a tier, innermost 0."""
        return next(i for i, t in enumerate(self.tiers) if t.name == name)

    def with_tier(self, name: str, **changes: Any) -> FabricSpec:
        """A copy with one tier changed (what-if studies)."""
        return replace(self, tiers=tuple(replace(t, **changes) if t.name == name else t for t in self.tiers))

    @property
    def sharp(self) -> bool:
        """Whether every tier reduces in the network (NCCL's CollNet needs the whole SHARP tree)."""
        return all(t.sharp for t in self.tiers)


def _fail(src: str, field: str, msg: str) -> TopologyError:
    return TopologyError(f"{src}: {field}: {msg}")


def _whole(src: str, field: str, v: Any, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise _fail(src, field, f"{v!r} must be a whole number >= {low}")
    return v


def _tier(src: str, i: int, raw: Any, top: bool, fabric_sharp: bool, classes: Mapping[str, Any]) -> Tier:
    f = f"fabric.tiers[{i}]"
    if not isinstance(raw, Mapping):
        raise _fail(src, f, "must be a table with at least a name")
    known = {"name", "nodes", "oversubscription", "uplinks", "connect", "sharp"}
    extra = sorted(set(raw) - known)
    if extra:
        raise _fail(src, f"{f}.{extra[0]}", f"unknown setting (known: {', '.join(sorted(known))})")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(src, f"{f}.name", f"{name!r} is not a name")
    if top and "nodes" in raw:
        raise _fail(src, f"{f}.nodes", "the top tier joins every node: it has no group size")
    if not top and "nodes" not in raw:
        raise _fail(src, f"{f}.nodes", "missing (every tier but the top one groups a number of nodes)")
    nodes = None if top else ranges.node_count(f"{src}: {f}.nodes", raw["nodes"])
    connect = raw.get("connect", "clos")
    if connect not in CONNECTS:
        raise _fail(src, f"{f}.connect", f"{connect!r} is not one of {', '.join(CONNECTS)}")
    if i == 0 and connect != "clos":
        raise _fail(src, f"{f}.connect", "the first tier's switches are the leaves the NICs plug into: it is clos")
    sharp = raw.get("sharp", fabric_sharp)
    if not isinstance(sharp, bool):
        raise _fail(src, f"{f}.sharp", f"{sharp!r} must be true or false")
    if sharp and connect != "clos":
        raise _fail(src, f"{f}.sharp", "SHARP reduces in the switches of a Clos tier; an all-to-all tier has none")
    if top:
        for k in ("oversubscription", "uplinks"):
            if k in raw:
                raise _fail(src, f"{f}.{k}", "the top tier has no uplinks")
        return Tier(name, None, None, None, connect, sharp)
    if "oversubscription" in raw and "uplinks" in raw:
        raise _fail(src, f"{f}.uplinks", "give oversubscription or uplinks, not both")
    if name not in classes:
        raise _fail(src, f, f"the {name} tier has uplinks, so it needs a link class {name!r} in [classes] (their port "
                             "speed); or make it the top tier (no nodes)")
    over = None if "uplinks" in raw else ranges.oversubscription(f"{src}: {f}.oversubscription",
                                                                 raw.get("oversubscription", 1.0))
    up = None if "uplinks" not in raw else ranges.whole(f"{src}: {f}.uplinks", raw["uplinks"], 1, MAX_UPLINKS,
                                                        "uplink ports")
    return Tier(name, nodes, over, up, connect, sharp)


def check_tiers(fabric: FabricSpec, src: str, error: type[InputError] = TopologyError) -> None:
    """Each tier's groups hold whole groups of the tier below, and more nodes than they do."""
    tiers = fabric.tiers
    for i in range(1, len(tiers) - 1):
        lo, hi = tiers[i - 1].nodes, tiers[i].nodes
        if hi % lo:
            raise error(f"{src}: fabric.tiers[{i}].nodes: {hi} is not a multiple of the {tiers[i - 1].name} tier's "
                        f"{lo} nodes (a group holds whole groups of the tier below)")
        if hi == lo:
            raise error(f"{src}: fabric.tiers[{i}].nodes: {hi} equals the {tiers[i - 1].name} tier's: a tier must "
                        "group more nodes than the one below")


def uplink_ports(fabric: FabricSpec, classes: Mapping[str, Any], nics: int) -> tuple[list[float], list[int]]:
    """Per tier below the top: one switch group's uplink capacity (bytes/s) and ports, for a node of ``nics``
    NICs (what :class:`~p2sim.topology.fabric.Fabric` builds; it depends on no node count).

    A leaf's uplink capacity is its NIC cables' over the oversubscription (or its ``uplinks``
    ports at the class's rate); a higher group's, its children's uplinks over its own.
    """
    R, sizes = fabric.rails, [t.nodes for t in fabric.tiers[:-1]]
    link = classes[fabric.link]
    cable = link.bandwidth * link.efficiency * GB
    down = (sizes[0] if sizes else 1) * max(1, nics // R) * cable
    capacity, ports = [], []
    for t, tier in enumerate(fabric.tiers[:-1]):
        cls = classes[tier.name]
        port = cls.bandwidth * cls.efficiency * GB
        up = tier.uplinks * port if tier.uplinks is not None else down / tier.oversubscription
        capacity.append(up)
        ports.append(max(1, round(up / port)))
        if t + 1 < len(sizes):  # the next group's children: its groups of this tier (leaves: every rail's)
            down = sizes[t + 1] // sizes[t] * (R if t == 0 else 1) * up
    return capacity, ports


def check_ports(fabric: FabricSpec, classes: Mapping[str, Any], nics: int, src: str,
                cause: str | None = None, error: type[InputError] = TopologyError) -> None:
    """Each switch group has at most MAX_PORTS_PER_NIC uplink ports per NIC under it.

    ``cause`` names what set the values (a ``--vary`` setting); without it the message names
    the tier's own field of the file ``src``.
    """
    _, ports = uplink_ports(fabric, classes, nics)
    per = max(1, nics // fabric.rails)
    for t, (tier, k) in enumerate(zip(fabric.tiers, ports)):
        under = tier.nodes * per * (1 if t == 0 else fabric.rails)
        if k > MAX_PORTS_PER_NIC * under:
            key = "uplinks" if tier.uplinks is not None else "oversubscription"
            head = cause or f"fabric.tiers[{t}].{key}: {getattr(tier, key):g}"
            rate = classes[tier.name].bandwidth
            raise error(f"{src}: {head} gives each {tier.name} group {k:,} uplink ports of {rate:g} GB/s for the "
                        f"{under:,} NICs under it, above the bound of {MAX_PORTS_PER_NIC * under:,} "
                        f"({MAX_PORTS_PER_NIC} per NIC: no fabric has more; docs/systems.md)")


def parse_fabric(raw: Any, classes: Mapping[str, Any], src: str) -> FabricSpec:
    """Validate the ``[fabric]`` table against the file's link classes."""
    if not isinstance(raw, Mapping):
        raise _fail(src, "fabric", "must be a table")
    known = {"tiers", "rails", "routing", "seed", "link", "sharp"}
    extra = sorted(set(raw) - known)
    if extra:
        raise _fail(src, f"fabric.{extra[0]}", f"unknown setting (known: {', '.join(sorted(known))})")
    tiers_raw = raw.get("tiers")
    if not isinstance(tiers_raw, list) or not tiers_raw:
        raise _fail(src, "fabric.tiers", "must be a list of tier tables, innermost (the leaves) first")
    sharp = raw.get("sharp", False)
    if not isinstance(sharp, bool):
        raise _fail(src, "fabric.sharp", f"{sharp!r} must be true or false")
    tiers = tuple(_tier(src, i, t, i == len(tiers_raw) - 1, sharp, classes) for i, t in enumerate(tiers_raw))
    names = [t.name for t in tiers]
    if len(set(names)) != len(names):
        raise _fail(src, "fabric.tiers", f"tier names must differ ({', '.join(names)})")
    check_tiers(FabricSpec(tiers), src)
    rails = _whole(src, "fabric.rails", raw.get("rails", 1), 1)
    if rails > 1 and len(tiers) == 1:
        raise _fail(src, "fabric.rails", f"{rails} rails need a tier above the leaves to join them")
    routing = raw.get("routing", "adaptive")
    if routing not in ROUTINGS:
        raise _fail(src, "fabric.routing", f"{routing!r} is not one of {', '.join(ROUTINGS)}")
    seed = _whole(src, "fabric.seed", raw.get("seed", 0), 0)
    link = raw.get("link", "nic")
    if link not in classes:
        raise _fail(src, "fabric.link", f"{link!r} is not a declared class (the NIC-to-leaf cables' class; "
                                        f"classes: {', '.join(sorted(classes))})")
    if link in names:
        raise _fail(src, "fabric.link", f"{link!r} is also a tier's uplink class")
    return FabricSpec(tiers, rails, routing, seed, link)
