"""Validating single-collective measurements: (optionally) calibrate, predict every row, score.

The model's (event-driven, or analytic when asked) and the link-bottleneck baseline's
predictions of every row, and their metrics (:func:`~p2sim.measurements.collective_predict.collective_metrics`) over
all rows, over the large rows (64 MiB and more, where bandwidth rules) and over the
small and medium ones (where latency and protocols do).

Cross-validation by size (``split="sizes"``): each system is calibrated on every other distinct size
of its calibration rows (the 1st, 3rd, ... smallest) and scored on the rows of the other sizes only,
so the metrics per size class say how the calibrated model predicts sizes it was not fitted to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..topology import find_spec
from ..util.errors import InputError
from .fit import calibrated_specs
from .collective_predict import CollectivePrediction, collective_metrics, predict_collectives, size_class
from .collective_rows import CollectiveRow
from ..studies.executor import Executor

__all__ = ["validate_collectives", "size_split", "LARGE", "NO_SPLIT", "SPLITS"]

LARGE = 64 * 2**20
NO_SPLIT = "none"  # validate --split's default: every row scored, no cross-validation by size
SPLITS = (NO_SPLIT, "sizes")  # validate --split: no split, or cross-validation by size


def size_split(calibrate_on: Sequence[CollectiveRow]) -> dict[str, frozenset[float]]:
    """Per system, the sizes calibrated on: every other distinct size of its rows, from the smallest."""
    sizes: dict[str, set[float]] = {}
    for r in calibrate_on:
        sizes.setdefault(r.system, set()).add(r.size_bytes)
    return {s: frozenset(sorted(v)[0::2]) for s, v in sizes.items()}


def validate_collectives(rows: Sequence[CollectiveRow], executor: Executor, engine: str = "des",
                         calibrate_on: Sequence[CollectiveRow] | None = None, split: str = NO_SPLIT) -> dict[str, Any]:
    """The single-collective part of ``p2sim validate``'s JSON document."""
    fit_sizes: dict[str, frozenset[float]] = {}
    if split == "sizes" and calibrate_on is not None:
        fit_sizes = size_split(calibrate_on)
        calibrate_on = [r for r in calibrate_on if r.size_bytes in fit_sizes[r.system]]
        rows = [r for r in rows if r.size_bytes not in fit_sizes.get(r.system, frozenset())]
        if not rows:
            raise InputError("split: every measured size was a calibration size: none is left to score")
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
    doc = {
        "model": engine,
        "rows": [p.to_json() for p in preds],
        "metrics": metrics,
        "calibration": [f.to_json() for f in fits],
        "calibrated_on_scored_rows": overlap,
        "size_classes": {k: sum(1 for p in preds if size_class(p.row.size_bytes) == k)
                         for k in ("small", "medium", "large")},
    }
    if split != NO_SPLIT:
        doc["split"] = {"by": split, "calibrated_sizes": {s: sorted(v) for s, v in sorted(fit_sizes.items())}}
    return doc
