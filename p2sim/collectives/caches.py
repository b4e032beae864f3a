"""What the collectives layer derives from one topology, kept by whoever runs the expansions.

A :class:`~p2sim.topology.Topology` is an immutable graph (its routes are its router's); what
the collectives compute on it lives in a :class:`CollectiveCaches`: the ring searches and "all
on one NVSwitch" answers of each node's GPU sets, the GPUs' classes in the node graph, the
buffer fractions of program prefixes per hierarchy (d) (:func:`~p2sim.collectives.volumes.step_fractions`'s
row counts, for every lowering onto the topology), what the hop builders keep (the rings' routed hops
across nodes, CollNet's heads of each node's GPU sets, NCCL's double binary trees by node count),
and per set of rates every expansion an
:class:`~p2sim.collectives.expand.Expander` builds (:class:`Expansions`).  A study creates one per topology and hands it to every expander of it
(the simulation layer's :class:`~p2sim.sim.context.SimulationContext` extends it with step
results); an expander given none makes its own.

Two ways to drop what is kept, and no other:

* :meth:`CollectiveCaches.forget_order` drops what depends on the order groups came in -- the
  decisions taken once per group shape (NCCL's choice, channel counts, estimates), which the
  first group of a shape takes for all -- so that independent tasks run on one context compute
  what each would alone.  Ring searches, row counts and every group's expansion stay.
* :meth:`CollectiveCaches.clear` drops everything (memory; results never change).

The built collectives and structures of one :class:`Expansions` hold at most
:data:`CACHE_BYTES` of arrays; past it the expander drops the least
recently used (:meth:`Expansions.keep`, :meth:`Expansions.touch`: one ledger for every stage's cache).
Imports the topology and formalism layers only.
"""

from __future__ import annotations

import numpy as np

from ..formalism.hierarchy import SynthesisHierarchy
from ..topology import Topology
from ..topology.settings import ModelRates
from .decisions import Decisions
from .pattern import Collective

__all__ = ["CollectiveCaches", "Expansions", "structure_key", "CACHE_BYTES", "PER_SHAPE"]

PER_SHAPE = ("channels", "available", "estimate")  # Shapes.memo's decisions, one per group shape


# bytes of arrays the built collectives and structures of one topology may hold before the least
# recently used are dropped (a design figure, not a model one: unbounded, a 16,384-GPU rank on the
# 3-tier SuperPOD reached 5 GiB; at 128 MiB it stays near 0.5 GiB but rebuilds enough to run over
# twice as long, while 2,048-node sweeps on h100 and p5 stay at 265-266 MiB, 366 MiB at 384 MiB;
# dropping only costs rebuilding, never a result)
CACHE_BYTES = 128 * 2**20


def _arrays_nbytes(obj: object) -> int:
    """Bytes of the numpy arrays a collective's flows or a structure's tables hold (one level deep)."""
    raw = getattr(obj, "raw", None) or ((),)
    parts = (list(getattr(obj, "flows", ())) + list(getattr(obj, "tables", ())) + list(getattr(obj, "loads", ()))
             + [t for t in raw[0] if t not in getattr(obj, "tables", ())])
    total = 0
    for p in parts:
        values = p if isinstance(p, tuple) else vars(p).values() if hasattr(p, "__dict__") else ()
        total += sum(v.nbytes for v in values if isinstance(v, np.ndarray))
    return total


class Expansions:
    """The caches of every :class:`~p2sim.collectives.expand.Expander` of one topology with the same rates.

    ``lender``: the expansions of a topology with the same :func:`structure_key` whose structures these build
    into and find, and whose ledger counts both (:meth:`CollectiveCaches.share`); else their own."""

    def __init__(self, lender: Expansions | None = None) -> None:
        self.cache: dict[tuple, Collective] = {}
        self.choice: dict[tuple, tuple[str, str]] = {}
        self.by_shape: dict[tuple, object] = {}
        self.shapes: dict[tuple[int, ...], tuple] = {}
        self.moved: dict[tuple, Collective] = {}
        self.structures: dict[tuple, object] = {} if lender is None else lender.structures
        self.settings: dict[tuple, tuple] = {}
        self.chosen: dict[tuple, tuple[str, str]] = {}
        # NCCL's choice per group with the order-dependent reads it made, kept across forget_order: a later
        # task replays a choice whose reads still hold (decisions.py)
        self.decisions = Decisions()
        # what cache, moved and structures hold, least recently used first: (id(dict), key) -> (dict, bytes)
        self.held: dict[tuple, tuple[dict, int]] = {} if lender is None else lender.held
        self.held_bytes = [0] if lender is None else lender.held_bytes

    def keep(self, cache: dict, key: tuple, built: object) -> None:
        """Cache ``built`` and count what it holds; past :data:`CACHE_BYTES`, the least recently used
        collectives and structures are dropped (NCCL's per-shape decisions stay: they make results
        independent of what was built).  The arrays count, and the group's members as Python ints in
        the entry's key (about 40 bytes each)."""
        cache[key] = built
        size = _arrays_nbytes(built) + 40 * len(getattr(built, "members", ()) or ())
        ledger = self.held
        ledger[(id(cache), key)] = (cache, size)
        self.held_bytes[0] += size
        while self.held_bytes[0] > CACHE_BYTES and len(ledger) > 1:
            (_, old), (owner, old_size) = next(iter(ledger.items()))
            del ledger[(id(owner), old)]
            owner.pop(old, None)
            self.held_bytes[0] -= old_size

    def touch(self, cache: dict, key: tuple) -> None:
        """A cache hit: its entry becomes the most recently used."""
        entry = self.held.pop((id(cache), key), None)
        if entry is not None:
            self.held[(id(cache), key)] = entry

    def adopt_structures(self, other: Expansions) -> None:
        """Keep ``other``'s structures too (least recently used first, as it held them), counted in this
        ledger (``other`` held them within :data:`CACHE_BYTES`)."""
        for (owner_id, key), (owner, size) in other.held.items():
            if owner is other.structures and key not in self.structures:
                self.structures[key] = owner[key]
                self.held[(id(self.structures), key)] = (self.structures, size)
                self.held_bytes[0] += size

    def forget_order(self) -> None:
        """Drop what was decided once per group shape (NCCL's choice, channels, estimates):
        the first group of a shape decides for all, so across independent tasks the decisions
        must not depend on which task ran first.  Caches exact per group stay, and so do the choices'
        logs (:attr:`decisions`), which a later task replays only where every read still holds."""
        for d in (self.choice, self.settings, self.chosen):
            d.clear()
        for key in [k for k in self.by_shape if k[0] in PER_SHAPE]:
            del self.by_shape[key]

    def clear(self) -> None:
        """Drop everything, in place: the expanders that share these caches keep sharing them (and so do the
        expansions that share the structures and the ledger: what they hold of their own stays counted)."""
        mine = (self.cache, self.moved, self.structures)
        for key, (owner, size) in list(self.held.items()):
            if any(owner is d for d in mine):
                del self.held[key]
                self.held_bytes[0] -= size
        for d in (self.cache, self.choice, self.by_shape, self.shapes, self.moved, self.structures, self.settings,
                  self.chosen):
            d.clear()
        self.decisions.clear()


def structure_key(topo: Topology) -> tuple:
    """What a collective's structure (and every other rate-free cache: ring searches, one-switch answers, GPU
    classes) reads of ``topo``: equal keys build equal structures, so topologies with equal keys may share them.

    What each builder reads (checked in the code, issue 34):

    * the ring search and one-switch answer (:mod:`.hops.ringsearch`), the GPU classes (:mod:`.shapes`), NVLS's head
      count (:func:`~p2sim.collectives.hops.nvls.nvlink_gbps`): the capacities of node links only, kept in full (with
      the node faults that change them);
    * every structure's hops: the routes -- inside a node by the node's links; between switches of a flat
      network by their links' capacities (kept in full); from a NIC into the network by its cable's weight
      (:func:`~p2sim.topology.paths.hop_weight`: a tie-break by bandwidth), so the chosen NIC-to-NIC routes
      themselves are part of the key; a fabric's by arithmetic over its sizes and, under ECMP, its ports;
    * the routes' latencies (kept in full);
    * a channel count (NVLS Tree's by NIC speed, ``Structures.channels`` by the ring's throughput): not read by the
      structure but passed to it, in the structure's own cache key.

    So the key is the system file with every link rate and the tiers' oversubscription (or uplink ports) left out,
    the node count, the capacity of every link but the NICs' cables and a fabric's uplinks, every latency, the
    fabric's ECMP ports (they number the links) and a flat network's NIC-to-NIC routes: points of a what-if that
    vary a NIC's or an uplink's rate share their structures; points that vary a node link do not."""
    return topo.rate_free_key


class CollectiveCaches:
    """The collectives' caches of one topology: ring searches, one-switch answers, GPU classes, the
    row counts of program prefixes (:attr:`row_counts`), the hop builders' routed ring hops, CollNet heads
    and double binary trees, and per set of rates the expanders' :class:`Expansions`.

    Examples
    --------
    >>> from p2sim.topology import load_system
    >>> from p2sim.collectives import Expander
    >>> caches = CollectiveCaches(load_system("h100", nodes=1))
    >>> a, b = Expander(caches.topo, caches=caches), Expander(caches.topo, caches=caches)
    >>> a.choose("AllReduce", tuple(range(8)), 2**30), len(caches.rings) > 0
    (('nvls', 'Simple'), True)
    >>> b.rings((0, 1, 2, 3, 4, 5, 6, 7)) is caches.rings[(0, 1, 2, 3, 4, 5, 6, 7)]  # shared, not searched again
    True
    """

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.rings: dict[tuple[int, ...], tuple[tuple[tuple[int, ...], float], ...]] = {}  # by local GPUs
        self.one_switch: dict[tuple[int, ...], bool] = {}  # by local GPUs: any ring order is as good
        self.gpu_classes: tuple[str, ...] | None = None  # each local GPU's class in the node graph
        # step_fractions' memo: per (hierarchy (d), reduction groups), the rows held after each program
        # prefix and each instruction's group array (exact; shared by every lowering with that (d))
        self.row_counts: dict[tuple[SynthesisHierarchy, int], dict] = {}
        # the hop builders' (:mod:`.hops.ring`, :mod:`.hops.collnet`, :mod:`.hops.tree`): each channel pair's hops round a ring
        # across nodes, routed, least recently used first within ring.CYCLIC_BYTES (counted in cyclic_bytes);
        # the CollNet heads of each local GPU set on node 0, by (local GPUs, limit); the double binary trees'
        # parents by node count
        self.cyclic: dict[tuple, list] = {}
        self.cyclic_bytes = [0]
        self.collnet_heads: dict[tuple[tuple[int, ...], int], tuple[tuple[str, int], ...]] = {}
        self.double_trees: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._expansions: dict[ModelRates, Expansions] = {}
        self._lender: CollectiveCaches | None = None  # whose structures this builds into (share)

    def expansions(self, rates: ModelRates) -> Expansions:
        """The expansions of this topology with ``rates`` (shared by every expander given them)."""
        hit = self._expansions.get(rates)
        if hit is None:
            lender = None if self._lender is None else self._lender.expansions(rates)
            hit = self._expansions[rates] = Expansions(lender)
        return hit

    def share(self, other: CollectiveCaches) -> bool:
        """Build into ``other``'s ring searches, one-switch answers, row counts, ring tables across nodes and
        structures from now on, and find there what either built, where its topology has the same
        :func:`structure_key` (what-if points that vary only NIC or uplink rates, searched together): what each
        builds from its own topology is then the same (:meth:`adopt`'s reason).  The structures of expansions
        made from now on are counted in ``other``'s ledger (one :data:`CACHE_BYTES` for both); what depends on
        rates stays each one's own.  Returns whether it shares."""
        if other is self or structure_key(self.topo) != structure_key(other.topo):
            return False
        for mine, theirs in ((self.rings, other.rings), (self.one_switch, other.one_switch),
                             (self.row_counts, other.row_counts)):
            for k, v in mine.items():
                theirs.setdefault(k, v)
        self.rings, self.one_switch, self.row_counts = other.rings, other.one_switch, other.row_counts
        # the rings' routed hops across nodes read the routes and the node links, as the structures built
        # from them do: one store, under one CYCLIC_BYTES (the ring tables kept here join it)
        for k, v in self.cyclic.items():
            if k not in other.cyclic:
                other.cyclic[k] = v
                other.cyclic_bytes[0] += sum(c.nbytes() for c in v)
        self.cyclic, self.cyclic_bytes = other.cyclic, other.cyclic_bytes
        self.gpu_classes = self.gpu_classes or other.gpu_classes
        self._lender = other
        return True

    def forget_order(self) -> None:
        """Drop what depends on the order groups came in (see the module docstring)."""
        for e in self._expansions.values():
            e.forget_order()

    def adopt(self, other: CollectiveCaches) -> bool:
        """Take ``other``'s ring searches, one-switch answers, GPU classes, row counts and structures, where
        its topology has the same :func:`structure_key` (a what-if point that varies only NIC or uplink rates):
        what each builds from its own topology is then the same.  What depends on rates (NCCL's choice, channel
        counts, settings, estimates, built collectives) stays each one's own.  Returns whether it did."""
        if structure_key(self.topo) != structure_key(other.topo):
            return False
        self.rings.update(other.rings)
        self.one_switch.update(other.one_switch)
        self.gpu_classes = self.gpu_classes or other.gpu_classes
        for k, v in other.row_counts.items():
            self.row_counts.setdefault(k, v)
        for rates, mine in other._expansions.items():
            self.expansions(rates).adopt_structures(mine)
        return True

    def clear(self) -> None:
        """Drop everything kept (results never change; only rebuilding costs)."""
        for e in self._expansions.values():
            e.clear()
        self.rings.clear()
        self.one_switch.clear()
        self.row_counts.clear()
        self.gpu_classes = None
        self.cyclic.clear()
        self.cyclic_bytes[0] = 0
        self.collnet_heads.clear()
        self.double_trees.clear()
