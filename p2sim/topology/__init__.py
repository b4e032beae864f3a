"""Systems: data files under ``topologies/`` that become networkx graphs.

Systems are looked up by name in the directories of ``$P2SIM_TOPOLOGIES``
(``os.pathsep``-separated) and then in the project's ``topologies/``; a path to a
``.toml`` file works anywhere a system name does.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import TopologyError
from .graph import Route, Topology, bisection
from .spec import LinkClass, SystemSpec, load_spec

__all__ = ["Route", "Topology", "SystemSpec", "LinkClass", "bisection", "load_system", "find_spec", "system_paths"]

BUILTIN = Path(__file__).resolve().parents[2] / "topologies"


def _dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get("P2SIM_TOPOLOGIES", "").split(os.pathsep) if p]
    return extra + [BUILTIN]


def system_paths() -> dict[str, Path]:
    """Known system names and their files (earlier directories win)."""
    out: dict[str, Path] = {}
    for d in _dirs():
        if d.is_dir():
            for f in sorted(d.glob("*.toml")):
                out.setdefault(f.stem, f)
    return out


def find_spec(system: str) -> SystemSpec:
    """Load a system by name or by path to its file."""
    if system.endswith(".toml") or os.sep in system:
        return load_spec(system)
    paths = system_paths()
    if system not in paths:
        known = ", ".join(sorted(paths)) or "none"
        raise TopologyError(f"system: unknown system {system!r} (known: {known}; or give a path to a .toml file)")
    return load_spec(paths[system])


def load_system(system: str | SystemSpec, nodes: int | None = None) -> Topology:
    """Build the topology of a system (name, path or spec) for a node count."""
    spec = system if isinstance(system, SystemSpec) else find_spec(system)
    return Topology(spec, nodes)
