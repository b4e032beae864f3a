"""Max-min fair sharing of links among weighted fluid flows (progressive filling).

Flow ``j`` at rate ``x_j`` loads link ``l`` with ``U[j, l] * x_j``.  All unfrozen
flows grow at the same rate until a link saturates; flows crossing it freeze; repeat.
The result is the max-min fair allocation: no flow can grow without shrinking a flow
that is no larger.
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_min_rates"]

_SATURATED = 1e-12


def max_min_rates(usage: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates.

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
