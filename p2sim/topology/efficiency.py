"""NCCL's own link figures: what share of a link's data-sheet rate NCCL's transfers count on.

A system file states data-sheet speeds; NCCL's topology code counts less on some links,
and p2sim uses NCCL's figures unless the file gives a class's ``efficiency`` itself:

* **NVLink** (a GPU joined to a GPU or to an NVSwitch): ``ncclTopoNVLinkBw`` in
  ``src/graph/topo.h`` -- per link 18 GB/s of 20 (compute capability 6.x), 20 of 25 (7.x,
  8.x), 12 of 14.0625 (8.6, GA102), 20.6 of 25 (9.x), 40.1 of 50 (10.0 and later);
  NCCL's maintainers: "the app-level bandwidth is roughly 80% of the peak bandwidth"
  (NVIDIA/nccl#1054).
* **PCIe** (anything through a PCIe switch, or a GPU or NIC on a CPU's root port):
  ``ncclTopoAddPci`` in ``src/graph/topo.cc`` counts ``width x speed / 80`` -- 12, 24, 48
  GB/s for gen3, 4, 5 x16, three quarters of the raw 16, 32, 64 GB/s.
* **Network** (NIC cables, switch links): NCCL counts a NIC's reported speed as is
  (``speed / 8000`` GB/s, ``ncclTopoAddNet``): 1.
* **Memory** (a CPU's DRAM, the SHM transport's staging): NCCL has no figure; DRAM sustains
  about 0.8 of its wire rate (MT/s x width) under streaming copies -- STREAM's copy and triad
  reach 74-79% (Texas Instruments SPRAD45A and SPRACV1B, table "Stream Benchmarks"), the usual
  share on servers (McCalpin's STREAM results, www.cs.virginia.edu/stream) -- so p2sim uses 0.8.
* **Host** (CPU to CPU) and **C2C** (Grace to its GPU): NCCL has no share of its own to
  apply: 1.

A class's kind comes from what its links join (or its ``kind`` key).

Examples
--------
>>> round(nvlink_share(90), 3), round(nvlink_share(86), 3), round(nvlink_share(100), 3)
(0.824, 0.853, 0.802)
>>> link_kind("gpu", "nvswitch"), link_kind("nic", "pcie_switch"), link_kind("nic", "network_switch")
('nvlink', 'pcie', 'network')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..util.errors import TopologyError

__all__ = ["LINK_KINDS", "PCIE_SHARE", "MEMORY_SHARE", "nvlink_share", "link_kind", "complete_classes"]

LINK_KINDS = ("nvlink", "pcie", "c2c", "host", "memory", "network")
PCIE_SHARE = 0.75  # width x speed / 80 over the raw width x GT/s x 128/130 / 8 (topo.cc), gen3 and later
MEMORY_SHARE = 0.8  # DRAM under streaming copies: STREAM's 74-79% of wire rate (see the module docstring)


def nvlink_share(cc: int) -> float:
    """NCCL's GB/s per NVLink over the data sheet's, for a compute capability x 10 (``topo.h``)."""
    if cc >= 100:
        return 40.1 / 50.0
    if cc >= 90:
        return 20.6 / 25.0
    if cc == 86:
        return 12.0 / 14.0625
    if cc >= 70:
        return 20.0 / 25.0
    return 18.0 / 20.0


def link_kind(a: str, b: str) -> str | None:
    """The kind of a link between components of kinds ``a`` and ``b`` (``None``: nothing NCCL names)."""
    pair = {a, b}
    if pair <= {"gpu", "nvswitch"}:
        return "nvlink"
    if "pcie_switch" in pair or pair in ({"gpu", "cpu"}, {"nic", "cpu"}, {"nic", "gpu"}):
        return "pcie"
    if pair == {"cpu"}:
        return "host"
    if pair == {"cpu", "memory"}:
        return "memory"
    if pair <= {"nic", "network_switch"}:
        return "network"
    return None


def _share(kind: str, cc: int) -> tuple[float, str]:
    if kind == "nvlink":
        generation = {60: "NVLink 1", 70: "NVLink 2", 80: "NVLink 3", 86: "NVLink 3 (GA102)", 90: "NVLink 4",
                      100: "NVLink 5"}[100 if cc >= 100 else 90 if cc >= 90 else 86 if cc == 86 else 80 if cc >= 80
                                       else 70 if cc >= 70 else 60]
        return nvlink_share(cc), f"{generation}: NCCL's per-link figure (src/graph/topo.h)"
    if kind == "pcie":
        return PCIE_SHARE, "PCIe: NCCL's width x speed / 80 (src/graph/topo.cc)"
    if kind == "memory":
        return MEMORY_SHARE, "DRAM: what STREAM sustains of the wire rate"
    return 1.0, f"{kind}: NCCL counts the rate as is"


def complete_classes(src: str, classes: Mapping[str, Any], kinds: Mapping[str, str], node_links: Iterable[Any],
                     net_links: Iterable[Any], fabric: Any, cc: int, assumed: list[str]) -> dict[str, Any]:
    """Every class with its kind and efficiency: the file's, else NCCL's figure for that kind of link."""
    seen: dict[str, set[str]] = {}
    examples: dict[tuple[str, str], tuple[str, str]] = {}
    for ln in list(node_links) + list(net_links):
        for a, b in ln.pairs:
            k = link_kind(kinds[a], kinds[b]) or "other"
            seen.setdefault(ln.cls, set()).add(k)
            examples.setdefault((ln.cls, k), (a, b))
    if fabric is not None:
        for name in [fabric.link] + [t.name for t in fabric.tiers[:-1]]:
            seen.setdefault(name, set()).add("network")
    out = {}
    for name, c in classes.items():
        kind = c.kind
        found = seen.get(name, set())
        if not kind:
            if len(found) > 1:
                parts = "; ".join(f"{k} ({examples[(name, k)][0]}-{examples[(name, k)][1]})" for k in sorted(found)
                                  if (name, k) in examples)
                raise TopologyError(f"{src}: classes.{name}: its links are of different kinds ({parts}): give the class "
                                    f"a kind ({', '.join(LINK_KINDS)}) or split it")
            kind = next(iter(found), "network")
            if kind == "other":
                kind = "network"
        if c.efficiency >= 0:
            out[name] = replace(c, kind=kind)
            continue
        share, why = _share(kind, cc)
        out[name] = replace(c, kind=kind, efficiency=share, efficiency_from=why)
        if share != 1.0:
            assumed.append(f"{name} links at {share:.3g} of the data sheet ({why})")
    return out
