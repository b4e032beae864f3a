"""Systems: data files under ``topologies/`` that become networkx graphs, with NCCL's routes.

:mod:`.spec` reads a system file (nodes, links, classes) with :mod:`.settings` (NCCL's
settings and the model's rates), :mod:`.gpus` (the GPU catalogue), :mod:`.efficiency`
(NCCL's link figures), :mod:`.fabric_spec` and :mod:`.fabric` (the cluster above the node,
by arithmetic) and :mod:`.faults`; :mod:`.graph` instantiates it for a node count, with the
:class:`~.routing.Router` of :mod:`.routing` composed into it (``topo.router``), which routes
through it by NCCL's path rules (:mod:`.paths`); :mod:`.bisection`
and :mod:`.toml_out` read and write it.  Systems are looked up by name in the directories of
``$P2SIM_TOPOLOGIES`` (``os.pathsep``-separated) and then among the built-in files, installed
as the package data of ``p2sim.systems``; a path to a ``.toml`` file works anywhere a name
does.  Imports :mod:`p2sim.util` only (the formalism's hierarchy sizes come as numbers).

Modules
-------
:mod:`.bisection`
    Link-level bisection figures of a topology (networkx max flows), for ``p2sim topo``.
:mod:`.efficiency`
    NCCL's own link figures: what share of a link's data-sheet rate NCCL's transfers count on.
:mod:`.fabric`
    A fabric (:mod:`.fabric_spec`) instantiated for a node count: its links and routes by arithmetic.
:mod:`.fabric_spec`
    The ``[fabric]`` table of a system file: the cluster above the node, for any node count.
:mod:`.faults`
    Faults: parts of one system slower than the file says, for what-if studies ("why is this run slow").
:mod:`.gpus`
    The GPUs p2sim knows, by the names ``nvidia-smi`` gives them: generation, compute capability, memory, NVLink.
:mod:`.graph`
    Topologies as networkx graphs, with NCCL's transport choice for GPU-to-GPU routes.
:mod:`.host_memory`
    How fast a node's GPUs reach their host's memory all at once: what activation offloading moves over.
:mod:`.nccl_env`
    NCCL's environment variables as p2sim's ``[nccl]`` settings: what a published job set, predicted as it ran.
:mod:`.paths`
    Which links NCCL's transports use inside a node: P2P, SHM, GPUDirect RDMA and PXN.
:mod:`.places`
    A node's own place symmetry: permutations of its GPUs' blocks that are automorphisms of the system.
:mod:`.ranges`
    The range of every number a system file holds, one rule per field for the file and for ``--vary``.
:mod:`.routing`
    Routes through a topology: NCCL's transports inside a node, NICs, and the network between nodes.
:mod:`.settings`
    The NCCL-facing settings of a system file: ``[gpu]``, ``[network] transport``, ``[nccl]`` and ``[model]``.
:mod:`.spec`
    System files: the TOML description of a hierarchy and its interconnect.
:mod:`.toml_out`
    Writing a :class:`~p2sim.topology.spec.SystemSpec` back as a system file (calibration's output).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from ..util.errors import TopologyError
from .bisection import bisection
from .graph import Route, Topology
from .spec import LinkClass, SystemSpec, load_spec

__all__ = ["Route", "Topology", "SystemSpec", "LinkClass", "bisection", "load_system", "find_spec", "system_paths",
           "builtin_dir", "system_ref"]


def builtin_dir() -> Path:
    """The directory holding the built-in system files."""
    try:
        root = resources.files("p2sim.systems")
    except ModuleNotFoundError:
        # a source tree put on sys.path without installing it: the files sit beside p2sim/
        return Path(__file__).resolve().parents[2] / "topologies"
    # pip installs packages unzipped, so the package data is a directory on disk
    return Path(str(root))


def _dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get("P2SIM_TOPOLOGIES", "").split(os.pathsep) if p]
    return extra + [builtin_dir()]


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


def system_ref(spec: SystemSpec) -> str:
    """How measurement rows and tasks name ``spec`` so that :func:`find_spec` finds this very file again.

    A catalogue system (shipped or on ``$P2SIM_TOPOLOGIES``) by its name; any other file by its
    absolute path, because its ``name`` may be in no catalogue, or be a catalogue name that
    belongs to another file (a user's edited copy of a shipped system keeps the name).

    >>> system_ref(find_spec("a100"))
    'a100'
    """
    found = system_paths().get(spec.name)
    src = Path(spec.source).resolve()
    if found is not None and found.resolve() == src:
        return spec.name
    return str(src)


def load_system(system: str | SystemSpec, nodes: int | None = None) -> Topology:
    """Build the topology of a system (name, path or spec) for a node count."""
    spec = system if isinstance(system, SystemSpec) else find_spec(system)
    return Topology(spec, nodes)
