"""System files: the TOML description of a hierarchy and its interconnect.

A system file describes one node (its GPUs, switches, CPUs, NICs and the links
between them) and the network that joins the nodes; :func:`load_spec` validates it
into a :class:`SystemSpec`, a frozen value that :mod:`p2sim.topology.graph` turns
into a graph for any node count.  The format is documented in the README.

Names may hold one bracketed range list: ``gpu[0-3]`` is ``gpu0 .. gpu3`` and
``gpu[1-3,0]`` is ``gpu1, gpu2, gpu3, gpu0``.  A link's pair ``[A, B]`` joins the
expanded names pairwise when both sides have the same length, or each name of one
side with the single name of the other.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..util.errors import TopologyError
from ..util.fileio import read_text
from . import ranges
from .efficiency import LINK_KINDS, complete_classes
from .faults import Fault
from .fabric_spec import FabricSpec, check_ports, parse_fabric
from .ranges import MAX_NODES
from .settings import (ASSUMED_TRANSPORTS, IB_TRANSPORTS, REPORTING_TRANSPORTS, TRANSPORT_ASSUMPTIONS, ModelRates,
                       NcclSettings, parse_nccl, parse_rates)

__all__ = ["LinkClass", "LinkSpec", "Level", "SystemSpec", "load_spec", "parse_spec", "expand_names", "KINDS",
           "TOP_LEVEL_KEYS", "MAX_NODES", "MAX_GPUS_PER_NODE"]

# memory: a CPU socket's DRAM, through which the SHM transport stages data between GPUs
# that may not use peer-to-peer (and GPUs and NICs without GPUDirect RDMA)
KINDS = ("gpu", "nvswitch", "pcie_switch", "cpu", "memory", "nic", "network_switch")
TOP_LEVEL_KEYS = ("name", "description", "default_nodes", "notes", "levels", "classes", "gpu", "node", "network",
                  "fabric", "nccl", "model")
MAX_SYSTEM_BYTES = 16 * 2**20  # a system file describes one node and a fabric: a few KiB
# the largest node p2sim builds (one node of 1,024 GPUs in about 10 s; the largest NVLink domains hold 576);
# MAX_NODES, the most nodes, is in .ranges
MAX_GPUS_PER_NODE = 1024


@dataclass(frozen=True)
class LinkClass:
    """A class of links that a what-if study or a calibration varies as a whole.

    ``bandwidth`` is the data-sheet rate in GB/s per direction, ``latency`` microseconds
    per traversal, ``efficiency`` the share of the rate that NCCL's transfers achieve
    (protocol and encoding overheads; each file cites where its figure comes from).
    The graph's capacity is ``bandwidth x efficiency``.
    """

    name: str
    bandwidth: float
    latency: float
    efficiency: float = 1.0
    kind: str = ""  # nvlink, pcie, c2c, host, memory or network (from the file, or what its links join)
    efficiency_from: str = field(default="file", compare=False)  # where a default efficiency comes from

    @property
    def capacity(self) -> float:
        """Effective GB/s per direction."""
        return self.bandwidth * self.efficiency


@dataclass(frozen=True)
class LinkSpec:
    """Full-duplex links of one class between expanded name pairs."""

    cls: str
    pairs: tuple[tuple[str, str], ...]
    bandwidth: float | None = None  # overrides the class figure for these links
    latency: float | None = None


@dataclass(frozen=True)
class Level:
    name: str
    cardinality: int | None  # None: the node level, or a fabric tier's level (set by the node count)
    tier: str | None = None  # a fabric tier whose groups this level counts


@dataclass(frozen=True)
class SystemSpec:
    """A validated system file.  ``source`` is the file it came from (for messages)."""

    name: str
    description: str
    source: str
    levels: tuple[Level, ...]
    default_nodes: int
    classes: Mapping[str, LinkClass]
    gpus: tuple[str, ...]
    components: tuple[tuple[str, str], ...]  # (name, kind) inside one node
    node_links: tuple[LinkSpec, ...]
    network_components: tuple[tuple[str, str], ...]
    network_links: tuple[LinkSpec, ...]
    nccl: NcclSettings = field(default_factory=NcclSettings)
    rates: ModelRates = field(default_factory=ModelRates)  # per-channel caps (calibration fits them)
    nvls_switches: frozenset[str] = frozenset()  # NVSwitches with NVLink SHARP (multicast and reduction)
    notes: str = ""  # provenance, e.g. what a calibration was fitted on
    fabric: FabricSpec | None = None  # the tiers above the node (None: the [network] components)
    # what the file left to defaults that change a prediction (p2sim topo says); not part of the system's value
    assumed: tuple[str, ...] = field(default=(), compare=False)
    faults: tuple[Fault, ...] = ()  # parts slower than the file says (what-if studies)

    @property
    def node_level(self) -> int:
        return next(i for i, lv in enumerate(self.levels) if lv.cardinality is None and lv.tier is None)

    def hierarchy(self, nodes: int) -> tuple[int, ...]:
        """Level cardinalities with the node level set to ``nodes``: a fabric tier's level counts its groups in the
        enclosing level's group, the node level one innermost group's nodes; a partial last group (as clusters
        have) makes the level count one and the node level every node (the fabric keeps it: :meth:`partial_group`)."""
        return self._levels_of(nodes)[0]

    def partial_group(self, nodes: int) -> str | None:
        """Why ``nodes`` gives placements no hierarchy (a level's fabric groups, the last partial), else None."""
        return self._levels_of(nodes)[1]

    def _levels_of(self, nodes: int) -> tuple[tuple[int, ...], str | None]:
        out, enclosing, partial = [], nodes, None
        for lv in self.levels:  # a level never names the top tier (parse_spec): a tier level has a group size
            size = None if lv.tier is None or self.fabric is None else self.fabric.tier(lv.tier).nodes
            if size is None:
                out.append(enclosing if lv.cardinality is None else lv.cardinality)
            elif enclosing <= size or not enclosing % size:
                out.append(max(1, enclosing // size))
                enclosing = min(enclosing, size)
            else:
                partial = partial or (f"{nodes} nodes is not a whole number of the {lv.tier} tier's groups of {size} "
                                      f"nodes (the level {lv.name!r} counts them; the last has {enclosing % size})")
                out.append(1)
        return tuple(out), partial

    def node_count(self, nodes: int) -> int:
        """How many node instances a hierarchy with ``nodes`` at the node level has."""
        return math.prod(self.hierarchy(nodes)[: self.node_level + 1])

    def with_class(self, name: str, bandwidth: float | None = None, latency: float | None = None) -> SystemSpec:
        """A copy with one link class changed; per-link overrides of that class are dropped."""
        if name not in self.classes:
            raise TopologyError(f"{self.source}: no link class {name!r} (classes: {', '.join(sorted(self.classes))})")
        old = self.classes[name]
        new = replace(old, bandwidth=old.bandwidth if bandwidth is None else bandwidth,
                      latency=old.latency if latency is None else latency)
        ranges.bandwidth(f"{self.source}: classes.{name}.bandwidth", new.bandwidth)
        ranges.latency(f"{self.source}: classes.{name}.latency", new.latency)

        def strip(links: tuple[LinkSpec, ...]) -> tuple[LinkSpec, ...]:
            return tuple(
                replace(ln, bandwidth=None if bandwidth is not None else ln.bandwidth,
                        latency=None if latency is not None else ln.latency) if ln.cls == name else ln
                for ln in links
            )

        classes = dict(self.classes)
        classes[name] = new
        return replace(self, classes=classes, node_links=strip(self.node_links), network_links=strip(self.network_links))

    def with_fabric(self, fabric: FabricSpec) -> SystemSpec:
        """A copy with another fabric (what-if studies vary a tier or the routing)."""
        return replace(self, fabric=fabric)

    def with_fault(self, fault: Fault) -> SystemSpec:
        """A copy with one more fault (replacing one of the same part)."""
        return replace(self, faults=tuple(f for f in self.faults if f.label != fault.label) + (fault,))


_RANGE = re.compile(r"^([^\[\]]*)\[([0-9,\- ]+)\]([^\[\]]*)$")


def expand_names(pattern: str) -> list[str]:
    """Expand one bracketed range list.

    Examples
    --------
    >>> expand_names("gpu[0-2]"), expand_names("gpu[1-2,0]"), expand_names("nic")
    (['gpu0', 'gpu1', 'gpu2'], ['gpu1', 'gpu2', 'gpu0'], ['nic'])
    """
    m = _RANGE.match(pattern)
    if not m:
        if "[" in pattern or "]" in pattern:
            raise ValueError(f"name {pattern!r} has a malformed range")
        return [pattern]
    out = []
    for part in m.group(2).split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = (int(x) for x in part.split("-", 1))
            if hi < lo:
                raise ValueError(f"name {pattern!r} has a descending range {part}")
            out += [f"{m.group(1)}{i}{m.group(3)}" for i in range(lo, hi + 1)]
        elif part:
            out.append(f"{m.group(1)}{int(part)}{m.group(3)}")
    return out


def _get(src: str, table: Mapping[str, Any], key: str, field: str, kind: type | tuple[type, ...]) -> Any:
    if key not in table:
        raise TopologyError(f"{src}: {field}: missing")
    v = table[key]
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise TopologyError(f"{src}: {field}: {v!r} has the wrong type")
    return v


def _names(src: str, field: str, pattern: Any) -> list[str]:
    if not isinstance(pattern, str) or not pattern:
        raise TopologyError(f"{src}: {field}: {pattern!r} is not a name")
    try:
        return expand_names(pattern)
    except ValueError as e:
        raise TopologyError(f"{src}: {field}: {e}") from None


def _components(src: str, field: str, raw: Any, nvls: dict[str, bool] | None = None) -> list[tuple[str, str]]:
    """Components of a list of ``{name, kind}`` tables; an NVSwitch's ``nvls = true / false`` goes into ``nvls``."""
    if not isinstance(raw, list):
        raise TopologyError(f"{src}: {field}: must be a list of {{name, kind}} tables")
    out = []
    for i, c in enumerate(raw):
        f = f"{field}[{i}]"
        if not isinstance(c, dict):
            raise TopologyError(f"{src}: {f}: must be a table with name and kind")
        extra = sorted(set(c) - {"name", "kind", "nvls"})
        if extra:
            raise TopologyError(f"{src}: {f}.{extra[0]}: unknown setting (name, kind, nvls)")
        kind = _get(src, c, "kind", f"{f}.kind", str)
        if kind not in KINDS or kind == "gpu":
            raise TopologyError(f"{src}: {f}.kind: {kind!r} is not one of {', '.join(k for k in KINDS if k != 'gpu')}")
        names = _names(src, f"{f}.name", c.get("name"))
        flag = c.get("nvls")
        if flag is not None and (not isinstance(flag, bool) or kind != "nvswitch" or nvls is None):
            raise TopologyError(f"{src}: {f}.nvls: {flag!r} (NVLink SHARP is a setting of a node's nvswitch, true or false)")
        if flag is not None:
            nvls.update(dict.fromkeys(names, flag))
        out += [(n, kind) for n in names]
    return out


def _links(src: str, field: str, raw: Any, classes: Mapping[str, LinkClass]) -> list[LinkSpec]:
    if not isinstance(raw, list):
        raise TopologyError(f"{src}: {field}: must be a list of link tables")
    out = []
    for i, ln in enumerate(raw):
        f = f"{field}[{i}]"
        if not isinstance(ln, dict):
            raise TopologyError(f"{src}: {f}: must be a table")
        cls = _get(src, ln, "class", f"{f}.class", str)
        if cls not in classes:
            raise TopologyError(f"{src}: {f}.class: {cls!r} is not a declared class ({', '.join(sorted(classes))})")
        extra = sorted(set(ln) - {"class", "pairs", "bandwidth", "latency"})
        if extra:
            raise TopologyError(f"{src}: {f}.{extra[0]}: unknown setting (class, pairs, bandwidth, latency)")
        pairs_raw = _get(src, ln, "pairs", f"{f}.pairs", list)
        pairs: list[tuple[str, str]] = []
        for j, pr in enumerate(pairs_raw):
            if not isinstance(pr, list) or len(pr) != 2:
                raise TopologyError(f"{src}: {f}.pairs[{j}]: must be a pair [A, B]")
            a = _names(src, f"{f}.pairs[{j}]", pr[0])
            b = _names(src, f"{f}.pairs[{j}]", pr[1])
            if len(a) == len(b):
                pairs += list(zip(a, b))
            elif len(a) == 1 or len(b) == 1:
                pairs += [(x, y) for x in a for y in b]
            else:
                raise TopologyError(f"{src}: {f}.pairs[{j}]: {len(a)} names cannot pair with {len(b)}")
        bw = ln.get("bandwidth")
        lat = ln.get("latency")
        out.append(LinkSpec(
            cls, tuple(pairs),
            None if bw is None else ranges.bandwidth(f"{src}: {f}.bandwidth", bw),
            None if lat is None else ranges.latency(f"{src}: {f}.latency", lat),
        ))
    return out


def parse_spec(doc: Mapping[str, Any], source: str) -> SystemSpec:
    """Validate a parsed TOML document; every error names ``source`` and the field."""
    src = source
    extra = sorted(set(doc) - set(TOP_LEVEL_KEYS))
    if extra:
        raise TopologyError(f"{src}: {extra[0]}: unknown top-level key (known: {', '.join(TOP_LEVEL_KEYS)})")
    name = _get(src, doc, "name", "name", str)
    for key in ("description", "notes"):  # words a reader reads: a number there is a mistake, not a description
        if key in doc and not isinstance(doc[key], str):
            raise TopologyError(f"{src}: {key}: {doc[key]!r} should be text (words that describe the system)")
    levels_raw = _get(src, doc, "levels", "levels", list)
    levels = []
    for i, lv in enumerate(levels_raw):
        if not isinstance(lv, dict):
            raise TopologyError(f"{src}: levels[{i}]: must be a table with name and cardinality")
        extra = sorted(set(lv) - {"name", "cardinality", "fabric"})
        if extra:
            raise TopologyError(f"{src}: levels[{i}].{extra[0]}: unknown setting (name, cardinality, fabric)")
        if "fabric" in lv:
            if "cardinality" in lv:
                raise TopologyError(f"{src}: levels[{i}].cardinality: a fabric level counts its tier's groups; "
                                    "give fabric or cardinality, not both")
            tier = _get(src, lv, "fabric", f"levels[{i}].fabric", str)
            levels.append(Level(_get(src, lv, "name", f"levels[{i}].name", str), None, tier))
            continue
        card = _get(src, lv, "cardinality", f"levels[{i}].cardinality", (int, str))
        if isinstance(card, str):
            if card != "nodes":
                raise TopologyError(f"{src}: levels[{i}].cardinality: {card!r} is neither an integer nor \"nodes\"")
            card = None
        elif card < 1:
            raise TopologyError(f"{src}: levels[{i}].cardinality: {card} must be >= 1")
        levels.append(Level(_get(src, lv, "name", f"levels[{i}].name", str), card))
    _check_level_names(src, levels)
    node_levels = [i for i, lv in enumerate(levels) if lv.cardinality is None and lv.tier is None]
    if len(node_levels) != 1:
        raise TopologyError(f"{src}: levels: exactly one level needs cardinality = \"nodes\" (found {len(node_levels)})")
    default_nodes = ranges.node_count(f"{src}: default_nodes", doc.get("default_nodes", 2))

    classes_raw = _get(src, doc, "classes", "classes", dict)
    classes = {}
    for cname, c in classes_raw.items():
        if not isinstance(c, dict):
            raise TopologyError(f"{src}: classes.{cname}: must be a table with bandwidth and latency")
        if "bandwidth" not in c:
            raise TopologyError(f"{src}: classes.{cname}.bandwidth: missing")
        extra = sorted(set(c) - {"bandwidth", "latency", "efficiency", "kind"})
        if extra:
            raise TopologyError(f"{src}: classes.{cname}.{extra[0]}: unknown setting (bandwidth, latency, efficiency, "
                                "kind)")
        kind = c.get("kind", "")
        if kind and kind not in LINK_KINDS:
            raise TopologyError(f"{src}: classes.{cname}.kind: {kind!r} is not one of {', '.join(LINK_KINDS)}")
        classes[cname] = LinkClass(
            cname,
            ranges.bandwidth(f"{src}: classes.{cname}.bandwidth", c["bandwidth"]),
            ranges.latency(f"{src}: classes.{cname}.latency", c.get("latency", 0.0)),
            ranges.efficiency(f"{src}: classes.{cname}.efficiency", c["efficiency"]) if "efficiency" in c else -1.0,
            kind,
        )

    node = _get(src, doc, "node", "node", dict)
    extra = sorted(set(node) - {"gpus", "components", "links"})
    if extra:
        raise TopologyError(f"{src}: node.{extra[0]}: unknown setting (gpus, components, links)")
    gpus = tuple(_names(src, "node.gpus", node.get("gpus")))
    per_node = math.prod(lv.cardinality or 1 for lv in levels[node_levels[0] + 1 :])
    if len(gpus) > MAX_GPUS_PER_NODE:
        raise TopologyError(f"{src}: node.gpus: {len(gpus)} GPUs in one node, more than the {MAX_GPUS_PER_NODE} p2sim "
                            "builds (the largest NVLink domains hold 576)")
    if len(gpus) != per_node:
        raise TopologyError(
            f"{src}: node.gpus: {len(gpus)} GPUs, but the levels below the node level hold {per_node}"
        )
    nvls: dict[str, bool] = {}
    comps = _components(src, "node.components", node.get("components", []), nvls)
    node_links = _links(src, "node.links", node.get("links", []), classes)
    net = doc.get("network", {})
    if not isinstance(net, dict):
        raise TopologyError(f"{src}: network: must be a table")
    extra = sorted(set(net) - {"components", "links", "transport", "step_latency", "net_latency", "unpack"})
    if extra:
        raise TopologyError(f"{src}: network.{extra[0]}: unknown setting (components, links, transport, step_latency, "
                            "net_latency, unpack)")
    net_comps = _components(src, "network.components", net.get("components", []))
    net_links = _links(src, "network.links", net.get("links", []), classes)
    fabric = None if "fabric" not in doc else parse_fabric(doc["fabric"], classes, src)
    _check_fabric_levels(src, levels, fabric, node_levels[0])
    if fabric is not None and (net_comps or net_links):
        raise TopologyError(f"{src}: network.components: a file with a [fabric] describes its network there; "
                            "[network] keeps only the transport")

    local = set(gpus) | {c for c, _ in comps}
    if len(local) != len(gpus) + len(comps):
        raise TopologyError(f"{src}: node: component names are not unique ({_twice(list(gpus) + [c for c, _ in comps])} "
                            "names two)")
    glob = {c for c, _ in net_comps}
    if len(glob) != len(net_comps):
        raise TopologyError(f"{src}: network.components: component names are not unique "
                            f"({_twice([c for c, _ in net_comps])} names two)")
    if glob & local:
        raise TopologyError(f"{src}: network.components: {sorted(glob & local)[0]!r} is also a node component")
    for li, ln in enumerate(node_links):
        for a, b in ln.pairs:
            for x in (a, b):
                if x not in local:
                    raise TopologyError(f"{src}: node.links[{li}].pairs: {x!r} is not a GPU or component of the node")
    for li, ln in enumerate(net_links):
        for a, b in ln.pairs:
            for x in (a, b):
                if x not in local and x not in glob:
                    raise TopologyError(f"{src}: network.links[{li}].pairs: {x!r} is not a component")
            if a in local and b in local:
                raise TopologyError(f"{src}: network.links[{li}].pairs: {a!r}-{b!r} joins two node components")

    assumed: list[str] = []
    nccl = parse_nccl(doc.get("nccl", {}), net, doc.get("gpu", {}), src, assumed)
    kinds = dict(comps) | {g: "gpu" for g in gpus} | dict(net_comps)
    classes = complete_classes(src, classes, kinds, node_links, net_links, fabric, nccl.cc, assumed)
    if fabric is not None:
        check_ports(fabric, classes, sum(k == "nic" for _, k in comps), src)
    switches = [c for c, k in comps if k == "nvswitch"]
    nvls_on = {s for s in switches if nvls.get(s, nccl.cc >= 90)}
    if nvls_on - {s for s in switches if s in nvls}:
        assumed.append(f"NVLink SHARP on {', '.join(sorted(nvls_on - set(nvls)))} (NCCL enables NVLS on an NVSwitch "
                       "from Hopper on; nvls = false on the component turns it off)")
    if "transport" not in net:
        assumed.append(f"network transport {nccl.transport} ([network] transport not given)")
    if nccl.transport in ASSUMED_TRANSPORTS and (nccl.step_latency is None or (
            nccl.net_latency is None and nccl.transport in REPORTING_TRANSPORTS)):
        assumed.append(TRANSPORT_ASSUMPTIONS[nccl.transport])
    if (fabric is not None and fabric.routing == "ecmp" and nccl.transport in IB_TRANSPORTS
            and "ib_qps_per_connection" not in doc.get("nccl", {})):
        assumed.append(f"{nccl.ib_qps_per_connection} queue pair per connection, NCCL_IB_QPS_PER_CONNECTION's default "
                       "(net_ib/connect.cc): the ECMP hash sees one flow per channel and NIC pair ([nccl] "
                       "ib_qps_per_connection)")
    nics = {c for c, k in comps if k == "nic"}
    for h in nccl.hca:
        if h not in nics:
            raise TopologyError(f"{src}: nccl.hca: {h!r} is not a NIC of the node ({', '.join(sorted(nics)) or 'none'})")
    rates = parse_rates(doc.get("model", {}), src)

    return SystemSpec(
        nccl=nccl,
        rates=rates,
        nvls_switches=frozenset(nvls_on),
        assumed=tuple(assumed),
        notes=str(doc.get("notes", "")),
        name=name,
        description=str(doc.get("description", "")),
        source=src,
        levels=tuple(levels),
        default_nodes=default_nodes,
        classes=classes,
        gpus=gpus,
        components=tuple(comps),
        node_links=tuple(node_links),
        network_components=tuple(net_comps),
        network_links=tuple(net_links),
        fabric=fabric,
    )


def _twice(names: list[str]) -> str:
    """The first name that appears twice, quoted."""
    return repr(next(n for i, n in enumerate(names) if n in names[:i]))


def _check_level_names(src: str, levels: list[Level]) -> None:
    """Users address levels by name (matrices' columns, --emit's mesh axes): each names one level."""
    for i, lv in enumerate(levels):
        if not lv.name.strip():
            raise TopologyError(f"{src}: levels[{i}].name: {lv.name!r} is not a name")
        first = next(j for j, other in enumerate(levels) if other.name == lv.name)
        if first != i:
            raise TopologyError(f"{src}: levels[{first}] and levels[{i}] are both named {lv.name!r}: each level needs "
                                "its own name (matrices and --emit address levels by name)")


def _check_fabric_levels(src: str, levels: list[Level], fabric: FabricSpec | None, node_level: int) -> None:
    """Fabric levels sit directly above the node level, outermost tier first, each a tier with groups."""
    tiered = [(i, lv) for i, lv in enumerate(levels) if lv.tier is not None]
    if not tiered:
        return
    i, lv = tiered[0]
    if fabric is None:
        raise TopologyError(f"{src}: levels[{i}].fabric: {lv.tier!r} names a tier, but the file has no [fabric]")
    if [j for j, _ in tiered] != list(range(node_level - len(tiered), node_level)) or node_level != len(tiered):
        raise TopologyError(f"{src}: levels[{i}].fabric: fabric levels come first, one after another, directly "
                            "above the node level")
    names = [t.name for t in fabric.tiers]
    positions = []
    for j, lv in tiered:
        if lv.tier not in names:
            raise TopologyError(f"{src}: levels[{j}].fabric: {lv.tier!r} is not a tier ({', '.join(names)})")
        if fabric.tier(lv.tier).nodes is None:
            raise TopologyError(f"{src}: levels[{j}].fabric: the top tier {lv.tier!r} is a single group; a level "
                                "counts the groups of a tier below it")
        positions.append(names.index(lv.tier))
    if positions != sorted(positions, reverse=True) or len(set(positions)) != len(positions):
        raise TopologyError(f"{src}: levels: fabric levels go from the outermost tier inwards, each tier once")


def load_spec(path: str | Path) -> SystemSpec:
    """Read and validate one system file."""
    p = Path(path)
    text = read_text(p, "system file", TopologyError, limit=MAX_SYSTEM_BYTES, pipes=True)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(f"{p}: not valid TOML: {e}") from None
    return parse_spec(doc, str(p))
