"""NCCL's choice for a group, kept across independent tasks with the order-dependent reads it made.

What is decided once per group shape (NCCL's choice, channel counts, estimates, settings by group size:
:class:`~p2sim.collectives.caches.Expansions`) is decided by the first group of the shape that a task
meets, so :meth:`~p2sim.collectives.caches.CollectiveCaches.forget_order` drops it between independent
tasks: each task then decides as it would alone.  The tasks of one search meet the same groups again and
again (a plan's 165 tasks on a 2,048-node SuperPOD choose for 2,951 groups, a fifth of them distinct), and
each time NCCL's choice is worked out anew.

A :class:`Decisions` keeps, per group and request (``(op, members, bytes, algo, proto)``), the choice made
and a log of every read and write of those order-dependent stores made while making it (:meth:`record`).
A later task that must choose for the same group with none of it decided yet replays the log
(:meth:`replay`): where every read finds now what it found then (present or absent, and the same value,
compared strictly: :func:`same`), the choice is a deterministic function of the group, the exact caches
(which do not depend on order: ring searches, structures, collectives) and those reads, so it is the
same, and so are its writes, which the replay applies.  Where a read differs, the choice is worked out
as before and its log replaces the old one.  Results are those of working every choice out.

Imports nothing of p2sim: the collectives layer's stores call :meth:`read` and :meth:`write`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["Decisions", "MISSING", "same"]


class _Missing:
    """What a read of an absent key found (distinct from every stored value, None included)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

# bytes of logs kept per set of rates before all are dropped (a design figure: each group's members count as
# Python ints, about 40 bytes each, and each logged read or write about 200; a 2,048-node SuperPOD plan keeps
# about 1,000 logs of groups up to 512 GPUs; dropping only costs working choices out again)
DECISIONS_BYTES = 32 * 2**20


def same(a: Any, b: Any) -> bool:
    """Whether two read values are the same to every computation that reads them: equal types and values,
    floats to the bit (``0.0`` and ``-0.0`` differ, a NaN equals itself), tuples and lists item by item;
    anything else only if it is the same object."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b) or (a != a and b != b)
    if t in (int, str, bool, bytes):
        return a == b
    if t in (tuple, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return False


def _size(key: Any, events: Sequence) -> int:
    """The bytes a kept log counts: its group's members (``key[1]`` where the key is ``Choice.choose``'s) as
    Python ints, and its events."""
    members = key[1] if isinstance(key, tuple) and len(key) > 1 and isinstance(key[1], tuple) else ()
    return 40 * len(members) + 200 * len(events)


class Decisions:
    """Choices per group with the log of order-dependent reads and writes each made (see the module text).

    ``recorded``, ``replayed`` and ``refused`` count the choices worked out and logged, those taken from a
    log, and the logs whose reads no longer held (the tests read them)."""

    def __init__(self) -> None:
        self.kept: dict[tuple, tuple[Any, tuple]] = {}
        self.log: list | None = None  # the events of the choice being recorded, if any
        self.recorded = self.replayed = self.refused = 0
        self.held = 0  # the bytes the kept logs count (DECISIONS_BYTES)

    def read(self, store: dict, key: Any) -> Any:
        """``store[key]`` or :data:`MISSING`, logged while a choice is recorded."""
        value = store.get(key, MISSING)
        if self.log is not None:
            self.log.append((store, key, value, False))
        return value

    def write(self, store: dict, key: Any, value: Any) -> Any:
        """``store[key] = value``, logged while a choice is recorded; returns ``value``."""
        store[key] = value
        if self.log is not None:
            self.log.append((store, key, value, True))
        return value

    @property
    def recording(self) -> bool:
        return self.log is not None

    def replay(self, key: tuple) -> Any:
        """The choice kept for ``key`` if every read of its log finds now what it found then (its writes
        then applied, as working it out would make them), else :data:`MISSING`."""
        hit = self.kept.get(key)
        if hit is None:
            return MISSING
        value, events = hit
        overlay: dict[tuple[int, Any], tuple[dict, Any, Any]] = {}
        for store, k, v, write in events:
            where = (id(store), k)
            if write:
                overlay[where] = (store, k, v)
                continue
            now = overlay[where][2] if where in overlay else store.get(k, MISSING)
            if not same(now, v):
                self.refused += 1
                return MISSING
        for store, k, v in overlay.values():
            store[k] = v
        self.replayed += 1
        return value

    def record(self, key: tuple, compute) -> Any:
        """``compute()``, with its reads and writes of the order-dependent stores logged and kept under
        ``key`` (nothing kept if it raises)."""
        self.log = log = []
        try:
            value = compute()
        finally:
            self.log = None
        size = _size(key, log)
        if self.held + size > DECISIONS_BYTES:
            self.kept.clear()
            self.held = 0
        old = self.kept.get(key)
        if old is not None:  # a refused log replaced
            self.held -= _size(key, old[1])
        self.kept[key] = (value, tuple(log))
        self.held += size
        self.recorded += 1
        return value

    def clear(self) -> None:
        self.kept.clear()
        self.log = None
        self.held = 0
