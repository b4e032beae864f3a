"""Max-min fair sharing of links among weighted fluid flows, kept up to date incrementally.

Flow ``j`` at rate ``x_j`` loads link ``l`` with ``c_jl * x_j``.  The max-min fair allocation
is what progressive filling gives: all flows grow at the same rate until a link saturates,
the flows crossing it freeze, repeat.  Equivalently every flow crosses a *bottleneck*: a
saturated link on which no flow is faster.

:class:`MaxMin` keeps that allocation while flows join and leave, touching only what
changes:

* **Sparse.**  Usage is kept per flow and per link, never as a flows x links matrix.
* **Only the links that bind.**  The allocation is solved over a set ``K`` of links: those
  that bind now or lately, and each joining flow's tightest link.  A solution over ``K`` that
  fits every other link is the solution over all links (each flow's bottleneck in ``K`` is
  still a bottleneck), so after each update the links of the flows that sped up are checked;
  a link found overloaded joins ``K`` and the update is redone.  Links that have had room to
  spare for a while leave ``K``.
* **Local repair in level order.**  An update re-runs progressive filling only where the
  allocation can change, like Dijkstra's algorithm over levels: a heap holds the *dirty*
  links (a flow on them changed) keyed by the level at which they saturate; flows that touch
  no dirty link keep their rates.  A saturating link freezes its flows that still grow and
  lowers the faster ones (whose other links become dirty); a flow whose every bottleneck
  became dirty is released at its old rate and grows on.  Everything below the current level
  is final, as in progressive filling, so the result is the same allocation.
* **Water-filling kept per link.**  Each link of ``K`` keeps its water-filling state -- the
  level ``t`` at which it saturates, the load ``B`` of its flows capped below ``t`` and the
  weight ``W`` of those at or above it (``B + W t = capacity``) -- so a flow changing its
  ceiling moves ``t`` in O(1); the link's flows are scanned again only when ``t`` crosses
  the highest capped flow below it (and every 64 changes, against rounding drift).

:func:`max_min_rates` solves one dense problem with it.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable

import numpy as np

__all__ = ["MaxMin", "max_min_rates"]

# two levels closer than this (relative) are one level: progressive filling's sums and the
# water-filling sums of the same allocation differ by a few ulps
_TIE = 1e-12
# a link not in K is overloaded when its load exceeds its capacity by more than this (relative)
_OVER = 1e-12
# a link of K with this much room (relative) after an update is dropped from K
_ROOM = 0.2
_REFRESH = 64  # O(1) updates of a link's water-filling state between full rescans

_OPEN, _FROZEN = 1, 2
_INF = float("inf")

# a link's water-filling state: [level t, load B of the flows capped below t, weight W of the
# rest, upper: sorted (ceiling, coef, flow) of the capped flows at or above t, lo: an upper
# bound on the ceilings below t, grow: {flow: coef} of its growing flows, changes since scan]
_T, _B, _W, _UP, _LO, _GROW, _AGE = range(7)


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
        self._indptr, self._links, self._coef = indptr, links, coef
        owner = np.repeat(np.arange(n), np.diff(indptr))
        order = np.argsort(links, kind="stable")
        lptr = np.concatenate([[0], np.cumsum(np.bincount(links, minlength=nlinks))]).tolist()
        lflows, lcoef = owner[order].tolist(), coef[order].tolist()
        self._l_flows = [lflows[lptr[i]:lptr[i + 1]] for i in range(nlinks)]
        self._l_coef = [lcoef[lptr[i]:lptr[i + 1]] for i in range(nlinks)]
        self._capacity = self.capacity.tolist()
        # each flow's tightest finite link (least capacity per unit of its load): where it would
        # be limited alone, so it enters K with the flow
        with np.errstate(divide="ignore"):
            solo = self.capacity[links] / coef
        self._tight = [-1] * n
        for j in range(n):
            a, b = indptr[j], indptr[j + 1]
            if b > a and np.isfinite(solo[a:b]).any():
                self._tight[j] = int(links[a + int(np.argmin(solo[a:b]))])
        self._in_k = [False] * nlinks
        self._k_links: list[list[int]] = [[] for _ in range(n)]  # each flow's links in K
        self._k_coef: list[list[float]] = [[] for _ in range(n)]  # and its coefficients on them
        self._state: dict[int, list] = {}  # water-filling state of every link in K
        self._load = np.zeros(nlinks)  # load of every link at the current rates
        self._rate = [0.0] * n  # self.rate as a list, for fast scalar reads
        self.repairs = 0  # updates redone after a link outside K was found overloaded

    # ---- public -------------------------------------------------------------------------

    def update(self, joined: Iterable[int] = (), finished: Iterable[int] = ()) -> np.ndarray:
        """Activate ``joined`` and deactivate ``finished`` flows; return the flows whose rate changed."""
        joined = [int(j) for j in joined]
        finished = [int(j) for j in finished]
        self._add_to_k(self._tight[j] for j in joined if self._tight[j] >= 0)
        while True:
            new, work = self._repair(joined, finished)
            old = self._rate
            changed = sorted(j for j, x in new.items() if x != old[j])
            unbounded = [self._tight[j] for j in changed if new[j] == _INF and self._tight[j] >= 0]
            if unbounded:  # rare: a flow whose finite links are all outside K
                if all(self._in_k[link] for link in unbounded):
                    raise RuntimeError("max-min repair left a flow unbounded on links it knows")
                self._add_to_k(unbounded)
                continue
            load, over = self._check(changed, new)
            if over:
                self.repairs += 1
                self._add_to_k(over)
                continue
            break
        self._load = load
        self._state.update(work)
        for j in joined:
            self.active[j] = True
        for j in finished:
            self.active[j] = False
        for j in changed:
            self.rate[j] = old[j] = new[j]
        self._drop_from_k([link for link, s in work.items() if s[_T] == _INF and not s[_GROW]
                           and s[_B] < (1.0 - _ROOM) * self._capacity[link]])
        return np.array(changed, dtype=np.int64)

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
        up = np.unique(up)
        in_k = np.array([self._in_k[i] for i in up.tolist()], dtype=bool)
        over = up[~in_k & (load[up] > self.capacity[up] * (1.0 + _OVER))] if up.size else up
        return load, over.tolist()

    # ---- the set K of links that bind ---------------------------------------------------------

    def _add_to_k(self, links: Iterable[int]) -> None:
        for link in sorted(set(links)):
            if self._in_k[link] or self._capacity[link] == _INF:
                continue
            self._in_k[link] = True
            for j, c in zip(self._l_flows[link], self._l_coef[link]):
                self._k_links[j].append(link)
                self._k_coef[j].append(c)
            # its state under the current rates, which stay max-min fair over K and this link
            self._state[link] = self._scan(link, self._rate)

    def _drop_from_k(self, links: list[int]) -> None:
        for link in links:
            self._in_k[link] = False
            del self._state[link]
            for j in self._l_flows[link]:
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
        for j, c in zip(self._l_flows[link], self._l_coef[link]):
            u = cap[j]
            if u == _INF:
                grow[j] = c
            elif u > 0.0:
                pts.append((u, c, j))
        w_grow = sum(grow.values())
        pts.sort()
        below = 0.0
        above = w_grow + sum(p[1] for p in pts)
        for i, (u, c, _j) in enumerate(pts):
            if below + u * above >= capacity:
                t = min((capacity - below) / above, u)
                return [t, below, above, pts[i:], pts[i - 1][0] if i else 0.0, grow, 0]
            below += c * u
            above -= c
        t = (capacity - below) / w_grow if w_grow > 0.0 else _INF
        return [t, below, w_grow, [], pts[-1][0] if pts else 0.0, grow, 0]

    def _move(self, s: list, link: int, j: int, c: float, a: float, b: float, cap: list[float]) -> list:
        """Flow ``j`` (coefficient ``c``) changes its ceiling from ``a`` to ``b`` on a link in state ``s``.

        Updates ``s`` in place and returns it, or returns a fresh scan where the level left
        the range the state can follow.
        """
        t = s[_T]
        if a == _INF:
            s[_W] -= c
            del s[_GROW][j]
        elif a > 0.0:
            up = s[_UP]
            i = bisect.bisect_left(up, (a, c, j)) if a >= t else len(up)
            if i < len(up) and up[i][2] == j:
                del up[i]
                s[_W] -= c
            else:
                s[_B] -= c * a
        if b == _INF:
            s[_W] += c
            s[_GROW][j] = c
        elif b > 0.0:
            if b >= t:
                bisect.insort(s[_UP], (b, c, j))
                s[_W] += c
            else:
                s[_B] += c * b
                if b > s[_LO]:
                    s[_LO] = b
        s[_AGE] += 1
        if s[_AGE] > _REFRESH:
            return self._scan(link, cap)
        capacity = self._capacity[link]
        up = s[_UP]
        while True:
            if not up and not s[_GROW]:
                s[_W] = 0.0
                if s[_B] >= capacity * (1.0 - _TIE):
                    return self._scan(link, cap)
                t = _INF
            elif s[_W] > 0.0:
                t = (capacity - s[_B]) / s[_W]
            else:
                return self._scan(link, cap)
            if up and t > up[0][0]:  # the lowest capped flow above stops at its ceiling
                u, c2, _j2 = up.pop(0)
                s[_B] += c2 * u
                s[_W] -= c2
                if u > s[_LO]:
                    s[_LO] = u
                continue
            break
        if t < s[_LO]:  # below a capped flow whose ceiling is not kept: rescan
            return self._scan(link, cap)
        s[_T] = t
        return s

    def _at_level(self, link: int, s: list, t: float, cap: list[float]) -> list[tuple[float, float, int]]:
        """The capped flows of a link in state ``s`` whose ceiling is at or above level ``t``.

        Those kept above the level, and any counted below it but within a tie of it.
        """
        out = list(s[_UP])
        if s[_LO] >= t * (1.0 - _TIE):
            listed = {p[2] for p in out}
            out += [(cap[j], c, j) for j, c in zip(self._l_flows[link], self._l_coef[link])
                    if j not in listed and t * (1.0 - _TIE) <= cap[j] < _INF]
        return out

    # ---- the level-ordered repair -------------------------------------------------------------

    def _repair(self, joined: list[int], finished: list[int]) -> tuple[dict[int, float], dict[int, list]]:
        """New rates of the flows whose rate may change (the rest keep theirs) and new link states."""
        old = self._rate
        cap = list(old)  # each flow's ceiling during the repair: final rate, or inf while growing
        state: dict[int, int] = {}
        new: dict[int, float] = {}
        work: dict[int, list] = {}  # the dirty links' states
        version: dict[int, int] = {}
        saturated: set[int] = set()
        heap: list[tuple[float, int, int, int]] = []
        states, k_links, k_coef = self._state, self._k_links, self._k_coef
        live = set(joined)

        def move(link: int, j: int, c: float, a: float, b: float) -> None:
            """Flow j's ceiling on the link goes from a to b: update the link's level."""
            s = work.get(link)
            if s is None:  # the link becomes dirty
                p = states[link]
                s = work[link] = [p[_T], p[_B], p[_W], list(p[_UP]), p[_LO], {}, p[_AGE]]
                version[link] = 0
                t0 = p[_T]
                if t0 < _INF:
                    # its bottlenecked flows are free again, unless held by another link
                    for u, _c, f in self._at_level(link, p, t0, old):
                        if u <= t0 * (1.0 + _TIE) and f not in state and (f in live or self.active[f]):
                            heapq.heappush(heap, (old[f], 1, f, 0))
                t_before = _INF
            else:
                t_before = s[_T]
            s2 = self._move(s, link, j, c, a, b, cap)
            if s2 is not s:
                work[link] = s2
            t = s2[_T]
            if t != t_before or version[link] == 0:
                version[link] += 1
                if t < _INF:
                    heapq.heappush(heap, (t, 0, link, version[link]))

        for j in finished:
            state[j], new[j] = _FROZEN, 0.0
            a, cap[j] = cap[j], 0.0
            for link, c in zip(k_links[j], k_coef[j]):
                move(link, j, c, a, 0.0)
        for j in joined:
            state[j], cap[j] = _OPEN, _INF
            for link, c in zip(k_links[j], k_coef[j]):
                move(link, j, c, 0.0, _INF)

        while heap:
            t, kind, i, ver = heapq.heappop(heap)
            if kind == 0:
                if i in saturated or version[i] != ver:
                    continue
                saturated.add(i)
                s = work[i]
                grow = s[_GROW]
                candidates = self._at_level(i, s, t, cap) + [(_INF, grow[j], j) for j in grow]
                frozen = []  # (flow, coef, old ceiling, new rate) of the flows this link stops
                for u, c, j in candidates:
                    st = state.get(j)
                    if st == _FROZEN:
                        continue
                    state[j] = _FROZEN
                    x = old[j]
                    same = abs(t - x) <= _TIE * x
                    if st is None and same:
                        continue  # already at this level: unchanged
                    v = new[j] = x if same else t
                    frozen.append((j, c, u, v))
                # the link's own state: its growing and faster flows now capped at the level
                stopped = {j for j, _c, _u, _v in frozen}
                up = [p for p in s[_UP] if p[2] not in stopped]
                for j, c, u, v in frozen:
                    if u < t:  # it was counted below the level
                        s[_B] -= c * u
                        s[_W] += c
                    up.append((v, c, j))
                up.sort()
                s[_UP], s[_GROW], s[_T] = up, {}, t
                for j, _c, u, v in frozen:
                    cap[j] = v  # only now: a rescan of a link must see the moves made so far
                    for link, c in zip(k_links[j], k_coef[j]):
                        if link != i and link not in saturated:
                            move(link, j, c, u, v)
            else:
                if i in state:
                    continue
                # held at its rate by a bottleneck that did not change?
                x = old[i]
                if any(lk not in work and states[lk][_T] <= x * (1.0 + _TIE) for lk in k_links[i]):
                    continue
                state[i], cap[i] = _OPEN, _INF
                for link, c in zip(k_links[i], k_coef[i]):
                    if link not in saturated:
                        move(link, i, c, x, _INF)

        for j, st in state.items():
            if st == _OPEN:
                new[j] = _INF  # grows without bound on K: checked against the other links
        return new, work


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
