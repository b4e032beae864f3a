"""Max-min fair sharing of links among weighted fluid flows, kept up to date incrementally.

Flow ``j`` at rate ``x_j`` loads link ``l`` with ``c_jl * x_j``.  The max-min fair allocation
is what progressive filling gives: all flows grow at the same rate until a link saturates,
the flows crossing it freeze, repeat.  Equivalently every flow crosses a *bottleneck*: a
saturated link on which no flow is faster.

:class:`MaxMin` keeps that allocation while flows join and leave, touching only what
changes:

* **Sparse.**  Usage is kept per flow and per link (CSR and CSC), never as a flows x links
  matrix.
* **Only the links that bind.**  The allocation is solved over a set ``K`` of links that have
  saturated at some time (plus each flow's tightest link).  A solution over ``K`` that fits
  every other link is the solution over all links (each flow's bottleneck in ``K`` is still a
  bottleneck), so after each update the links of the flows that sped up are checked, and a
  link found overloaded joins ``K`` and the update is redone.
* **Local repair in level order.**  An update re-runs progressive filling only where the
  allocation can change, like Dijkstra's algorithm over levels: a heap holds the *dirty*
  links (a flow on them changed) keyed by the level at which they saturate, found by
  water-filling over the link's flows; flows that do not touch a dirty link keep their
  rates.  A saturating link freezes its flows that are still growing and lowers the faster
  ones (whose other links become dirty); a flow whose every bottleneck became dirty is
  released at its old rate and grows on.  Everything below the current level is final, as
  in progressive filling, so the result is the same allocation.

:func:`max_min_rates` solves one dense problem with it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

import numpy as np

__all__ = ["MaxMin", "max_min_rates"]

# two levels closer than this (relative) are one level: progressive filling's sums and the
# water-filling sums of the same allocation differ by a few ulps
_TIE = 1e-12
# a link not in K is overloaded when its load exceeds its capacity by more than this (relative)
_OVER = 1e-12

_OPEN, _FROZEN = 1, 2
_INF = float("inf")
_SMALL = 48  # links with at most this many flows are water-filled in plain Python


class MaxMin:
    """Max-min fair rates of a changing set of active flows.

    Parameters
    ----------
    indptr, links, coef : ndarray
        Flow ``j`` loads links ``links[indptr[j]:indptr[j+1]]`` (indices into ``capacity``)
        with the positive coefficients ``coef[indptr[j]:indptr[j+1]]``, each link once.
    capacity : ndarray
        Link capacities, positive or ``inf`` (never saturates); a zero capacity stops its flows.

    Attributes
    ----------
    rate : ndarray
        Every flow's rate: 0 while inactive, ``inf`` for a flow on infinite links only.

    Examples
    --------
    Link 0 (capacity 10) carries flows 0 and 1; flow 1 also crosses link 1 (capacity 4):

    >>> mm = MaxMin(np.array([0, 1, 3]), np.array([0, 0, 1]), np.ones(3), np.array([10.0, 4.0]))
    >>> mm.update(joined=[0, 1]).tolist()
    [0, 1]
    >>> mm.rate.tolist()
    [6.0, 4.0]
    >>> mm.update(finished=[1]).tolist()  # flow 0 takes the whole link
    [0, 1]
    >>> mm.rate.tolist()
    [10.0, 0.0]
    """

    def __init__(self, indptr: np.ndarray, links: np.ndarray, coef: np.ndarray, capacity: np.ndarray) -> None:
        indptr = np.asarray(indptr, dtype=np.int64)
        links = np.asarray(links, dtype=np.int64)
        coef = np.asarray(coef, dtype=float)
        self.capacity = np.asarray(capacity, dtype=float)
        n, nlinks = len(indptr) - 1, len(self.capacity)
        self.rate = np.zeros(n)
        self.active = np.zeros(n, dtype=bool)
        owner = np.repeat(np.arange(n), np.diff(indptr))
        self._f_links = [links[indptr[j]:indptr[j + 1]] for j in range(n)]
        self._f_coef = [coef[indptr[j]:indptr[j + 1]] for j in range(n)]
        order = np.argsort(links, kind="stable")
        lptr = np.concatenate([[0], np.cumsum(np.bincount(links, minlength=nlinks))])
        lflows, lcoef = owner[order], coef[order]
        self._l_flows = [lflows[lptr[i]:lptr[i + 1]] for i in range(nlinks)]
        self._l_coef = [lcoef[lptr[i]:lptr[i + 1]] for i in range(nlinks)]
        self._l_flows_py = [a.tolist() for a in self._l_flows]
        self._l_coef_py = [a.tolist() for a in self._l_coef]
        self._capacity_py = self.capacity.tolist()
        # each flow's tightest finite link (smallest capacity per unit of load): where a flow
        # alone would be limited, so it enters K with the flow
        self._tight = np.full(n, -1, dtype=np.int64)
        for j in range(n):
            solo = self.capacity[self._f_links[j]] / self._f_coef[j]
            if solo.size and np.isfinite(solo).any():
                self._tight[j] = self._f_links[j][int(np.argmin(solo))]
        self._in_k = np.zeros(nlinks, dtype=bool)
        self._k_links: list[list[int]] = [[] for _ in range(n)]  # each flow's links in K
        self._k_coef: list[list[float]] = [[] for _ in range(n)]  # and its coefficients on them
        self._level_py = [_INF] * nlinks  # saturation level of every link in K (inf: not saturated)
        self._rate_py = [0.0] * n  # self.rate as a list, for fast scalar reads
        self._load = np.zeros(nlinks)  # load of every link at the current rates
        self.repairs = 0  # updates redone after a link outside K was found overloaded

    # ---- public -------------------------------------------------------------------------

    def update(self, joined: Iterable[int] = (), finished: Iterable[int] = ()) -> np.ndarray:
        """Activate ``joined`` and deactivate ``finished`` flows; return the flows whose rate changed."""
        joined = [int(j) for j in joined]
        finished = [int(j) for j in finished]
        for j in joined:
            if self._tight[j] >= 0:
                self._add_to_k([int(self._tight[j])])
        while True:
            new, levels = self._repair(joined, finished)
            changed = np.array(sorted(j for j, x in new.items() if x != self.rate[j]), dtype=np.int64)
            unbounded = [int(self._tight[j]) for j in changed if np.isinf(new[j]) and self._tight[j] >= 0]
            if unbounded:  # rare: a flow whose finite links are all outside K
                self._add_to_k(unbounded)
                continue
            load = self._load.copy()
            faster = []
            for j in changed.tolist():
                old, x = self.rate[j], new[j]
                if np.isinf(x) or np.isinf(old):
                    continue  # on infinite links only: loads nothing that can saturate
                load[self._f_links[j]] += self._f_coef[j] * (x - old)
                if x > old:
                    faster.append(self._f_links[j])
            over: list[int] = []
            if faster:
                ls = np.unique(np.concatenate(faster))
                ls = ls[~self._in_k[ls] & (load[ls] > self.capacity[ls] * (1.0 + _OVER))]
                over = ls.tolist()
            if over:
                self.repairs += 1
                self._add_to_k(over)
                continue
            break
        self._load = load
        for link, t in levels.items():
            self._level_py[link] = t
        for j in joined:
            self.active[j] = True
        for j in finished:
            self.active[j] = False
        for j, x in new.items():
            self.rate[j] = x
            self._rate_py[j] = x
        return changed

    # ---- the set K of links that bind ---------------------------------------------------------

    def _add_to_k(self, links: Iterable[int]) -> None:
        for link in sorted(set(links)):
            if self._in_k[link] or not np.isfinite(self.capacity[link]):
                continue
            self._in_k[link] = True
            for j, c in zip(self._l_flows_py[link], self._l_coef_py[link]):
                self._k_links[j].append(link)
                self._k_coef[j].append(c)
            # its level under the current rates, which stay max-min fair over K and this link
            u = self.rate[self._l_flows[link]]
            busy = u > 0
            full = busy.any() and float(np.dot(self._l_coef[link], u)) >= self.capacity[link] * (1.0 - _TIE)
            self._level_py[link] = float(u.max()) if full else _INF

    # ---- water-filling on one link ------------------------------------------------------------

    def _fill(self, link: int, cap: list[float], cap_a: np.ndarray) -> float:
        """Smallest level t with sum(c * min(cap, t)) >= capacity over the link's flows, or inf.

        ``cap`` (a list, and ``cap_a`` the same as an array) is each flow's ceiling: its final
        rate, or ``inf`` while it still grows.
        """
        flows = self._l_flows_py[link]
        capacity = self._capacity_py[link]
        if len(flows) <= _SMALL:  # a Python loop beats numpy's call overhead
            w_grow = 0.0
            pts = []
            for j, c in zip(flows, self._l_coef_py[link]):
                u = cap[j]
                if u == _INF:
                    w_grow += c
                elif u > 0.0:
                    pts.append((u, c))
            if pts:
                pts.sort()
                below = 0.0
                above = w_grow + sum(c for _, c in pts)
                for u, c in pts:
                    if below + u * above >= capacity:
                        return (capacity - below) / above
                    below += c * u
                    above -= c
                rest = capacity - below
            else:
                rest = capacity
            return rest / w_grow if w_grow > 0.0 else _INF
        u = cap_a[self._l_flows[link]]
        c = self._l_coef[link]
        grow = np.isinf(u)
        w_grow = float(c[grow].sum())
        fixed = ~grow & (u > 0)
        uf, cf = u[fixed], c[fixed]
        if uf.size:
            order = np.argsort(uf, kind="stable")
            uf, cf = uf[order], cf[order]
            cu = cf * uf
            below = np.cumsum(cu) - cu  # load of the slower flows, each at its ceiling
            above = w_grow + (float(cf.sum()) - (np.cumsum(cf) - cf))  # weight still growing at uf[i]
            need = below + uf * above  # load when the level reaches uf[i]
            i = int(np.searchsorted(need, capacity))
            if i < uf.size:
                return float((capacity - below[i]) / above[i])
            rest = capacity - float(below[-1] + cu[-1])
        else:
            rest = capacity
        return rest / w_grow if w_grow > 0 else _INF

    def _faster_than(self, link: int, cap: list[float], cap_a: np.ndarray, t: float) -> list[int]:
        """The link's flows whose ceiling is above ``t``."""
        flows = self._l_flows_py[link]
        if len(flows) <= _SMALL:
            return [j for j in flows if cap[j] > t]
        fl = self._l_flows[link]
        return fl[cap_a[fl] > t].tolist()

    # ---- the level-ordered repair -------------------------------------------------------------

    def _repair(self, joined: list[int], finished: list[int]) -> tuple[dict[int, float], dict[int, float]]:
        """New rates of the flows whose rate may change (the rest keep theirs) and new levels."""
        old = self._rate_py
        cap = list(old)  # each flow's ceiling during the repair: final rate, or inf while growing
        cap_a = self.rate.copy()  # the same, as an array, for the links with many flows
        for j in finished:
            cap[j] = cap_a[j] = 0.0
        state: dict[int, int] = {}
        new: dict[int, float] = {}
        version: dict[int, int] = {}  # dirty links -> version of their heap entry
        stale: set[int] = set()  # dirty links whose entry is only a lower bound
        saturated: dict[int, float] = {}
        heap: list[tuple[float, int, int, int]] = []
        level = self._level_py
        k_links = self._k_links

        room: dict[int, list[float]] = {}  # unsaturated dirty links: [slack, sum c*x, sum c] of growing flows
        load, capacity = self._load, self._capacity_py

        def grow(link: int, c: float, x: float) -> None:
            """A flow on the link grows on from rate ``x``: the link may saturate earlier."""
            if link in saturated:
                return
            if level[link] < _INF:
                touch(link)
                return
            # a link with room: saturates no earlier than when the growing flows alone,
            # each from its old rate, have used its slack (a cheap lower bound, made exact
            # by water-filling only if the repair's level gets there)
            r = room.get(link)
            if r is None:
                r = room[link] = [capacity[link] * (1.0 - _OVER) - float(load[link]), 0.0, 0.0]
                version[link] = 0
            r[1] += c * x
            r[2] += c
            version[link] += 1
            stale.add(link)
            heapq.heappush(heap, ((r[0] + r[1]) / r[2], 0, link, version[link]))

        def touch(link: int) -> None:
            """(Re)compute a link's saturation level now that one of its flows has changed."""
            if link in saturated:
                return
            if link not in version:
                version[link] = 0
                s = level[link]
                if s < _INF:  # its bottlenecked flows are free again, unless held elsewhere
                    for j in self._faster_than(link, cap, cap_a, s * (1.0 - _TIE)):
                        if j not in state:
                            heapq.heappush(heap, (old[j], 1, j, 0))
            else:
                version[link] += 1
            stale.discard(link)
            t = self._fill(link, cap, cap_a)
            if t < _INF:
                heapq.heappush(heap, (t, 0, link, version[link]))

        for j in finished:
            state[j], new[j] = _FROZEN, 0.0
        for j in joined:
            state[j], cap[j], cap_a[j] = _OPEN, _INF, _INF
        for j in finished:
            for link in k_links[j]:
                if level[link] < _INF:  # a link with room stays so when a flow leaves it
                    touch(link)
        for j in joined:
            for link, c in zip(k_links[j], self._k_coef[j]):
                grow(link, c, 0.0)

        while heap:
            t, kind, i, ver = heapq.heappop(heap)
            if kind == 0:
                if i in saturated or version[i] != ver:
                    continue
                if i in stale:
                    stale.discard(i)
                    version[i] += 1
                    t2 = self._fill(i, cap, cap_a)
                    if t2 > t * (1.0 + _TIE):
                        if t2 < _INF:
                            heapq.heappush(heap, (t2, 0, i, version[i]))
                        continue
                    t = t2
                saturated[i] = t
                for j in self._faster_than(i, cap, cap_a, t * (1.0 - _TIE)):
                    st = state.get(j)
                    if st == _FROZEN:
                        continue
                    state[j] = _FROZEN
                    x = old[j]
                    same = abs(t - x) <= _TIE * x
                    if st is None and same:
                        continue  # already at this level: unchanged
                    cap[j] = cap_a[j] = new[j] = x if same else t
                    for link in k_links[j]:
                        if link == i or link in saturated:
                            continue
                        if link in version:
                            stale.add(link)  # a flow stopped growing or slowed: its level can only rise
                        elif level[link] < _INF:
                            touch(link)  # a clean link with room keeps it when a flow slows
            else:
                if i in state:
                    continue
                # held at its rate by a bottleneck that did not change?
                x = old[i]
                if any(lk not in version and level[lk] <= x * (1.0 + _TIE) for lk in k_links[i]):
                    continue
                state[i], cap[i], cap_a[i] = _OPEN, _INF, _INF
                for link, c in zip(k_links[i], self._k_coef[i]):
                    grow(link, c, x)

        for j, st in state.items():
            if st == _OPEN:
                new[j] = _INF  # grows without bound on K: checked against the other links
        return new, {link: saturated.get(link, _INF) for link in version}


def max_min_rates(usage: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates of a dense problem.

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
    usage = np.asarray(usage, dtype=float)
    rows, cols = np.nonzero(usage > 0)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=usage.shape[0]))])
    mm = MaxMin(indptr, cols, usage[rows, cols], capacity)
    mm.update(joined=range(usage.shape[0]))
    return mm.rate.copy()
