"""The score line of a group of predicted published rows, as the row benchmarks print it.

``fabric_rows.py`` and ``p2p_rows.py`` score their groups alike: the rows, the median and geometric
spread of measured / predicted busbw (:func:`p2sim.measurements.collective_predict.ratio_summary`) and
the rank correlation of measured and predicted busbw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from p2sim.measurements.collective_predict import CollectivePrediction, ratio_summary


def score_line(name: str, preds: Sequence[CollectivePrediction], width: int) -> str:
    """``NAME rows=.. median=.. gsd=.. spearman=..`` with the name padded to ``width``."""
    from scipy.stats import spearmanr  # as collective_metrics does: scipy.stats costs 0.3 s of a start

    if not preds:
        return f"{name:<{width}} rows=0"
    s = ratio_summary([p.ratio for p in preds])
    rho = float("nan")
    if len(preds) >= 3:
        rho = float(spearmanr([p.row.busbw for p in preds], [p.busbw(p.seconds) for p in preds]).statistic)
    shown = "n/a" if not math.isfinite(rho) else f"{rho:.3f}"
    return f"{name:<{width}} rows={s['rows']:<4} median={s['median_ratio']:.3f} gsd={s['gsd']:.3f} spearman={shown}"
