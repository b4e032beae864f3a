"""Comparing the two device orders of a reduction group (``rank --compare-orders``).

Under the ``aligned`` order (p2sim's) the synthesis hierarchy's levels line up with
hardware levels; under the ``p2`` order (XLA's replica groups, which P2 used) they
need not, so a step meant to stay inside a node may cross nodes.  For each matrix
and algorithm the comparison gives the best program under each order and the
predicted gain of the aligned one: p2's best time over aligned's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formalism.hierarchy import Lowering, Order
from ..formalism.placement import Matrix, Placement
from .ranking import MatrixSummary, Ranking

__all__ = ["OrderComparison", "orders_agree", "compare_orders"]


def orders_agree(placement: Placement, reduce_axes: Sequence[int]) -> bool:
    """Whether both orders lower every program of ``placement`` to the same device groups.

    Examples
    --------
    >>> orders_agree(Placement.of([4, 16], [4, 16], [[2, 2], [2, 8]]), [0])  # one reduction axis
    True
    >>> orders_agree(Placement.of([4, 16], [8, 2, 4], [[2, 4], [1, 2], [2, 2]]), [0, 2])
    False
    """
    aligned = Lowering.of(placement, reduce_axes, Order.ALIGNED).table
    return bool(np.array_equal(aligned, Lowering.of(placement, reduce_axes, Order.P2).table))


@dataclass(frozen=True)
class OrderComparison:
    """One matrix and algorithm: its best program under each order."""

    matrix: Matrix
    algo: str
    aligned: MatrixSummary
    p2: MatrixSummary
    same_groups: bool  # both orders give the same lowering (so the same times)

    @property
    def gain(self) -> float:
        """Predicted speedup of the aligned order's best program over the p2 order's."""
        return self.p2.best.seconds / self.aligned.best.seconds

    def to_json(self) -> dict[str, Any]:
        def side(s: MatrixSummary) -> dict[str, Any]:
            return {"best_seconds": s.best.seconds, "best_program": s.best.text,
                    "allreduce_seconds": s.allreduce.seconds, "speedup": s.allreduce.seconds / s.best.seconds}

        return {"matrix": [list(r) for r in self.matrix], "algo": self.algo, "same_groups": self.same_groups,
                "aligned": side(self.aligned), "p2": side(self.p2), "gain": self.gain}


def compare_orders(aligned: Ranking, p2: Ranking, same: dict[Matrix, bool]) -> tuple[OrderComparison, ...]:
    """Pair the best programs of two rankings of the same matrices, one per order.

    Either ranking may leave out the matrices where ``same`` says the orders agree:
    the other's results stand for both.  The result is in order of the aligned best
    time, fastest first (ties by algorithm, then matrix).
    """
    mine = {(s.matrix, s.algo): s for s in aligned.matrices}
    theirs = {(s.matrix, s.algo): s for s in p2.matrices}
    out = []
    for key in dict.fromkeys([*mine, *theirs]):
        if same[key[0]]:
            a = b = mine.get(key) or theirs[key]
        else:
            a, b = mine[key], theirs[key]
        out.append(OrderComparison(key[0], key[1], a, b, same[key[0]]))
    out.sort(key=lambda c: (c.aligned.best.seconds, c.algo, c.matrix))
    return tuple(out)
