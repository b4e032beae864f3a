"""Measurements that appear twice: counted once, or refused when they disagree.

A row read twice -- a log pasted into itself, the same file in a directory under two names, a
configuration measured on two days -- would count twice in every metric and fit.  So:

* rows that say the same thing (the same configuration and the same figures) are one row, and
  p2sim says so (a warning naming both places);
* single-collective rows of one configuration whose times agree within :data:`TOLERANCE` (a
  repeated run: nccl-tests' run-to-run spread is a few percent) are one row at their median time;
* rows of one configuration that disagree beyond it (two logs 2x apart) are refused with both
  places: one of them measured something else, and p2sim cannot tell which.

Examples
--------
>>> from p2sim.measurements.collective_rows import CollectiveRow
>>> a = CollectiveRow("a.txt", 12, "1", "dgx-h100", 1, 8, "AllReduce", "auto", "auto", 2**30, 4.1e-3, 0.0)
>>> [r.line for r in dedupe_collectives([a, a])]
[12]
>>> from dataclasses import replace
>>> dedupe_collectives([a, replace(a, source="b.txt", line=7, seconds=8.2e-3)])
Traceback (most recent call last):
...
p2sim.util.errors.MeasurementError: b.txt:7: seconds: 8.2 ms, but a.txt:12 measured the same configuration (dgx-h100, 1 x 8 GPUs, AllReduce, 1 GiB, out of place, algo auto, proto auto) at 4.1 ms: 2x apart; keep the one that measured it
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..formalism.placement import format_matrix
from ..util.errors import MeasurementError
from ..util.log import warn
from ..util.units import format_bytes, format_seconds
from .collective_rows import CollectiveRow, bus_factor

__all__ = ["dedupe_collectives", "dedupe_programs", "TOLERANCE"]

TOLERANCE = 1.25  # the most two times of one configuration may differ (max / min) and still be one measurement


def _where(a, b) -> str:
    return f"line {a.line}" if a.source == b.source else f"{a.source}:{a.line}"


def _config(r: CollectiveRow) -> str:
    hca = f", NICs {' '.join(r.hca)}" if r.hca else ""
    return (f"{r.system}, {r.nodes} x {r.gpus_per_node} GPUs, {r.collective}, {format_bytes(r.size_bytes)}, "
            f"{'in place' if r.in_place else 'out of place'}, algo {r.algo}, proto {r.proto}{hca}"
            + (f", {r.groups} communicators at once" if r.groups > 1 else ""))


def dedupe_collectives(rows: Sequence[CollectiveRow]) -> list[CollectiveRow]:
    """``rows`` with repeats counted once (see the module docstring), in their order."""
    groups: dict[tuple, list[CollectiveRow]] = {}
    for r in rows:
        key = (r.system, r.nodes, r.gpus_per_node, r.collective, r.algo, r.proto, r.size_bytes, r.in_place, r.hca,
               r.gpu, r.concurrent_groups, r.rank_places)  # a split run's row is not a lone communicator's
        groups.setdefault(key, []).append(r)
    out = []
    for same in groups.values():
        first = same[0]
        if len(same) == 1:
            out.append(first)
            continue
        fast = min(same, key=lambda r: r.seconds)
        slow = max(same, key=lambda r: r.seconds)
        if slow.seconds > TOLERANCE * fast.seconds:
            later, earlier = (slow, fast) if (slow.source, slow.line) > (fast.source, fast.line) else (fast, slow)
            raise MeasurementError(
                f"{later.source}:{later.line}: seconds: {format_seconds(later.seconds)}, but {_where(earlier, later)} "
                f"measured the same configuration ({_config(first)}) at {format_seconds(earlier.seconds)}: "
                f"{slow.seconds / fast.seconds:.2g}x apart; keep the one that measured it")
        places = ", ".join(f"{r.source}:{r.line}" for r in same)
        if all(r.seconds == first.seconds for r in same):
            warn(f"{places}: the same measurement ({_config(first)}) {len(same)} times: counted once")
            out.append(first)
            continue
        seconds = statistics.median(r.seconds for r in same)
        warn(f"{places}: {len(same)} measurements of one configuration ({_config(first)}), within "
             f"{TOLERANCE - 1:.0%} of each other: counted once, at their median {format_seconds(seconds)}")
        out.append(replace(first, seconds=seconds,
                           busbw=first.size_bytes / seconds * bus_factor(first.collective, first.ranks)))
    return out


def _figures(r: Any) -> tuple:
    return (r.allreduce_s, r.optimal_s, r.speedup, r.programs_better, r.programs)


def dedupe_programs(rows: Sequence[Any]) -> list[Any]:
    """``rows`` (:class:`~p2sim.measurements.program_rows.MeasuredRow`) with rows that repeat another exactly
    counted once; two rows of one configuration (group and matrix) with different figures are refused with
    both places."""
    first: dict[tuple, Any] = {}
    out = []
    for r in rows:
        key = (r.group, r.matrix)
        a = first.get(key)
        if a is None:
            first[key] = r
            out.append(r)
            continue
        what = (f"{r.gpu}, {r.nodes} nodes, axes {list(r.axes)}, reduce_axes {list(r.reduce_axes)}, matrix "
                f"{format_matrix(r.matrix)}, {r.algo}, {format_bytes(r.bytes_per_gpu)}, {r.order.value} order")
        if _figures(a) == _figures(r):
            warn(f"{r.source}:{r.line}: repeats {_where(a, r)} ({what}): counted once")
            continue
        raise MeasurementError(f"{r.source}:{r.line}: row: measures the same configuration as {_where(a, r)} ({what}) "
                               "with other figures: keep one (a log's repeated runs of a configuration belong in one "
                               "file)")
    return out
