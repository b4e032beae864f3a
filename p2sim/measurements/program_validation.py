"""Validating programs' measurements: (optionally) calibrate, predict every group, score.

With ``folds = k`` the measured configurations (system, nodes, axes, reduction
axes) are dealt into ``k`` folds in file order, the ring and tree groups of one
configuration together, so that every fold holds both algorithms; each fold is
predicted by models calibrated on the calibration rows of the other folds only,
and the pooled predictions are scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..util.errors import InputError
from ..formalism.hierarchy import Order
from ..topology import find_spec
from .fit import Calibration, calibrated_specs
from ..studies.executor import Executor
from .program_rows import GroupKey, MeasuredRow
from .program_predict import RowPrediction, groups_of, predict_groups, row_predictions
from ..studies.config_task import ConfigResult
from .program_scores import metrics, row_json

__all__ = ["ValidationResult", "validate", "orders_used"]

BASELINE = "baseline"  # the link-bottleneck model every validation is compared with


@dataclass(frozen=True)
class ValidationResult:
    engine: str
    groups: int
    predictions: dict[str, list[RowPrediction]]  # by engine
    results: dict[str, dict[GroupKey, ConfigResult]]
    calibrations: tuple[tuple[int | None, Calibration], ...]  # (fold or None, fit)
    folds: int
    # scored rows whose measured configuration and matrix are among the rows their engine was
    # calibrated on (None: not calibrated)
    rows_in_calibration: int | None = None

    def calibration_basis(self) -> dict[str, Any]:
        """Whether calibration saw the rows it is scored on."""
        scored = len(self.predictions[self.engine])
        seen = self.rows_in_calibration
        if seen is None:
            basis = "not calibrated"
        elif seen == 0:
            basis = "out of sample"
        elif seen == scored:
            basis = "in sample"
        else:
            basis = "partly in sample"
        return {"basis": basis, "folds": self.folds, "scored_rows": scored, "rows_also_in_calibration": seen}

    def metrics(self, engine: str) -> dict[str, Any]:
        return metrics(self.predictions[engine], self.results[engine])

    def to_json(self) -> dict[str, Any]:
        main = self.metrics(self.engine)
        base = self.metrics(BASELINE)
        baseline_by_row = {id(p.row): p for p in self.predictions[BASELINE]}
        return {
            "groups": self.groups,
            "model": self.engine,
            "folds": self.folds,
            "metrics": {k: v for k, v in main.items() if k != "misses"},
            "baseline": {k: v for k, v in base.items() if k != "misses"},
            "misses": main["misses"],
            "baseline_misses": base["misses"],
            "orders": orders_used(p.row for p in self.predictions[self.engine]),
            "calibration": [dict(c.to_json(), fold=f) for f, c in self.calibrations],
            "calibration_basis": self.calibration_basis(),
            "rows": [row_json(p, baseline_by_row[id(p.row)]) for p in self.predictions[self.engine]],
        }


def orders_used(rows: Iterable[MeasuredRow]) -> list[dict[str, Any]]:
    """Which device order each measurement file's rows are predicted with, and why."""
    out: dict[tuple[str, Order, str], int] = {}
    for r in rows:
        key = (r.source, r.order, r.order_from)
        out[key] = out.get(key, 0) + 1
    return [{"source": s, "order": o.value, "from": f, "rows": n} for (s, o, f), n in out.items()]


def validate(rows: Sequence[MeasuredRow], executor: Executor, engine: str = "des",
             calibrate_on: Sequence[MeasuredRow] | None = None, folds: int = 1) -> ValidationResult:
    if folds > 1 and calibrate_on is None:
        raise InputError("folds: cross-validation needs --calibrate-on")
    groups = groups_of(rows)
    keys = list(groups)
    systems = sorted({r.system for r in rows})
    preds: dict[str, list[RowPrediction]] = {}
    results: dict[str, dict[GroupKey, ConfigResult]] = {}
    fits: list[tuple[int | None, Calibration]] = []
    configs = list(dict.fromkeys(k[:4] for k in keys))
    if folds > len(configs):
        raise InputError(f"folds: {folds} folds but only {len(configs)} measured configurations")
    fold_of = {c: i % folds for i, c in enumerate(configs)}
    seen = None if calibrate_on is None else 0
    for m in dict.fromkeys((engine, BASELINE)):
        preds[m], results[m] = [], {}
        for f in range(folds):
            held = {k for k in keys if fold_of[k[:4]] == f}
            cal = None if calibrate_on is None else (
                [r for r in calibrate_on if r.group not in held] if folds > 1 else list(calibrate_on))
            if cal is None:
                specs = {s: find_spec(s) for s in systems}
            else:
                specs, fitted = calibrated_specs(systems, executor, m, cal)
                fits += [(f if folds > 1 else None, fit) for fit in fitted]
            part = {k: groups[k] for k in keys if k in held}
            if cal is not None and m == engine:
                known = {(r.group, r.matrix) for r in cal}
                seen += sum(1 for k in part for r in part[k] if (r.group, r.matrix) in known)
            res = predict_groups(part, specs, m, executor, all_matrices=True, label=f"predicting ({m})")
            results[m].update(res)
            preds[m] += row_predictions(part, res)
        order = {id(r): i for i, r in enumerate(rows)}
        preds[m].sort(key=lambda p: order[id(p.row)])
    return ValidationResult(engine, len(keys), preds, results, tuple(fits), folds, seen)
