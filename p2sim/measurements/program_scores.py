"""Programs' validation metrics: predictions against measurements (see the README's table).

``top1_matrix``
    share of groups with two or more measured matrices whose fastest predicted matrix
    (by best program) is the fastest measured one (by ``optimal_s``);
``pairwise_order``
    share of measured matrix pairs within a group whose AllReduce order is predicted;
``beats_allreduce_accuracy``
    share of rows where "some program beats AllReduce by >= 5%" is predicted as measured;
``mape_allreduce``, ``mape_optimal``
    mean absolute percentage errors of predicted seconds;
``programs_better_spearman``
    rank correlation over groups of predicted and measured counts of programs faster
    than their matrix's AllReduce;
``top{1,3,5,10}_program`` (per-program logs only)
    share of groups whose measured fastest (matrix, program) is in the predicted top k.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


from ..formalism.placement import format_matrix
from .program_rows import GroupKey, MeasuredRow
from .program_predict import RowPrediction
from ..studies.config_task import ConfigResult

__all__ = ["metrics", "BEATS", "group_label", "DEFINITIONS"]

BEATS = 1.05  # "beats AllReduce" means faster by at least 5%

# what each metric measures, as reports print it next to the figures
DEFINITIONS = {
    "top1_matrix": "share of groups with 2+ measured matrices whose fastest predicted matrix (by its best program) "
                   "is the fastest measured one (by optimal_s); higher is better",
    "pairwise_order": "share of pairs of measured matrices in a group whose AllReduce order (which is faster) the "
                      "prediction gets right; higher is better",
    "beats_allreduce_accuracy": "share of rows where 'some program beats the AllReduce by >= 5%' is predicted as "
                                "measured; higher is better",
    "mape_allreduce": "mean absolute percentage error of the predicted AllReduce seconds (0.10 = 10%); lower is better",
    "mape_optimal": "mean absolute percentage error of the predicted best program's seconds; lower is better",
    "programs_better_spearman": "Spearman rank correlation, over groups, of the predicted and measured counts of "
                                "programs faster than their matrix's AllReduce (-1..1); higher is better",
    "top1_program": "per-program logs: share of groups whose measured fastest (matrix, program) is predicted fastest",
    "top3_program": "per-program logs: share of groups whose measured fastest (matrix, program) is in the "
                    "predicted top 3",
    "top5_program": "per-program logs: share of groups whose measured fastest (matrix, program) is in the "
                    "predicted top 5",
    "top10_program": "per-program logs: share of groups whose measured fastest (matrix, program) is in the "
                     "predicted top 10",
}


def group_label(key: GroupKey) -> str:
    system, nodes, axes, red, algo, _, order = key
    # the order changes nothing with one reduction axis, so it is named only with several
    named = f" {order.value} order" if len(red) > 1 else ""
    return f"{system} {nodes} nodes axes {list(axes)} reduce {list(red)}{named} {algo}"


def _share(hits: list[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def metrics(preds: Sequence[RowPrediction], results: Mapping[GroupKey, ConfigResult]) -> dict[str, Any]:
    """All metrics plus, for each, what it got wrong (``misses``)."""
    from scipy.stats import spearmanr  # here, not at import: scipy.stats costs 0.3 s of every start

    by_group: dict[GroupKey, list[RowPrediction]] = {}
    for p in preds:
        by_group.setdefault(p.row.group, []).append(p)
    misses: dict[str, list[str]] = {"top1_matrix": [], "pairwise_order": [], "beats_allreduce": []}
    top1, pairs = [], []
    for key, ps in by_group.items():
        if len(ps) >= 2:
            measured = min(ps, key=lambda p: p.row.optimal_s)
            predicted = min(ps, key=lambda p: p.optimal_s)
            top1.append(measured.row.matrix == predicted.row.matrix)
            if not top1[-1]:
                misses["top1_matrix"].append(group_label(key))
        with_ar = [p for p in ps if p.row.allreduce_s is not None]
        for i, a in enumerate(with_ar):
            for b in with_ar[i + 1:]:
                if a.row.allreduce_s == b.row.allreduce_s:
                    continue  # a measured tie has no order to predict
                ok = (a.row.allreduce_s < b.row.allreduce_s) == (a.allreduce_s < b.allreduce_s)
                pairs.append(ok)
                if not ok:
                    misses["pairwise_order"].append(
                        f"{group_label(key)}: {format_matrix(a.row.matrix)} vs {format_matrix(b.row.matrix)}")
    beats = []
    for p in preds:
        if p.row.speedup is None:
            continue
        ok = (p.speedup >= BEATS) == (p.row.speedup >= BEATS)
        beats.append(ok)
        if not ok:
            misses["beats_allreduce"].append(
                f"{group_label(p.row.group)} {format_matrix(p.row.matrix)}: measured {p.row.speedup:.2f}x, "
                f"predicted {p.speedup:.2f}x ({p.best_program})")
    ar = [abs(p.allreduce_s - p.row.allreduce_s) / p.row.allreduce_s for p in preds if p.row.allreduce_s]
    opt = [abs(p.optimal_s - p.row.optimal_s) / p.row.optimal_s for p in preds]
    counted = [(ps[0].programs_better, ps[0].row.programs_better) for ps in by_group.values()
               if ps[0].row.programs_better is not None]
    rho = None
    if len(counted) >= 3:
        value = spearmanr([c[0] for c in counted], [c[1] for c in counted]).statistic
        rho = None if value is None or math.isnan(value) else float(value)
    out: dict[str, Any] = {
        "top1_matrix": _share(top1),
        "pairwise_order": _share(pairs),
        "beats_allreduce_accuracy": _share(beats),
        "mape_allreduce": sum(ar) / len(ar) if ar else None,
        "mape_optimal": sum(opt) / len(opt) if opt else None,
        "programs_better_spearman": rho,
    }
    out.update(_topk(by_group, results))
    out["misses"] = misses
    return out


def _topk(by_group: Mapping[GroupKey, list[RowPrediction]], results: Mapping[GroupKey, ConfigResult]) -> dict[str, Any]:
    """Per-program logs: is the measured fastest (matrix, program) in the predicted top k?"""
    hits: dict[int, list[bool]] = {k: [] for k in (1, 3, 5, 10)}
    for key, ps in by_group.items():
        measured: list[tuple[float, Any, str]] = [(s, p.row.matrix, t) for p in ps for t, s in p.row.programs]
        if not measured:
            continue
        predicted = {(pt.matrix, pt.text): pt.seconds for pt in results[key].programs}
        pool = [(predicted[(m, t)], m, t) for _, m, t in measured if (m, t) in predicted]
        if not pool:
            continue
        best = min(measured)[1:]
        order = [x[1:] for x in sorted(pool)]
        for k in hits:
            hits[k].append(best in order[:k])
    if not any(hits.values()):
        return {}
    return {f"top{k}_program": _share(v) for k, v in hits.items()}


def row_json(p: RowPrediction, baseline: RowPrediction) -> dict[str, Any]:
    r: MeasuredRow = p.row
    return dict(
        r.ident(),
        measured_allreduce_s=r.allreduce_s,
        measured_optimal_s=r.optimal_s,
        measured_speedup=r.speedup,
        measured_programs_better=r.programs_better,
        predicted_allreduce_s=p.allreduce_s,
        predicted_optimal_s=p.optimal_s,
        predicted_speedup=p.speedup,
        predicted_programs_better=p.programs_better,
        predicted_best_program=p.best_program,
        baseline_allreduce_s=baseline.allreduce_s,
        baseline_optimal_s=baseline.optimal_s,
        baseline_best_program=baseline.best_program,
        baseline_programs_better=baseline.programs_better,
        source=f"{r.source}:{r.line}",
    )
