"""Validating single-collective measurements: (optionally) calibrate, predict every row, score.

The model's (event-driven, or analytic when asked) and the link-bottleneck baseline's
predictions of every row, and their metrics (:func:`~p2sim.measurements.collective_predict.collective_metrics`) over
all rows, over the large rows (64 MiB and more, where bandwidth rules) and over the
small and medium ones (where latency and protocols do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..topology import find_spec
from .fit import calibrated_specs
from .collective_predict import CollectivePrediction, collective_metrics, predict_collectives, size_class
from .collective_rows import CollectiveRow
from ..studies.executor import Executor

__all__ = ["validate_collectives", "LARGE"]

LARGE = 64 * 2**20


def validate_collectives(rows: Sequence[CollectiveRow], executor: Executor, engine: str = "des",
                         calibrate_on: Sequence[CollectiveRow] | None = None) -> dict[str, Any]:
    """The single-collective part of ``p2sim validate``'s JSON document."""
    systems = sorted({r.system for r in rows})
    if calibrate_on is None:
        specs, fits = {s: find_spec(s) for s in systems}, []
    else:
        specs, fits = calibrated_specs(systems, executor, engine, collectives=calibrate_on,
                                       what="single-collective measurements")
    preds: list[CollectivePrediction] = predict_collectives(rows, specs, engine)
    seen = {(r.source, r.line) for r in (calibrate_on or ())}
    overlap = sum(1 for r in rows if (r.source, r.line) in seen)
    large = [p for p in preds if p.row.size_bytes >= LARGE]
    rest = [p for p in preds if p.row.size_bytes < LARGE]
    metrics = {"all": collective_metrics(preds)}
    if large:
        metrics["large"] = collective_metrics(large)
    if rest:
        metrics["small_medium"] = collective_metrics(rest)
    return {
        "model": engine,
        "rows": [p.to_json() for p in preds],
        "metrics": metrics,
        "calibration": [f.to_json() for f in fits],
        "calibrated_on_scored_rows": overlap,
        "size_classes": {k: sum(1 for p in preds if size_class(p.row.size_bytes) == k)
                         for k in ("small", "medium", "large")},
    }
