"""NCCL's algorithms under p2sim's names: the one table every reader of an algorithm's name reads.

Read by ``--algo``'s help and checks, a system
file's ``[nccl] algorithms`` (``NCCL_ALGO``), measurement rows' forced algorithm and the model's
support rules (:meth:`p2sim.collectives.choice.Choice.why_not`).

Examples
--------
>>> ALGORITHMS
('ring', 'tree', 'nvls', 'nvls_tree', 'collnet_direct', 'collnet_chain')
>>> ALGO_CHOICES[-1], STUDY_CHOICES[-1]
('collnet', 'both')
>>> algorithm("nvls").collectives
('AllReduce', 'ReduceScatter', 'AllGather')
>>> by_nccl_name("CollNetDirect")
'collnet_direct'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Algorithm", "TABLE", "ALGORITHMS", "NCCL_ORDER", "COLLNET", "BOTH", "ALGO_CHOICES", "STUDY_CHOICES",
           "algorithm", "by_nccl_name", "choices_text", "forced"]

COLLECTIVES = ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce")


@dataclass(frozen=True)
class Algorithm:
    """One of NCCL's algorithms."""

    name: str  # p2sim's name: --algo, [nccl] algorithms, reports
    nccl: str  # NCCL's (NCCL_ALGO, ncclAlgoStr in src/graph/tuning.cc)
    index: int  # NCCL's enum value (NCCL_ALGO_TREE = 0, ... in src/include/device.h): its tables' order
    collectives: tuple[str, ...]  # the collectives p2sim runs with it
    help: str  # what it is, for --help


# Which collectives each serves: NCCL's tuning.cc (ncclTopoTuneModel) gives Broadcast and Reduce only a
# ring, ReduceScatter and AllGather a ring, NVLS, CollNet Direct (since NCCL 2.20.3: all_gather.h,
# reduce_scatter.h) and PAT (not modelled by p2sim), AllReduce every algorithm but PAT.
TABLE = (
    Algorithm("ring", "Ring", 1, COLLECTIVES, "rings"),
    Algorithm("tree", "Tree", 0, ("AllReduce",), "double binary trees"),
    Algorithm("nvls", "NVLS", 4, ("AllReduce", "ReduceScatter", "AllGather"), "NVLink SHARP inside a node"),
    Algorithm("nvls_tree", "NVLSTree", 5, ("AllReduce",), "NVLink SHARP in nodes, trees across them"),
    Algorithm("collnet_direct", "CollNetDirect", 2, ("AllReduce", "ReduceScatter", "AllGather"),
              "SHARP in the network, direct"),
    Algorithm("collnet_chain", "CollNetChain", 3, ("AllReduce",), "SHARP in the network, chained"),
)
ALGORITHMS = tuple(a.name for a in TABLE)
NCCL_ORDER = tuple(a.name for a in sorted(TABLE, key=lambda a: a.index))  # the order NCCL tries them in
COLLNET = ("collnet_direct", "collnet_chain")
# settings beyond one algorithm: auto (NCCL's choice), collnet (NCCL_ALGO=CollNet: either CollNet algorithm,
# whichever NCCL's model prefers), both (P2's pair of forced runs, ring then tree; studies only)
_SETTINGS = {"auto": "NCCL's choice per collective", "collnet": "either CollNet, NCCL's pick",
             "both": "ring and tree, each forced, as P2 ran them"}
BOTH = ("ring", "tree")  # P2's forced runs: the setting ``both``, and the algorithms its CSV may name
ALGO_CHOICES = ("auto",) + ALGORITHMS + ("collnet",)
STUDY_CHOICES = ALGO_CHOICES + ("both",)

_BY_NAME = {a.name: a for a in TABLE}
_BY_NCCL = {a.nccl.lower(): a.name for a in TABLE}


def algorithm(name: str) -> Algorithm:
    """The table's entry of one of :data:`ALGORITHMS`."""
    return _BY_NAME[name]


def forced(setting: str) -> tuple[str, ...]:
    """The algorithms a setting other than ``auto`` lets NCCL use (``collnet``: both CollNets)."""
    return COLLNET if setting == "collnet" else (setting,)


def by_nccl_name(text: str) -> str | None:
    """p2sim's name of an algorithm spelt as NCCL_ALGO or p2sim spells it (any case, ``_`` or not)."""
    t = text.lower().replace("_", "")
    return _BY_NCCL.get(t) or next((a for a in ALGORITHMS if a.replace("_", "") == t), None)


def choices_text(choices: Sequence[str] = ALGO_CHOICES) -> str:
    """``--algo``'s help: every value, each with what it is."""
    parts = [f"{c} ({_SETTINGS[c] if c in _SETTINGS else _BY_NAME[c].help})" for c in choices]
    return ", ".join(parts)
