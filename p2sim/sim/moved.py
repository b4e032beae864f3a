"""Groups of a step that are one group moved between nodes: their classes, and the links all of them load.

Every node of a p2sim topology is the same template joined to the network the same way, and a
fabric's units, leaves and rails are alike, so a group moved between nodes (with the same buffer
and, on a fabric, the same shape relative to the tiers: :meth:`~p2sim.topology.Topology.move_keys`)
is the same collective on moved links.  A step's bound and its event-driven run build one
collective per class (:func:`moved_classes`) and move its links to the others; :func:`link_work`
sums every link's bytes over all of them.

Examples
--------
Four groups of two GPUs on a 2-node a100 (16 GPUs a node): the pairs (0, 1) and (16, 17) are one
group moved, (2, 3) and (18, 19) another.

>>> from p2sim.formalism.hierarchy import LoweredStep
>>> from p2sim.formalism.semantics import Op
>>> from p2sim.topology import load_system
>>> step = LoweredStep(Op.ALL_REDUCE, ((0, 1), (2, 3), (16, 17), (18, 19)))
>>> [(g, shifts.tolist(), members.tolist()) for g, _, shifts, members in moved_classes(load_system("a100", 2), step,
...                                                                                    [1.0] * 4)]
[((0, 1), [0, 1], [0, 2]), ((2, 3), [0, 1], [1, 3])]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..formalism.hierarchy import LoweredStep
from ..topology import Topology

__all__ = ["link_work", "moved_classes", "moved_class_key"]


def link_work(edges: np.ndarray, loads: np.ndarray, links: int) -> tuple[np.ndarray, np.ndarray]:
    """The links used (ascending) and the bytes on each: ``loads`` summed per link of ``edges`` in their
    order, as ``numpy.unique`` and a bincount of its inverse would (the same sums), by counting straight
    into a table of every link (no remapping pass)."""
    used = np.flatnonzero(np.bincount(edges, minlength=links))
    return used, np.bincount(edges, weights=loads, minlength=links)[used]


def moved_classes(topo: Topology, step: LoweredStep, volumes: Sequence[float]):
    """The groups of a step by class of the same group moved between nodes (with the same
    buffer and, on a fabric, the same :meth:`~p2sim.topology.Topology.move_key`): per class one
    group, and the node shifts (from it) and positions of all its groups."""
    gpn = topo.gpus_per_node
    arr = step.array
    if arr is not None:
        first = arr.min(axis=1) // gpn
        key = moved_class_key(topo, arr, first, volumes)
        # numpy.unique(key, axis=0)'s classes in its order (rows ascending, compared column by column as int64),
        # each with its first row and its rows in order: a stable lexsort finds them without sorting the rows
        # as structured records (which cost a quarter of a fabric ranking's bounds)
        order = np.lexsort(key.T[::-1])
        ranked = key[order]
        new = np.empty(len(order), dtype=bool)
        new[0] = True
        np.any(ranked[1:] != ranked[:-1], axis=1, out=new[1:])
        bounds = np.append(np.flatnonzero(new), len(order))
        rep = order[bounds[:-1]]
        for c, r in enumerate(rep.tolist()):
            members = order[bounds[c]:bounds[c + 1]]
            yield tuple(arr[r].tolist()), volumes[r], first[members] - first[r], members
        return
    groups = step.groups
    classes: dict[tuple, list[int]] = {}
    for i, g in enumerate(groups):
        f = min(g) // gpn
        classes.setdefault((tuple(m - f * gpn for m in g), volumes[i], topo.move_key([m // gpn for m in g])),
                           []).append(i)
    for members in classes.values():
        r = members[0]
        f = min(groups[r]) // gpn
        yield (tuple(groups[r]), volumes[r], np.array([min(groups[i]) // gpn - f for i in members], dtype=np.int64),
               np.array(members, dtype=np.int64))


def moved_class_key(topo: Topology, arr: np.ndarray, first: np.ndarray, volumes: Sequence[float]) -> np.ndarray:
    """:func:`moved_classes`' key: a row per group (``arr``: a row of GPUs each, ``first`` its first node, a
    buffer each), equal rows one class (the job-size estimate counts classes with it)."""
    cols = [arr - (first * topo.gpus_per_node)[:, None], np.asarray(volumes, dtype=float).view(np.int64)[:, None]]
    return np.concatenate([*cols, topo.move_keys(arr // topo.gpus_per_node)], axis=1)
