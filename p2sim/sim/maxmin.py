"""Max-min fair sharing of links among weighted fluid flows, kept up to date incrementally.

Flow ``j`` at rate ``x_j`` loads link ``l`` with ``c_jl * x_j``.  The max-min fair allocation
is what progressive filling gives: all flows grow at the same rate until a link saturates,
the flows crossing it freeze, repeat.  Equivalently every flow crosses a *bottleneck*: a
saturated link on which no flow is faster.

:class:`MaxMin` keeps that allocation while flows join and leave, touching only what
changes:

* **Sparse.**  Usage is kept per flow and per link, never as a flows x links matrix.
* **Ceilings.**  A finite link that only one flow crosses (as the simulator's per-channel
  ceiling) is no shared constraint: it caps its flow at ``capacity / coef``, and a flow that
  grows stands on its other links at that ceiling instead of growing without bound.
* **Only the links that bind.**  The allocation is solved over a set ``K`` of links: those
  that bind now or lately, and each joining flow's tightest link.  A solution over ``K`` that
  fits every other link is the solution over all links (each flow's bottleneck in ``K`` is
  still a bottleneck), so after each update the links of the flows that sped up are checked;
  a link found overloaded joins ``K`` and a second repair goes on from the allocation reached
  (it lowers the flows above that link's level, as a join would).  A link of ``K`` left
  unsaturated by an update leaves it.
* **Local repair in level order.**  An update re-runs progressive filling only where the
  allocation can change, like Dijkstra's algorithm over levels: a heap holds the *dirty*
  links (a flow on them changed) keyed by the level at which they saturate; flows that touch
  no dirty link keep their rates.  A saturating link freezes its flows that still grow and
  lowers the faster ones (whose other links become dirty); a flow whose every bottleneck
  became dirty is released at its old rate and grows on.  Everything below the current level
  is final, as in progressive filling, so the result is the same allocation
  (:func:`~p2sim.sim.repair.repair`, in a module of its own).
* **Water-filling kept per link.**  Each link of ``K`` keeps its water-filling state -- the
  level ``t`` at which it saturates, its capped flows sorted by ceiling, the load ``B`` of
  those below ``t`` and the weight ``W`` of the rest (``B + W t = capacity``) -- so a flow
  changing its ceiling moves ``t`` by a binary search and a few steps along the sorted
  ceilings; ``B`` and ``W`` are summed afresh every 256 moves, against rounding drift.
* **In groups.**  What happens at one level is applied per link at once, with one walk of
  its level: a saturating link sets its own state once for all the flows it stops, then
  their moves are grouped by their other links; the flows released at one level (those of
  the links that became dirty) likewise.  Flows that only move within ``W`` leave the level
  alone.  Each link's state is worked on in place (copied back from the rates only when a
  repair must be redone, for a flow left unbounded on ``K``).

Small networks (at most ``_DENSE`` flows x links) are solved whole at every update by
:func:`max_min_rates`, dense progressive filling, which is faster there; mid-size ones (up to
``_DENSE_MATRIX``) for their first ``_DENSE_UPDATES`` updates, then incrementally from the
allocation reached.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .repair import _B, _DIGITS, _INF, _T, _TIE, repair

__all__ = ["MaxMin", "max_min_rates"]

# a link not in K is overloaded when its load exceeds its capacity by more than this (relative)
_OVER = 1e-12
# the dense solver's saturation test: a link with less than this (relative) left is full
_SATURATED = 1e-12
# a link of K left unsaturated by an update, with this much room (relative), leaves K: less
# to keep up to date, against a second repair when it overloads again (0.1 measured best of
# 0, 0.1, 0.3 when an overload redid the whole update; 0 best of 0, 0.03, 0.1, 0.2 since a
# second repair goes on from the allocation reached: benchmarks/flows_scaling.py, pairs and
# rings of 2000 flows)
_ROOM = 0.0

# networks of at most _DENSE flows x links are solved densely at every update, as before the
# incremental solver: numpy's whole-matrix passes beat its bookkeeping there (measured on
# benchmarks/simulate_appendix.py, up to 32 flows, and benchmarks/flows_scaling.py); up to
# _DENSE_MATRIX (8 MiB of matrix) for their first _DENSE_UPDATES updates, which covers the
# symmetric steps of a program (all groups join, then finish, together), then incrementally
_DENSE = 1 << 14
_DENSE_MATRIX = 1 << 20
_DENSE_UPDATES = 8



class MaxMin:
    """Max-min fair rates of a changing set of active flows.

    Parameters
    ----------
    indptr, links, coef : ndarray
        Flow ``j`` loads links ``links[indptr[j]:indptr[j+1]]`` (indices into ``capacity``)
        with the positive coefficients ``coef[indptr[j]:indptr[j+1]]``, each link once.
    capacity : ndarray
        Link capacities, positive or ``inf`` (never saturates); a zero capacity stops its flows.
    dense : bool, optional
        Solve the whole network densely at every update (:func:`max_min_rates`) instead of
        incrementally; by default only networks of at most ``_DENSE`` flows x links.

    Attributes
    ----------
    rate : ndarray
        Every flow's rate: 0 while inactive, ``inf`` for a flow on infinite links only.

    Examples
    --------
    Link 0 (capacity 10) carries flows 0 and 1; flow 1 also crosses link 1 (capacity 4):

    >>> mm = MaxMin(np.array([0, 1, 3]), np.array([0, 0, 1]), np.ones(3), np.array([10.0, 4.0]), dense=False)
    >>> mm.update(joined=[0, 1]).tolist()
    [0, 1]
    >>> mm.rate.tolist()
    [6.0, 4.0]
    >>> mm.update(finished=[1]).tolist()  # flow 0 takes the whole link
    [0, 1]
    >>> mm.rate.tolist()
    [10.0, 0.0]
    """

    def __init__(self, indptr: np.ndarray, links: np.ndarray, coef: np.ndarray, capacity: np.ndarray,
                 dense: bool | None = None) -> None:
        indptr = np.asarray(indptr, dtype=np.int64)
        links = np.asarray(links, dtype=np.int64)
        coef = np.asarray(coef, dtype=float)
        self.capacity = np.asarray(capacity, dtype=float)
        n, nlinks = len(indptr) - 1, len(self.capacity)
        self.rate = np.zeros(n)
        self.active = np.zeros(n, dtype=bool)
        self._indptr, self._links, self._coef = indptr, links, coef
        self.repairs = 0  # second repairs, after a link outside K was found overloaded
        self._usage = None  # the dense usage matrix while solving densely
        self._dense_left = 0  # dense updates left before going incremental
        size = n * nlinks
        if dense or (dense is None and size <= _DENSE_MATRIX):
            owner = np.repeat(np.arange(n), np.diff(indptr))
            self._usage = np.zeros((n, nlinks))
            self._usage[owner, links] = coef
            self._dense_left = _INF if dense or size <= _DENSE else _DENSE_UPDATES
        else:
            self._start_incremental()

    def _start_incremental(self) -> None:
        """Set up the incremental solver, from the current (max-min fair) rates."""
        indptr, links, coef = self._indptr, self._links, self._coef
        n, nlinks = len(indptr) - 1, len(self.capacity)
        owner = np.repeat(np.arange(n), np.diff(indptr))
        order = np.argsort(links, kind="stable")
        self._lptr = np.concatenate([[0], np.cumsum(np.bincount(links, minlength=nlinks))])
        self._lflows, self._lcoef = owner[order], coef[order]
        self._per_link: dict[int, tuple[list[int], list[float]]] = {}
        self._capacity = self.capacity.tolist()
        # a finite link that only one flow crosses (as the simulator's per-channel ceilings) is
        # no constraint to share: it caps its flow at capacity / coef, an event of the repair
        # instead of a link to keep in K (which halves the work on such networks)
        with np.errstate(divide="ignore"):
            solo = self.capacity[links] / coef
        alone = (np.diff(self._lptr) == 1) & np.isfinite(self.capacity)
        self._alone = alone.tolist()
        ceiling = np.full(n, np.inf)
        np.minimum.at(ceiling, owner[alone[links]], solo[alone[links]])
        self._ceiling = ceiling.tolist()
        # each flow's tightest finite link (least capacity per unit of its load): where it would
        # be limited alone, so it enters K with the flow -- unless its ceiling limits it there
        first = np.lexsort((solo, owner))[np.unique(owner, return_index=True)[1]] if n else owner
        tight = np.full(n, -1, dtype=np.int64)
        finite = np.isfinite(solo[first]) & ~alone[links[first]]
        tight[owner[first][finite]] = links[first][finite]
        self._tight = tight.tolist()
        self._in_k = [False] * nlinks
        self._active = self.active.tolist()
        self._k_links: list[list[int]] = [[] for _ in range(n)]  # each flow's links in K
        self._k_coef: list[list[float]] = [[] for _ in range(n)]  # and its coefficients on them
        self._state: dict[int, list] = {}  # water-filling state of every link in K
        self._rate = self.rate.tolist()  # self.rate as a list, for fast scalar reads
        rate = np.where(np.isfinite(self.rate), self.rate, 0.0)
        self._load = np.bincount(links, weights=coef * rate[owner], minlength=nlinks)  # at the current rates
        used = np.bincount(links, weights=self.active[owner].astype(float), minlength=nlinks) > 0
        full = used & ~alone & np.isfinite(self.capacity) & (self._load >= self.capacity * (1.0 - _TIE))
        self._add_to_k(np.flatnonzero(full).tolist())  # every active flow's bottleneck

    def _flows_of(self, link: int) -> tuple[list[int], list[float]]:
        """The flows on a link and their coefficients (as lists, made when first asked for)."""
        got = self._per_link.get(link)
        if got is None:
            a, b = self._lptr[link], self._lptr[link + 1]
            got = self._per_link[link] = (self._lflows[a:b].tolist(), self._lcoef[a:b].tolist())
        return got

    # ---- public -------------------------------------------------------------------------

    def update(self, joined: Iterable[int] = (), finished: Iterable[int] = ()) -> np.ndarray:
        """Activate ``joined`` and deactivate ``finished`` flows; return the flows whose rate changed."""
        joined = [int(j) for j in joined]
        finished = [int(j) for j in finished]
        if self._usage is not None and self._dense_left > 0:  # a small network: solved whole
            self._dense_left -= 1
            self.active[joined] = True
            self.active[finished] = False
            ids = np.flatnonzero(self.active)
            rate = np.zeros(len(self.rate))
            if ids.size:
                rate[ids] = max_min_rates(self._usage[ids], self.capacity)
            changed = np.flatnonzero(rate != self.rate)
            self.rate[:] = rate
            return changed
        if self._usage is not None:  # many updates: from now on, incrementally
            self._usage = None
            self._start_incremental()
        self._add_to_k(self._tight[j] for j in joined if self._tight[j] >= 0)
        seeds: list[int] = []
        before: dict[int, float] = {}  # the rate before this update of each flow a repair changed
        overloaded: list[int] = []  # links outside K that a repair's rates overloaded
        while True:
            new, work = repair(self, joined, finished, seeds)
            old = self._rate
            changed = sorted([j for j, x in new.items() if x != old[j]])
            unbounded = [self._tight[j] for j in changed if new[j] == _INF and self._tight[j] >= 0]
            if unbounded:  # rare: a flow whose finite links are all outside K
                if all(self._in_k[link] for link in unbounded):
                    raise RuntimeError("max-min repair left a flow unbounded on links it knows")
                for link in work:  # the states worked on, back to the allocation
                    self._state[link] = self._scan(link, self._rate)
                self._add_to_k(unbounded)
                continue  # redone from the same allocation
            load, over = self._check(changed, new)
            for j in changed:
                before.setdefault(j, old[j])
            self._commit(new, work, joined, finished, changed, load)
            if not over:
                break
            # fair over K but overloading links outside it: they join K, and a second repair
            # from this allocation lowers the flows above their levels (as a join would)
            self.repairs += 1
            self._add_to_k(over)
            overloaded += over
            joined, finished, seeds = [], [], over
        if overloaded:
            # their loads went through the overloading rates and back: summed afresh, as a
            # running sum rounds a link's other loads away under a rate far above its capacity
            # (8 + 1e20 - 1e20 = 0: a later overload of the link would go unseen)
            self._sum_loads(overloaded)
        rate = self._rate  # a second repair may set a flow back to its rate before the update
        return np.array(sorted(j for j, x in before.items() if rate[j] != x), dtype=np.int64)

    def _commit(self, new: dict[int, float], work: dict[int, list], joined: list[int],
                finished: list[int], changed: list[int], load: np.ndarray) -> None:
        """Keep a repair's rates, loads and link states."""
        self._load = load
        for j in joined:
            self.active[j] = self._active[j] = True
        for j in finished:
            self.active[j] = self._active[j] = False
        old = self._rate
        for j in changed:
            self.rate[j] = old[j] = new[j]
        # links with room after this update leave K (they rejoin if ever overloaded)
        self._drop_from_k([link for link, s in work.items()
                           if s[_T] == _INF and s[_B] < (1.0 - _ROOM) * self._capacity[link]])

    def _check(self, changed: list[int], new: dict[int, float]) -> tuple[np.ndarray, list[int]]:
        """Loads at the new rates, and the links outside K that they overload."""
        load = self._load.copy()
        if not changed:
            return load, []
        ids = np.array(changed, dtype=np.int64)
        old = self.rate[ids]
        x = np.array([new[j] for j in changed])
        finite = np.isfinite(old) & np.isfinite(x)  # a flow on infinite links only loads nothing
        ids, dx = ids[finite], (x - old)[finite]
        start, stop = self._indptr[ids], self._indptr[ids + 1]
        counts = stop - start
        ents = np.repeat(start - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        links = self._links[ents]
        np.add.at(load, links, self._coef[ents] * np.repeat(dx, counts))
        up = links[np.repeat(dx > 0, counts)]
        full = up[load[up] > self.capacity[up] * (1.0 + _OVER)]
        in_k, alone = self._in_k, self._alone
        return load, sorted(link for link in set(full.tolist()) if not in_k[link] and not alone[link])

    def _sum_loads(self, links: list[int]) -> None:
        """The loads of ``links`` summed afresh at the current rates."""
        rate = self._rate
        for link in links:
            flows, coef = self._flows_of(link)
            self._load[link] = sum([c * rate[j] for j, c in zip(flows, coef) if rate[j] != _INF])

    # ---- the set K of links that bind ---------------------------------------------------------

    def _add_to_k(self, links: Iterable[int]) -> None:
        for link in sorted(set(links)):
            if self._in_k[link] or self._capacity[link] == _INF or self._alone[link]:
                continue
            self._in_k[link] = True
            for j, c in zip(*self._flows_of(link)):
                self._k_links[j].append(link)
                self._k_coef[j].append(c)
            # its state under the current rates, which stay max-min fair over K and this link
            self._state[link] = self._scan(link, self._rate)

    def _drop_from_k(self, links: list[int]) -> None:
        for link in links:
            self._in_k[link] = False
            del self._state[link]
            for j in self._flows_of(link)[0]:
                ks = self._k_links[j]
                i = ks.index(link)
                del ks[i]
                del self._k_coef[j][i]

    # ---- water-filling on one link ------------------------------------------------------------

    def _scan(self, link: int, cap: list[float]) -> list:
        """The link's water-filling state from scratch, given every flow's ceiling ``cap``.

        The level is the smallest ``t`` with ``sum(c * min(cap, t)) >= capacity`` (``inf`` if
        none): a ceiling is a flow's final rate, or ``inf`` while it still grows.
        """
        capacity = self._capacity[link]
        grow: dict[int, float] = {}
        pts = []
        for j, c in zip(*self._flows_of(link)):
            u = cap[j]
            if u == _INF:
                grow[j] = c
            elif u > 0.0:
                pts.append((u, c, j))
        w_grow = sum(grow.values())
        pts.sort()
        below = 0.0
        above = top = w_grow + sum(p[1] for p in pts)
        for i, (u, c, _j) in enumerate(pts):
            if above * _DIGITS < top:  # cancelled (0.5 + 2e-8 - 0.5 is 2e-8 to 5e-9): summed afresh
                above = top = w_grow + sum(p[1] for p in pts[i:])
            if below + u * above >= capacity * (1.0 - _TIE):
                return [min((capacity - below) / above, u), below, above, pts, i, grow, 0]
            below += c * u
            above -= c
        t = (capacity - below) / w_grow if w_grow > 0.0 else _INF
        return [t, below, w_grow, pts, len(pts), grow, 0]



def max_min_rates(usage: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates of a dense problem, by progressive filling over the whole matrix.

    What :class:`MaxMin` uses for small networks; its results are those of the engine before
    the incremental solver (checked against SimGrid to 1e-8).

    Parameters
    ----------
    usage : ndarray, shape (flows, links)
        Non-negative load coefficients; every flow must use at least one link.
    capacity : ndarray, shape (links,)
        Positive capacities; ``inf`` is allowed (never saturates).

    Returns
    -------
    ndarray, shape (flows,): rates (``inf`` for a flow on infinite links only).

    Examples
    --------
    >>> max_min_rates(np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([10.0, 4.0])).tolist()
    [6.0, 4.0]
    >>> max_min_rates(np.array([[2.0], [1.0]]), np.array([9.0])).tolist()  # weighted
    [3.0, 3.0]
    """
    flows = usage.shape[0]
    rates = np.zeros(flows)
    frozen = np.zeros(flows, dtype=bool)
    left = capacity.astype(float).copy()
    while not frozen.all():
        active = ~frozen
        load = usage[active].sum(axis=0)
        used = load > 0
        if not used.any():
            rates[active] = np.inf
            break
        inc = float(np.min(left[used] / load[used]))
        if not np.isfinite(inc):
            rates[active] = np.inf
            break
        rates[active] += inc
        left[used] -= inc * load[used]
        saturated = used & (left <= _SATURATED * np.where(np.isfinite(capacity), capacity, 1.0))
        hit = active & (usage[:, saturated] > 0).any(axis=1)
        if not hit.any():  # numerical corner: freeze the flows on the tightest link
            tight = np.argmin(np.where(used, left / np.where(used, load, 1.0), np.inf))
            hit = active & (usage[:, tight] > 0)
        frozen |= hit
    return rates
