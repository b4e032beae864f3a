"""NCCL's protocols: the share of link bandwidth each achieves and its throughput caps.

* **Simple** moves data in large chunks with separate flags: the links' full rate.
* **LL** (low latency) stores 8-byte words that carry 4 bytes of data and a 4-byte
  flag: half the rate, low latency; its whole-collective bus bandwidth is capped at
  ``llMaxBw``.
* **LL128** stores 128-byte lines with 120 bytes of data (NCCL models 92%), capped per
  channel at ``perChMaxRingLL128Bw`` / ``perChMaxTreeLL128Bw``.

Trees carry NCCL's extra refinements (``src/graph/tuning.cc``): NCCL counts a tree AllReduce
at 92% of its links' rate when it chooses (:func:`tuning_share`), at most ``perChMaxTreeBw`` per channel, LL trees a further
1/3.8, LL128 trees 7/9 on one node and 120/128 across nodes, and medium sizes are
scaled by ``treeCorrectionFactor``.  NVLS reductions reach ``nvlsEfficiency`` of NVLink.

Examples
--------
>>> link_share("ring", "LL", "AllReduce", 1, 2**20, "ampere")
0.5
>>> link_share("tree", "Simple", "AllReduce", 2, 2**30, "ampere"), tuning_share("tree", "AllReduce")
(1.0, 0.92)
"""

from __future__ import annotations

import math

from .algorithms import algorithm
from .algorithms.tree import TREE_SHARE
from .nccl_tables import PROTOS, ll_max_bw

__all__ = ["PROTOS", "TREE_SHARE", "tuning_share", "link_share", "channel_cap_gbps", "collective_cap_gbps", "check_proto", "PROTO_CHOICES"]

PROTO_CHOICES = ("auto",) + PROTOS


def check_proto(text: str) -> str:
    from ..util.errors import InputError

    for p in PROTO_CHOICES:
        if text.lower() == p.lower():
            return p
    raise InputError(f"proto: {text!r} is not one of {', '.join(PROTO_CHOICES)}")


def tuning_share(algo: str, op: str) -> float:
    """The extra share of the links' rate NCCL's model (not the wire) gives this algorithm
    (:meth:`~p2sim.collectives.algorithms.base.Algorithm.tuning_share`; a tree AllReduce's :data:`TREE_SHARE`)."""
    return algorithm(algo).tuning_share(op)


def link_share(algo: str, proto: str, op: str, nodes: int, nbytes: float, arch: str) -> float:
    """The share of the links' rate a collective of this algorithm and protocol achieves
    (:meth:`~p2sim.collectives.algorithms.base.Algorithm.link_share`)."""
    return algorithm(algo).link_share(proto, op, nodes, nbytes, arch)


def channel_cap_gbps(algo: str, proto: str, nodes: int, arch: str, configured: float | None) -> float:
    """Bus bandwidth (GB/s) one graph channel can reach on the GPU side (``inf``: no cap).

    ``configured`` is the system file's (or calibration's) ``*_channel_rate``; it
    replaces NCCL's Simple-protocol figure
    (:meth:`~p2sim.collectives.algorithms.base.Algorithm.channel_cap`).
    """
    return algorithm(algo).channel_cap(proto, nodes, arch, configured)


def collective_cap_gbps(proto: str, nodes: int, arch: str) -> float:
    """Bus bandwidth (GB/s) cap of a whole collective: LL's ``llMaxBw``, else none."""
    return ll_max_bw(arch, nodes) if proto == "LL" else math.inf
