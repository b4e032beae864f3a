"""The range of every number a system file holds, one rule per field for the file and for ``--vary``.

A system file and a what-if study's ``--vary`` set the same fields (a link class's
``bandwidth`` and ``latency``, a fabric tier's ``oversubscription``, ``uplinks`` and
``nodes``, a node count, a fault's rate); each field's check lives here once, so that the
two cannot drift.  ``where`` names the place of the value: ``"file.toml: classes.nic.bandwidth"``
for a file, ``"--vary: nic.bandwidth"`` for the option; the message names that place and
the value, and ``error`` is the exception to raise (a file's is :class:`TopologyError`, an
option's :class:`InputError`).

Examples
--------
>>> bandwidth("--vary: nic.bandwidth", 12.5, InputError)
12.5
>>> oversubscription("--vary: leaf.oversubscription", float("inf"), InputError)
Traceback (most recent call last):
...
p2sim.util.errors.InputError: --vary: leaf.oversubscription: inf must be a number in [0.000976562, 1024] (down : up bandwidth of a switch group)
>>> whole("x.toml: fabric.tiers[0].uplinks", 31.0, 1, MAX_UPLINKS, "uplink ports")
31
"""

from __future__ import annotations

import math
from typing import Any

from ..util.errors import InputError, TopologyError

__all__ = ["MAX_BANDWIDTH_GBPS", "MIN_BANDWIDTH_GBPS", "MAX_LATENCY_US", "MAX_NODES", "MAX_OVERSUBSCRIPTION",
           "MAX_UPLINKS", "MAX_SPEED", "bandwidth", "latency", "efficiency", "positive", "whole", "oversubscription",
           "node_count", "speed"]

# sanity bounds for figures in a file: nothing measured comes near them (an NVLink 5
# GPU has 900 GB/s per direction); above them a value is a typo or a unit mix-up
MAX_BANDWIDTH_GBPS = 1e6
# and at least this much: a link of 1 MB/s is no interconnect (a typo's 1e-300 GB/s would print
# a 300-digit number of seconds)
MIN_BANDWIDTH_GBPS = 1e-3
MAX_LATENCY_US = 1e6  # one second per traversal
# the largest systems p2sim builds (p2sim topo: 16,384 nodes of 8 GPUs in 15 s and 1.1 GB); the largest
# documented cluster, xAI's Colossus (100,000 H100, NVIDIA's announcement of October 2024), is 12,500
# nodes of 8 GPUs.  Larger counts -- of a system's nodes or of one fabric tier's group -- are typos
# that would build for minutes and gigabytes
MAX_NODES = 16_384
# a switch group's down : up bandwidth.  One switch ASIC has at most 512 ports (Broadcom Tomahawk 5:
# 512 x 100G; NVIDIA Quantum-2 QM9700 64 x 400G or 128 x 200G, Spectrum-4 SN5600 64 x 800G or 256 x
# 200G, Quantum-X800 Q3400 144 x 800G), so one uplink serves at most 511 downlinks, and port speeds
# within a switch differ by at most 2x more: 1024:1 either way.  Built fabrics stay within 1:1 .. 16:1;
# below 1:1 the uplink ports it implies are bounded per NIC as well (fabric_spec.MAX_PORTS_PER_NIC)
MAX_OVERSUBSCRIPTION = 1024.0
# uplink ports of one switch group: 16,384 nodes x 8 NICs x 8 ports per NIC (fabric_spec.MAX_PORTS_PER_NIC)
# is 2^20; a count above it is no fabric (the per-NIC bound of the group is checked as well)
MAX_UPLINKS = 2**20
# a slow node's factor on its links' rates: a "faster" node at most 1000x (the rates it gives are checked
# against the link range as well)
MAX_SPEED = 1e3


def _number(where: str, value: Any, error: type[InputError]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{where}: {value!r} is not a number")
    return float(value)


def positive(where: str, value: Any, error: type[InputError] = TopologyError) -> float:
    """A number above 0 (NaN is not)."""
    v = _number(where, value, error)
    if not v > 0:
        raise error(f"{where}: {value!r} must be positive")
    return v


def bandwidth(where: str, value: Any, error: type[InputError] = TopologyError) -> float:
    """A link's data-sheet rate in GB/s: a class's, a link's, or a fault's."""
    v = positive(where, value, error)
    if not MIN_BANDWIDTH_GBPS <= v <= MAX_BANDWIDTH_GBPS:
        raise error(f"{where}: {value!r} GB/s is not a real link's rate (between {MIN_BANDWIDTH_GBPS:g} "
                    f"and {MAX_BANDWIDTH_GBPS:g})")
    return v


def latency(where: str, value: Any, error: type[InputError] = TopologyError) -> float:
    """Microseconds per traversal of a link."""
    v = _number(where, value, error)
    if not v >= 0 or math.isinf(v):
        raise error(f"{where}: {value!r} must be a finite number >= 0")
    if v > MAX_LATENCY_US:
        raise error(f"{where}: {value!r} us is more than a second per traversal")
    return v


def efficiency(where: str, value: Any, error: type[InputError] = TopologyError) -> float:
    """The share of a link's rate that carries data."""
    v = positive(where, value, error)
    if v > 1:
        raise error(f"{where}: {value!r} must be a share in (0, 1]")
    return v


def whole(where: str, value: Any, low: int, high: int, what: str, error: type[InputError] = TopologyError) -> int:
    """A count in ``low..high`` (a float that is a whole number counts: ``--vary`` values are floats)."""
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
          and value == int(value) and low <= value <= high)
    if not ok:  # --vary's values are floats: 9 reads better than 9.0
        shown = f"{value:g}" if isinstance(value, float) else repr(value)
        raise error(f"{where}: {shown} must be a whole number in {low}..{high} ({what})")
    return int(value)


def oversubscription(where: str, value: Any, error: type[InputError] = TopologyError) -> float:
    """A switch group's down : up bandwidth (see MAX_OVERSUBSCRIPTION)."""
    low, high = 1 / MAX_OVERSUBSCRIPTION, MAX_OVERSUBSCRIPTION
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise error(f"{where}: {value!r} must be a number in [{low:g}, {high:g}] (down : up bandwidth of a switch "
                    "group)")
    return float(value)


def node_count(where: str, value: Any, error: type[InputError] = TopologyError) -> int:
    """A number of nodes: a system's, or one fabric tier group's."""
    return whole(where, value, 1, MAX_NODES, "nodes", error)


def speed(where: str, value: Any, error: type[InputError] = TopologyError) -> float:
    """A slow node's factor on its links' rates, in (0, MAX_SPEED]."""
    v = positive(where, value, error)
    if v > MAX_SPEED:
        raise error(f"{where}: {value!r} must be a factor in (0, {MAX_SPEED:g}] on the node's link rates")
    return v
