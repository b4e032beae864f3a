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

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..formalism.hierarchy import LoweredStep
from ..topology import Topology
from ..util.arrays import row_order

__all__ = ["GeometryStore", "StepGeometry", "link_work", "moved_classes", "moved_class_key", "used_links"]

# what a context keeps of steps' moved links (StepGeometry): a SuperPOD step's are up to a few MiB, and a
# search bounds a step at two or three sizes on average (measured: 895 bounds of 347 steps, superpod-h100
# at 2,048 nodes), most of them close together; the tasks of a search meet the same groups and collectives
# again (a plan's 165 tasks on that SuperPOD: 1,580 of 2,841 moved links met in an earlier task)
LINKS_BYTES = 32 * 2**20
# and of steps' classes of moved groups (a class's group and its groups' shifts and places: 16 bytes a group)
CLASSES_BYTES = 16 * 2**20


def used_links(edges: np.ndarray, links: int) -> np.ndarray:
    """The links of ``edges`` (ids below ``links``), ascending, each once: counted into a table of every link."""
    return np.flatnonzero(np.bincount(edges, minlength=links))


def link_work(edges: np.ndarray, loads: np.ndarray, links: int) -> tuple[np.ndarray, np.ndarray]:
    """The links used (ascending) and the bytes on each: ``loads`` summed per link of ``edges`` in their
    order, as ``numpy.unique`` and a bincount of its inverse would (the same sums), by counting straight
    into a table of every link (no remapping pass)."""
    used = used_links(edges, links)
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
        order = row_order(key)
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


class GeometryStore:
    """What :class:`StepGeometry` keeps, least recently used first within its budgets (``links`` bytes for the
    moved links, :data:`CLASSES_BYTES` for the classes): a function of the topology's link numbering and fabric
    shape only (rates aside), so one store serves every simulator of a context (a search's tasks) and the
    contexts that share structures (:meth:`~p2sim.sim.context.SimulationContext.share`)."""

    def __init__(self, links: int = LINKS_BYTES, classes: int = CLASSES_BYTES) -> None:
        self.budgets = {"classes": classes, "links": links}
        self.classes: OrderedDict[bytes, list] = OrderedDict()
        self.links: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self.held = {"classes": 0, "links": 0}

    def find(self, kind: str, key: Any) -> Any:
        """The entry kept under ``key`` (None if none), now the most recently used."""
        table = getattr(self, kind)
        hit = table.get(key)
        if hit is not None:
            table.move_to_end(key)
        return hit

    def keep(self, kind: str, key: Any, value: Any, size: int) -> None:
        """Keep ``value`` (``size`` bytes), the least recently used dropped past the budget (never the last)."""
        table = getattr(self, kind)
        table[key] = value
        self.held[kind] += size
        while self.held[kind] > self.budgets[kind] and len(table) > 1:
            _, old = table.popitem(last=False)
            self.held[kind] -= _nbytes(old)

    def drop(self, kind: str) -> None:
        """Drop every entry of one kind (``"classes"`` or ``"links"``): only rebuilding costs."""
        getattr(self, kind).clear()
        self.held[kind] = 0

    def clear(self) -> None:
        self.drop("classes")
        self.drop("links")


def _nbytes(entry: Any) -> int:
    """Bytes an entry of a :class:`GeometryStore` counts: its arrays, and each class's group as Python ints."""
    if isinstance(entry, tuple):  # moved links: (every group's slot among the links used, the links used)
        return sum(a.nbytes for a in entry)
    return sum(shifts.nbytes + members.nbytes + 40 * len(g) for g, shifts, members in entry)


class StepGeometry:
    """What a step's bound computes from its groups alone, kept for its bounds at other buffer sizes.

    A program search bounds one lowered step at several sizes (program prefixes leave different
    fractions of the buffer), and a matrix's steps of different collectives over the same groups
    (a ReduceScatter, AllReduce, AllGather, Reduce and Broadcast of one slice).  Where every group moves
    the same bytes (compared bit for bit) the classes of moved groups (:func:`moved_classes`) are the same
    at every size and for every collective, and where the classes' collectives load the same links so are
    the moved link ids and the links used: both are kept per group array (by a digest of its GPUs, computed
    once per step object, which this holds while it keeps the digest) in ``store`` (a context's, for all of
    its simulators; by default its own, of ``budget`` bytes of links), least recently used dropped.  What is
    kept is what would be computed again, so results are unchanged.
    """

    def __init__(self, topo: Topology, budget: int = LINKS_BYTES, store: GeometryStore | None = None) -> None:
        self.topo = topo
        self.store = GeometryStore(budget) if store is None else store
        self._groups: dict[int, tuple[LoweredStep, bytes]] = {}  # per step object: its groups' digest
        self._classes = self.store.classes
        self._links = self.store.links

    def groups_digest(self, step: LoweredStep) -> bytes:
        """A 160-bit digest of the step's groups (its GPUs, group by group; not its collective)."""
        hit = self._groups.get(id(step))
        if hit is not None and hit[0] is step:
            return hit[1]
        arr = step.array
        if arr is not None:  # groups of one size: their shape and the array say it all
            data = b"a" + np.array(arr.shape, np.int64).tobytes() + np.ascontiguousarray(arr, dtype=np.int64).tobytes()
        else:
            sizes = np.fromiter(map(len, step.groups), np.int64, len(step.groups))
            members = np.fromiter((m for g in step.groups for m in g), np.int64, int(sizes.sum()))
            data = b"g" + sizes.tobytes() + b"|" + members.tobytes()
        digest = hashlib.blake2b(data, digest_size=20).digest()
        self._groups[id(step)] = (step, digest)  # kept alive while this is: its id stays its own
        return digest

    def classes(self, step: LoweredStep, volumes: Sequence[float]) -> list:
        """:func:`moved_classes` of the step, as a list."""
        bits = np.asarray(volumes, dtype=float).view(np.int64)
        if not len(bits) or (bits != bits[0]).any():
            return list(moved_classes(self.topo, step, volumes))
        key = self.groups_digest(step)
        hit = self.store.find("classes", key)
        if hit is None:
            hit = [(g, shifts, members) for g, _, shifts, members in moved_classes(self.topo, step, volumes)]
            self.store.keep("classes", key, hit, _nbytes(hit))
        v = volumes[0]  # every group's, to the bit
        return [(g, v, shifts, members) for g, shifts, members in hit]

    def links(self, step: LoweredStep, classes: list, edges: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Every group's link ids (each class's ``edges`` moved to its groups, classes in order) and the
        links they use (ascending), as :func:`link_work` counts them.  Kept by the groups, each class's groups
        (which, with the groups, say its moves) and its collective's links (:meth:`slots`)."""
        slots, used = self.slots(step, classes, edges)
        return used[slots], used

    def slots(self, step: LoweredStep, classes: list, edges: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`links` as each link id's place among the links used (``used[slots]`` are the ids): a count
        per slot adds what a count per link id would, in the same order, into a table the size of the links
        used."""
        h = hashlib.blake2b(digest_size=20)
        for e, c in zip(edges, classes):
            e = np.ascontiguousarray(e, dtype=np.int64)
            members = np.ascontiguousarray(c[3], dtype=np.int64)
            h.update(len(members).to_bytes(8, "little"))
            h.update(members.tobytes())
            h.update(len(e).to_bytes(8, "little"))
            h.update(e.tobytes())
        key = (self.groups_digest(step), h.digest())
        hit = self.store.find("links", key)
        if hit is not None:
            return hit
        gpn = self.topo.gpus_per_node
        moved = [self.topo.move_edges(e, min(c[0]) // gpn, c[2]).ravel() for e, c in zip(edges, classes)]
        all_edges = np.concatenate(moved) if moved else np.zeros(0, dtype=np.int64)
        table = np.bincount(all_edges, minlength=len(self.topo.capacity))  # used_links', and each used link's slot
        used = np.flatnonzero(table)
        table[used] = np.arange(len(used))
        slots = table[all_edges].astype(np.int32)  # (fewer than 2**31 links) half the bytes kept
        self.store.keep("links", key, (slots, used), slots.nbytes + used.nbytes)
        return slots, used

