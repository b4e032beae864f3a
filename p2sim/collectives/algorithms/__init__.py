"""NCCL's algorithms, one object each behind one interface (:class:`~.base.Algorithm`), and their registry.

:mod:`.ring` (:class:`Ring`), :mod:`.tree` (:class:`Tree`), :mod:`.nvls` (:class:`Nvls`),
:mod:`.nvls_tree` (:class:`NvlsTree`), :mod:`.collnet_direct` (:class:`CollNetDirect`, and
:class:`CollNet`, what both CollNets share) and :mod:`.collnet_chain` (:class:`CollNetChain`).
:data:`REGISTRY` maps each name of :data:`p2sim.util.algorithms.ALGORITHMS` to its object; the rest of
p2sim asks the objects, never tests a name.  Adding an algorithm: docs/architecture.md.

Modules
-------
:mod:`.availability`
    Whether an algorithm can run: the part of :class:`~.base.Algorithm` NCCL's choice and a forced run ask first.
:mod:`.base`
    The interface every NCCL algorithm implements: :class:`Algorithm`, the union of its four parts.
:mod:`.collnet_chain`
    NCCL's CollNet Chain (``NCCL_ALGO=CollNetChain``): SHARP in the network, each node's GPUs chained to one head.
:mod:`.collnet_direct`
    NCCL's CollNet Direct (``NCCL_ALGO=CollNetDirect``): SHARP in the network, every GPU of a node a head.
:mod:`.costs`
    An algorithm's latency and caps: the part of :class:`~.base.Algorithm` NCCL's tuning model and the caps read.
:mod:`.layout`
    An algorithm's channels and their structure: the part of :class:`~.base.Algorithm` that puts its hops on links.
:mod:`.nvls`
    NCCL's NVLS (``NCCL_ALGO=NVLS``): NVLink SHARP reductions inside one NVLink domain.
:mod:`.nvls_tree`
    NCCL's NVLS Tree (``NCCL_ALGO=NVLSTree``): NVLink SHARP in each node, trees across nodes.
:mod:`.pipeline`
    An algorithm's pipeline: the part of :class:`~.base.Algorithm` that says how its chunks move.
:mod:`.ring`
    NCCL's ring (``NCCL_ALGO=Ring``): every collective, on any group.
:mod:`.tree`
    NCCL's double binary tree (``NCCL_ALGO=Tree``): AllReduce only, on any group.

Examples
--------
>>> algorithm("tree").rate_family(), algorithm("nvls").simple_only, [a.name for a in forced_algorithms("collnet")]
('tree', True, ['collnet_direct', 'collnet_chain'])
>>> FALLBACK.name, forced_algorithms("auto")
('ring', ())
"""

from __future__ import annotations

from collections.abc import Iterable

from ...topology import Topology
from ...util.algorithms import ALGORITHMS, forced
from .base import Algorithm
from .collnet_chain import CollNetChain
from .collnet_direct import CollNet, CollNetDirect
from .nvls import Nvls
from .nvls_tree import NvlsTree
from .ring import Ring
from .tree import Tree

__all__ = ["Algorithm", "Ring", "Tree", "Nvls", "NvlsTree", "CollNet", "CollNetDirect", "CollNetChain",
           "REGISTRY", "FALLBACK", "algorithm", "forced_algorithms", "baseline_algorithm", "baseline_seconds"]

REGISTRY: dict[str, Algorithm] = {a.name: a for a in (Ring(), Tree(), Nvls(), NvlsTree(), CollNetDirect(),
                                                      CollNetChain())}
assert tuple(REGISTRY) == ALGORITHMS, "the registry follows p2sim.util.algorithms' table"

# NCCL's ring backup: what runs a collective a forced algorithm does not have (tuning.cc, NCCL 2.19-2.23)
FALLBACK = REGISTRY["ring"]


def algorithm(name: str) -> Algorithm:
    """The object of algorithm ``name`` (one of :data:`~p2sim.util.algorithms.ALGORITHMS`)."""
    return REGISTRY[name]


def forced_algorithms(setting: str) -> tuple[Algorithm, ...]:
    """The algorithms a setting lets NCCL use: none named for ``auto`` (NCCL's choice), both for ``collnet``."""
    return () if setting == "auto" else tuple(REGISTRY[a] for a in forced(setting))


def baseline_algorithm(setting: str) -> Algorithm:
    """Whose link-bottleneck baseline a setting runs: the one algorithm it forces, else a ring's."""
    algos = forced_algorithms(setting)
    return algos[0] if len(algos) == 1 else FALLBACK


def baseline_seconds(topo: Topology, op: str, members: Iterable[int], nbytes: float, algo: str) -> float:
    """Uncontended time of ``op`` over ``members`` by the link-bottleneck formulas
    (:mod:`p2sim.collectives.baseline`) of algorithm ``algo`` (:meth:`Algorithm.baseline
    <p2sim.collectives.algorithms.base.Algorithm.baseline>`: a tree's for an AllReduce, else a ring's)."""
    return algorithm(algo).baseline(topo, op, members, nbytes)[0]
