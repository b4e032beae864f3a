"""Symmetry: flows that max-min sharing cannot tell apart are solved once per class.

The groups of a lowered program step are congruent -- the same collective moved by a
symmetry of the system -- so their flows get equal rates at every instant, and computing
them flow by flow repeats one computation.  This module finds such classes from the flows
themselves, without being told about the system's symmetries, and with no assumption that
could change a result:

* An **equitable partition** of flows and links: flows of one class have equal volume,
  latency and multiset of (coefficient, link class) over their links; links of one class
  have equal capacity and multiset of (coefficient, flow class) over their flows.
* **Why it is exact.**  Progressive filling (which computes the unique max-min fair
  allocation) keeps rates equal within each flow class: while they are, the load of a link
  is a sum over flow classes of (rate x the class's coefficients on that link), equal for
  every link of a class, so the links of a class saturate together; a flow freezes on a
  saturated link exactly when every flow of its class does.  The classes join together (one
  latency) and, with one volume, finish together; removing whole classes leaves the
  partition equitable.  So the event-driven run of the *quotient* -- one flow per flow
  class, one link per link class (any one of its links), the coefficient of class ``A`` on
  it the sum of its flows' coefficients there -- has the same events, rates and makespan,
  up to floating-point rounding in those sums.
* **How it is found.**  Colour refinement (one-dimensional Weisfeiler-Leman) on the
  weighted flow-link graph: flows start coloured by (volume, latency), links by capacity,
  and each round recolours every flow by its colour and the multiset of (coefficient, link
  colour) of its links, and every link likewise, until no class splits.  Multisets are
  compared through sums of 64-bit hashes, which could in principle collide; the partition
  found is therefore **checked exactly** (every entity's multiset counted and compared with
  its class's first, or sorted where such a table would be large) and discarded when the
  check fails.  A round whose flow classes do not split ends it: the links' next refinement,
  by the same flow classes, could split none of theirs.  Nothing the size of the links or of
  the (flow, link) pairs is sorted where avoidable (a step of 16,384 GPUs has ~500,000 pairs):
  link colours stay hashes until the end, then get ids from a table of their low bits.

:func:`quotient` returns ``None`` when there is nothing to gain (every flow its own class)
or the check fails: the caller then solves the flows as they are.

Examples
--------
Four flows of 10 bytes, each over its own link of 5 bytes/s and all over one shared link
of 8 bytes/s: one class of flows, two classes of links.

>>> indptr = np.array([0, 2, 4, 6, 8])
>>> links = np.array([0, 4, 1, 4, 2, 4, 3, 4])
>>> q = quotient(indptr, links, np.ones(8), np.array([5.0, 5, 5, 5, 8]), np.full(4, 10.0), np.zeros(4))
>>> q.of_flow.tolist(), q.indptr.tolist(), q.links.tolist(), q.coef.tolist(), q.capacity.tolist()
([0, 0, 0, 0], [0, 2], [0, 1], [1.0, 4.0], [5.0, 8.0])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..util.arrays import unique_first, unique_inverse

__all__ = ["Quotient", "quotient"]

_U = np.uint64
_TOP = _U(1 << 63)
_GOLD, _M1, _M2 = _U(0x9E3779B97F4A7C15), _U(0xBF58476D1CE4E5B9), _U(0x94D049BB133111EB)
# hashes below this many values are told apart by sorting; above, by a table of their low bits of
# this size (a power of 2): 2^16 entries, so that a few hundred link classes rarely share them
_LOW = 1 << 16
_FEW = 8  # distinct coefficients told apart by comparison passes; more by sorting
_SMALL = 1 << 16  # a table of counts this small is always worth it (:func:`_alike`)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a bijection of 64-bit words that scatters nearby inputs."""
    x = x.astype(_U)  # a copy, then worked on in place (no temporaries per step)
    x += _GOLD
    shifted = np.empty_like(x)
    for bits, factor in ((30, _M1), (27, _M2), (31, None)):
        np.right_shift(x, _U(bits), out=shifted)
        x ^= shifted
        if factor is not None:
            x *= factor
    return x


def _ids(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids of equal values, in order of first appearance (deterministic).

    64-bit hashes are first told apart by their low bits in a table (linear time); where two
    distinct hashes share them, and for other values, by ``numpy.unique``'s sort and inverse.
    Either way the first position of each value comes from a pass over the ids: ``numpy.unique``'s
    ``return_index`` would take a stable sort, three times slower.
    """
    inverse = None
    if values.dtype == _U and len(values) > _LOW:
        low = (values & _U(_LOW - 1)).astype(np.int64)
        seen = np.full(_LOW, len(values), dtype=np.int64)
        np.minimum.at(seen, low, np.arange(len(values), dtype=np.int64))
        if np.array_equal(values[seen[low]], values):  # no two distinct hashes share their low bits
            present = np.flatnonzero(seen < len(values))
            first = seen[present]
            label = np.empty(_LOW, dtype=np.int64)
            label[present[np.argsort(first)]] = np.arange(len(present))
            return label[low], len(present)
    uniq, inverse = np.unique(values, return_inverse=True)
    inverse = inverse.reshape(-1)
    first = np.full(len(uniq), len(inverse), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(inverse), dtype=np.int64))
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse], len(first)


def _few_ids(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids of equal values (in any order): a comparison pass per distinct value while they are
    few (a step's coefficients take a handful), else ``numpy.unique``'s sort."""
    ids = np.zeros(len(values), dtype=np.int64)
    rest = np.flatnonzero(values != values[0])
    count = 1
    while rest.size and count < _FEW:
        alike = values[rest] == values[rest[0]]
        ids[rest[alike]] = count
        rest = rest[~alike]
        count += 1
    if not rest.size:
        return ids, count
    uniq = np.unique(values)
    return np.searchsorted(uniq, values), len(uniq)


def _hash_of(keys: np.ndarray, size: int) -> np.ndarray:
    """``_mix(keys)`` of non-negative integer keys below ``size``: looked up in a table of every key
    where that table is no larger than the keys (one gather instead of the mixing passes)."""
    if size <= len(keys):
        return _mix(np.arange(size, dtype=np.int64))[keys]
    return _mix(keys)


def _pair(major: Callable[[], np.ndarray], nmajor: int, minor: np.ndarray, nminor: int) -> np.ndarray:
    """Keys ``major * nminor + minor`` (``major()`` below ``nmajor``), without the passes over a side that
    is constant (one class of flows, one coefficient: the usual case)."""
    if nmajor == 1:
        return minor
    return major() if nminor == 1 else major() * nminor + minor


def _equitable(colour: np.ndarray, order: np.ndarray, ptr: np.ndarray, key: np.ndarray) -> bool:
    """Whether every entity's sorted multiset of ``key`` equals that of the first entity of its colour."""
    counts = np.diff(ptr)
    _, first = unique_first(colour)
    rep = first[colour]
    if not np.array_equal(counts, counts[rep]):
        return False
    ordered = key[order]
    within = np.arange(len(order)) - np.repeat(ptr[:-1], counts)
    return bool(np.array_equal(ordered, ordered[np.repeat(ptr[:-1][rep], counts) + within]))


def _digits(deg_max: int) -> int:
    """How many keys' counts (each at most ``deg_max``) one float64 holds exactly as digits in base ``deg_max + 1``:
    the largest ``g`` with ``(deg_max + 1) ** g <= 2 ** 53`` (every sum of such digits is then an exact integer)."""
    base, g = max(deg_max, 1) + 1, 0  # a count of at most 0 still needs a base of 2 (and ends the loop)
    while base ** (g + 1) <= 1 << 53:
        g += 1
    return g


def _alike(colour: np.ndarray, rep: np.ndarray, entity: np.ndarray, key: np.ndarray, nkeys: int) -> bool:
    """Whether every entity holds the same multiset of ``key`` (below ``nkeys``) as ``rep[its colour]``,
    incidence ``i`` being entity ``entity[i]``'s.

    Counted into a table of entities x keys where that table is no larger than the incidences (one pass,
    exact).  Else each entity's multiset is its count of every key written as digits in base ``b`` = (most
    incidences of an entity) + 1 -- no count reaches ``b``, so equal numbers are equal multisets and unequal
    ones unequal -- as many digits to a float64 as keep it below 2^53 (exact integer sums): a table of
    entities x ``ceil(nkeys / digits)`` words, one word where the keys are few (a 16,384-GPU step's links: the
    keys' own table was a gather and a comparison of millions of counts, a fifth of the quotient).  Where
    even that table is large, by :func:`_equitable`'s sort."""
    n = len(colour)
    if n * nkeys <= len(key) + _SMALL:
        table = np.bincount(entity if nkeys == 1 else entity * nkeys + key, minlength=n * nkeys).reshape(n, nkeys)
        return bool(np.array_equal(table, table[rep[colour]]))
    deg = np.bincount(entity, minlength=n)
    base = max(int(deg.max(initial=0)), 1) + 1
    digits = _digits(base - 1)
    words = -(-nkeys // digits) if digits else nkeys + 1
    if digits and n * words <= 4 * len(key) + _SMALL:
        word, digit = (None, key) if words == 1 else np.divmod(key, digits)
        weight = np.array([base ** d for d in range(digits)], dtype=float)[digit]  # exact: integers below 2^53
        table = np.bincount(entity if words == 1 else entity * words + word, weights=weight,
                            minlength=n * words).reshape(n, words)
        return bool(np.array_equal(table, table[rep[colour]]))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg, out=ptr[1:])
    return _equitable(colour, np.lexsort((key, entity)), ptr, key)


@dataclass(frozen=True)
class Quotient:
    """Flows and links by class: class flow ``a`` loads class link ``links[indptr[a]:indptr[a+1]]``
    with ``coef``; ``of_flow[j]`` is flow ``j``'s class, ``flow_rep[a]`` one flow of class ``a``."""

    of_flow: np.ndarray
    flow_rep: np.ndarray
    indptr: np.ndarray
    links: np.ndarray
    coef: np.ndarray
    capacity: np.ndarray


def quotient(indptr: np.ndarray, links: np.ndarray, coef: np.ndarray, capacity: np.ndarray, volume: np.ndarray,
             latency: np.ndarray, rounds: int = 64) -> Quotient | None:
    """The quotient of flows over links by their coarsest equitable partition, or ``None``.

    Flow ``j`` loads links ``links[indptr[j]:indptr[j + 1]]`` (indices into ``capacity``,
    each once per flow) with positive ``coef``.  ``None`` when every flow is its own class,
    a flow has no link, refinement has not settled after ``rounds`` rounds, or the partition
    found fails the exact check.
    """
    n = len(indptr) - 1
    counts = np.diff(indptr)
    if n < 2 or not counts.all():
        return None
    owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    links = np.asarray(links, dtype=np.int64)
    capacity = np.asarray(capacity, dtype=float)
    if np.bincount(links, minlength=len(capacity)).all():  # every link loaded: its id is its own
        local, cap = links, capacity
    else:
        used, local = unique_inverse(links)
        cap = capacity[used]
    nlinks = len(cap)
    cid, ncoef = _few_ids(np.asarray(coef, dtype=float))  # coefficient ids (any order serves)
    attrs = np.stack([np.asarray(volume, dtype=float), np.asarray(latency, dtype=float)], axis=1)
    fcol, nf = _ids(attrs.view(np.dtype((np.void, 16))).reshape(-1))
    lhash = _mix((cap + 0.0).view(_U))  # links coloured by their capacity (+ 0.0: -0.0 is 0.0)
    # the hash of each (coefficient, link colour) incidence is looked up in a table of every pair where
    # that table is no larger than the incidences
    paired = ncoef * nlinks <= len(local)
    at_link = cid * nlinks + local if paired else None
    cterm = _mix(np.arange(ncoef, dtype=np.int64))
    # each incidence's (flow, coefficient) slot: its hash is read from a table of every flow's, one gather a round
    # (the same hash as of its (flow colour, coefficient) pair, _hash_of)
    slot = owner * ncoef + cid if ncoef > 1 else owner
    for _ in range(rounds):
        # links: their colour with the hashed multiset of (coefficient, flow colour) of their flows; a
        # link's colour stays a 64-bit hash (no ids needed: flows are coloured by it next)
        sums = np.zeros(nlinks, dtype=_U)
        if nf == 1:
            np.add.at(sums, local, _hash_of(cid, ncoef))
        else:
            np.add.at(sums, local, _mix(np.arange(nf * ncoef, dtype=np.int64)).reshape(nf, ncoef)[fcol].reshape(-1)[slot])
        lhash = _mix(_mix(lhash + _TOP) + sums)  # wraps modulo 2^64: a multiset hash
        # flows: theirs with the hashed multiset of (coefficient, link colour) of their links
        if ncoef == 1:  # link colours are hashes already
            elems = lhash[local]
        elif paired:
            elems = _mix(lhash[None, :] + cterm[:, None]).reshape(-1)[at_link]
        else:
            elems = _mix(lhash[local] + cterm[cid])
        sums = np.add.reduceat(elems, indptr[:-1])
        fcol2, nf2 = _ids(_mix(_mix(fcol.astype(_U) + _TOP) + sums))
        # flow classes that no longer split are settled: the links' next refinement (by the same flow
        # classes) cannot split theirs either, nor that the flows'
        settled = nf2 == nf
        fcol, nf = fcol2, nf2
        if nf == n:
            return None  # every flow its own class: nothing to gain
        if settled:
            break
    else:
        return None
    lcol, nl = _ids(lhash)
    # the exact check: equal attributes and equal multisets within every class
    _, frep = unique_first(fcol)
    _, lrep = unique_first(lcol)
    if not (np.array_equal(attrs, attrs[frep[fcol]]) and np.array_equal(cap, cap[lrep[lcol]])):
        return None
    at = lcol[local]
    # each incidence's (link class, coefficient) and (flow class, coefficient) pair, _pair's keys, read from a
    # table per link and coefficient (per flow and coefficient) where one is no larger than the incidences
    if nl > 1 and ncoef > 1 and paired:
        link_keys = (lcol[None, :] * ncoef + np.arange(ncoef, dtype=np.int64)[:, None]).reshape(-1)[at_link]
    else:
        link_keys = _pair(lambda: at, nl, cid, ncoef)
    if nf > 1 and ncoef > 1:
        flow_keys = (fcol[:, None] * ncoef + np.arange(ncoef, dtype=np.int64)[None, :]).reshape(-1)[slot]
    else:
        flow_keys = _pair(lambda: fcol[owner], nf, cid, ncoef)
    if not (_alike(fcol, frep, owner, link_keys, nl * ncoef) and _alike(lcol, lrep, local, flow_keys, nf * ncoef)):
        return None
    # one link per link class; a class of flows loads it with its flows' summed coefficients
    on_rep = np.flatnonzero(lrep[at] == local)
    pair = fcol[owner[on_rep]] * nl + lcol[local[on_rep]]
    keys, inverse = unique_inverse(pair)
    qcoef = np.bincount(inverse, weights=coef[on_rep], minlength=len(keys))
    qflow, qlink = np.divmod(keys, nl)
    qptr = np.zeros(nf + 1, dtype=np.int64)
    np.cumsum(np.bincount(qflow, minlength=nf), out=qptr[1:])
    return Quotient(fcol, frep, qptr, qlink, qcoef, cap[lrep])
