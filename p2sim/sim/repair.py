"""The level-ordered repair of max-min fair rates, like Dijkstra's algorithm over levels.

:class:`~p2sim.sim.maxmin.MaxMin`'s update over the links that bind (its set ``K``).  An update re-runs progressive filling only where the allocation can change: a heap holds the *dirty*
links (a flow on them changed) keyed by the level at which they saturate; flows that touch no dirty
link keep their rates.  A saturating link freezes its flows that still grow and lowers the faster
ones (whose other links become dirty); a flow whose every bottleneck became dirty is released at its
old rate and grows on.  Everything below the current level is final, as in progressive filling, so
the result is the same allocation.  Each link of ``K`` keeps its water-filling state (the list
described at :data:`_T`), worked on in place; see :mod:`p2sim.sim.maxmin` for the whole solver.
"""

from __future__ import annotations

import bisect
import heapq
from typing import Protocol

__all__ = ["repair"]

# two levels closer than this (relative) are one level: progressive filling's sums and the
# water-filling sums of the same allocation differ by a few ulps
_TIE = 1e-12
# moves of a link's water-filling state between fresh sums: its running sums B and W drift by
# about an ulp of the capacity per move, far below the 1e-12 ties
_REFRESH = 256
# a link's weight W is summed afresh when its running sum falls below 1/_DIGITS of the largest
# value it reached in a move: its rounding error, an ulp of that value, stays below the 1e-12
# ties (taking weights of 1e4 and 1 out of 1e4 + 1 + 1e-4 left 1e-4 to 1e-8)
_DIGITS = 2.0**13

_OPEN, _FROZEN = 1, 2
_INF = float("inf")

# a link's water-filling state: [level t, load B of the flows capped below t, weight W of the
# rest, caps: its capped flows as sorted (ceiling, coef, flow), k: how many of them are below
# t, grow: {flow: coef} of its growing flows without a ceiling, moves since B and W were summed]
_T, _B, _W, _CAPS, _K, _GROW, _AGE = range(7)


class Incremental(Protocol):
    """What the repair reads of the solver it repairs (:class:`~p2sim.sim.maxmin.MaxMin`'s incremental state)."""

    _rate: list[float]  # every flow's rate
    _capacity: list[float]  # every link's capacity
    _ceiling: list[float]  # every flow's ceiling (its links that no other flow crosses)
    _active: list[bool]  # whether each flow is active
    _k_links: list[list[int]]  # each flow's links in K
    _k_coef: list[list[float]]  # and its coefficients on them
    _state: dict[int, list]  # the water-filling state of every link in K


def repair(mm: Incremental, joined: list[int], finished: list[int],
           seeds: list[int]) -> tuple[dict[int, float], dict[int, list]]:
    """New rates of the flows whose rate may change (the rest keep theirs) and new link states.

    ``seeds``: links just added to K whose level may be below the rates of their flows.
    """
    old = mm._rate
    cap: dict[int, float] = {}  # each touched flow: its new rate, or where it stops growing
    state: dict[int, int] = {}
    new: dict[int, float] = {}
    work: dict[int, list] = {}  # the dirty links' states
    version: dict[int, int] = {}  # of each dirty link's live heap entry
    queued: dict[int, float] = {}  # and its level
    saturated: set[int] = set()
    freed: dict[int, list[int]] = {}  # each dirty link's flows at its old level
    heap: list[tuple[float, int, int, int]] = []
    states, k_links, k_coef = mm._state, mm._k_links, mm._k_coef
    live = set(joined)

    capacity, active, ceiling = mm._capacity, mm._active, mm._ceiling
    bisect_left, heappush, heappop = bisect.bisect_left, heapq.heappush, heapq.heappop
    inf, tie_lo, tie_hi = _INF, 1.0 - _TIE, 1.0 + _TIE

    def move(link: int, moves) -> None:
        """Flows change their ceilings on the link: ``moves`` are (flow, coef, from, to).

        The first move makes the link dirty: its flows at its old level are noted, to be
        released when the repair reaches that level.  The state is updated in place and
        its level walked once for all the moves (``B`` and ``W`` summed afresh every
        ``_REFRESH`` moves); a level that fell is pushed on the heap.  All inline: it runs
        once per changed flow (or group of flows) and link, the engine's innermost loop.
        """
        s = work.get(link)
        if s is None:  # the link becomes dirty: its state is worked on in place
            s = work[link] = states[link]
            version[link] = 0
            t0 = s[0]
            if t0 < inf:  # its bottlenecked flows are free again at its old level
                caps, k = s[3], s[4]
                lo, hi = t0 * tie_lo, t0 * tie_hi
                while k > 0 and caps[k - 1][0] >= lo:
                    k -= 1
                freed[link] = [f for u, _c, f in caps[k:] if u <= hi and (f in live or active[f])]
                heappush(heap, (t0, 1, link, 0))

        caps, k, bsum, w, grow = s[3], s[4], s[1], s[2], s[5]
        top = w  # the largest value W's running sum reaches, to which its rounding is relative
        # B changes, or W does (dw: exactly 0 when flows only move within it): the walk
        walk, dw = False, 0.0
        for j, c, a, b in moves:
            if a == inf:
                dw -= c
                del grow[j]
            elif a > 0.0:
                i = bisect_left(caps, (a, c, j))
                del caps[i]
                if i < k:
                    bsum -= c * a
                    k -= 1
                    walk = True
                else:
                    dw -= c
            if b == inf:
                dw += c
                top += c
                grow[j] = c
            elif b > 0.0:
                e = (b, c, j)
                i = bisect_left(caps, e)
                caps.insert(i, e)
                # below the level only if its load fits the capacity (B <= capacity): else it
                # joins W, never B and out again -- adding then taking back a ceiling far above
                # the capacity (1e300, from a link of its own) rounds away the small loads in B
                if c * b > capacity[link]:
                    while k > i:  # and the entries above it are above the level too
                        k -= 1
                        e = caps[k + 1]
                        bsum -= e[1] * e[0]
                        dw += e[1]
                        top += e[1]
                    dw += c
                    top += c
                    walk = True
                elif i < k or (i == k and b < s[0]):
                    bsum += c * b
                    k += 1
                    walk = True
                else:
                    dw += c
                    top += c
        if dw != 0.0:
            w += dw
            walk = True
        s[6] += len(moves)
        if s[6] > _REFRESH:  # against the drift of the running sums: summed afresh
            bsum = sum([e[1] * e[0] for e in caps[:k]])
            w = top = sum([e[1] for e in caps[k:]]) + sum(grow.values())
            s[6] = 0
            walk = True
        if not walk:
            t = s[0]
        else:
            # walk the split between B and W to the new level: B + W t = capacity
            n = len(caps)
            cl = capacity[link]
            if k == 0:
                bsum = 0.0
            if k == n and not grow:
                w = 0.0
            elif w * _DIGITS < top:  # W cancelled (2e8 + 1e-8 - 2e8 is 0): summed afresh
                w = top = sum([e[1] for e in caps[k:]]) + sum(grow.values())
            way = 0
            while True:
                if w > 0.0:
                    t = (cl - bsum) / w
                elif bsum < cl * tie_lo:
                    t = inf
                elif k > 0 and (way == 1 or bsum <= cl * tie_hi):
                    t = caps[k - 1][0]
                    break
                elif k > 0:
                    t = -inf
                else:
                    t = 0.0
                    break
                if way >= 0 and k < n and t > caps[k][0]:
                    e = caps[k]
                    bsum += e[1] * e[0]
                    w -= e[1]
                    k += 1
                    way = 1
                    if k == n and not grow:
                        w = 0.0
                    elif w * _DIGITS < top:
                        w = top = sum([e[1] for e in caps[k:]]) + sum(grow.values())
                elif way <= 0 and k > 0 and t < caps[k - 1][0]:
                    k -= 1
                    e = caps[k]
                    bsum -= e[1] * e[0]
                    w += e[1]
                    way = -1
                    if k == 0:
                        bsum = 0.0
                else:
                    break
            if t < 0.0:
                t = 0.0
            s[0], s[1], s[2], s[4] = t, bsum, w, k
        # the heap holds a lower bound of each dirty link's level: a level that rose is
        # pushed again only when its old entry comes up, a level that fell at once
        if t < queued.get(link, inf):
            v = version[link] = version[link] + 1
            queued[link] = t
            heappush(heap, (t, 0, link, v))

    for link in seeds:
        move(link, ())  # dirty, queued at its level
    for j in finished:
        state[j], new[j] = _FROZEN, 0.0
        a, cap[j] = old[j], 0.0
        for link, c in zip(k_links[j], k_coef[j]):
            move(link, ((j, c, a, 0.0),))
    for j in joined:
        # a growing flow stands on its links at its ceiling (inf if none): the levels
        # see it stop there, and it stops there unless a link saturates below
        state[j], cap[j] = _OPEN, ceiling[j]
        for link, c in zip(k_links[j], k_coef[j]):
            move(link, ((j, c, 0.0, ceiling[j]),))

    while heap:
        t, kind, i, ver = heappop(heap)
        if kind == 0:
            if i in saturated or version[i] != ver:
                continue
            s = work[i]
            if s[0] > t * tie_hi:  # its level rose since: queue it at the new one
                t = queued[i] = s[0]
                if t < inf:
                    v = version[i] = ver + 1
                    heappush(heap, (t, 0, i, v))
                continue
            t = s[0]
            saturated.add(i)
            # it stops every flow at its level: those capped there (within a tie) and the
            # growing ones; its state is set once for all of them (its level stays t)
            caps, k, grow = s[_CAPS], s[_K], s[_GROW]
            lo = k
            while lo > 0 and caps[lo - 1][0] >= t * tie_lo:
                lo -= 1
            bsum = s[_B]
            for u, c, _j in caps[lo:k]:
                bsum -= c * u
            stay = []  # its entries from lo on, at their new ceilings
            frozen = []  # (flow, old ceiling, new rate) of the flows this link stops
            w = 0.0
            if grow:
                caps += [(inf, c, j) for j, c in grow.items()]
                grow.clear()
            for e in caps[lo:]:
                u, c, j = e
                w += c
                st = state.get(j)
                if st != _FROZEN:
                    state[j] = _FROZEN
                    x = old[j]
                    same = abs(t - x) <= _TIE * x
                    if st is not None or not same:  # else already at this level: unchanged
                        v = new[j] = x if same else t
                        frozen.append((j, u, v))
                        e = (v, c, j)
                stay.append(e)
            stay.sort()
            caps[lo:] = stay
            s[_B], s[_W], s[_K] = bsum, w, lo
            s[_AGE] += len(frozen)
            group: dict[int, list] = {}  # their moves, by link
            for j, u, v in frozen:
                cap[j] = v
                for link, c in zip(k_links[j], k_coef[j]):
                    if link not in saturated:
                        group.setdefault(link, []).append((j, c, u, v))
            for link, moves in group.items():
                move(link, moves)
        elif kind == 1:
            # the flows bottlenecked at this level on links that became dirty are released
            # (unless held by another link), all at once
            dirty = [i]
            while heap and heap[0][1] == 1 and heap[0][0] == t:
                dirty.append(heappop(heap)[2])
            flows = []
            for link in dirty:
                flows += freed[link]
            group = {}
            for i in flows:
                if i in state:
                    continue
                # held at its rate by its ceiling or a bottleneck that did not change?
                x = old[i]
                hold = x * tie_hi
                if ceiling[i] <= hold:
                    continue
                for lk in k_links[i]:
                    if lk not in work and states[lk][0] <= hold:
                        break
                else:
                    lk = -1
                if lk >= 0:
                    continue
                state[i], cap[i] = _OPEN, ceiling[i]
                u = ceiling[i]
                for link, c in zip(k_links[i], k_coef[i]):
                    if link not in saturated:
                        group.setdefault(link, []).append((i, c, x, u))
            for link, moves in group.items():
                move(link, moves)

    for j, st in state.items():
        if st == _OPEN:  # stopped by its ceiling, or grows without bound on K
            new[j] = cap[j]  # (either checked against the other links)
    return new, work
