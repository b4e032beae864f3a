"""Rendering of validation and calibration results."""

from __future__ import annotations

from typing import Any

from .files import figure_png, markdown_to_html

METRICS = ("top1_matrix", "pairwise_order", "beats_allreduce_accuracy", "mape_allreduce", "mape_optimal",
           "programs_better_spearman", "top1_program", "top3_program", "top5_program", "top10_program")


def _fmt(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def metrics_table(doc: dict[str, Any]) -> list[str]:
    lines = [f"| metric | {doc['model']} | analytic baseline |", "| --- | --- | --- |"]
    for k in METRICS:
        if k in doc["metrics"]:
            lines.append(f"| {k} | {_fmt(doc['metrics'][k])} | {_fmt(doc['baseline'].get(k))} |")
    return lines


def calibration_lines(cals: list[dict[str, Any]]) -> list[str]:
    lines = []
    for c in cals:
        fold = "" if c.get("fold") is None else f" (fold {c['fold']})"
        classes = ", ".join(f"{n} {v['file_GBps']:g} -> {v['fitted_GBps']:.3g} GB/s" for n, v in c["classes"].items())
        caps = ", ".join(f"{a} {'none' if v is None else f'{v:.3g} GB/s'}" for a, v in c["max_rate_GBps"].items())
        lines.append(f"{c['system']} ({c['model']}){fold}: {classes}; rate ceilings {caps}; tree network "
                     f"efficiency {c['efficiency']['tree']:.3g}; rms log error "
                     f"{c['rms_log_error_before']:.3f} -> {c['rms_log_error_after']:.3f} over {c['residuals']} "
                     f"times, {c['evaluations']} evaluations")
    return lines


def validation_text(doc: dict[str, Any]) -> str:
    lines = [f"{doc['groups']} groups, {len(doc['rows'])} rows; model {doc['model']}"
             + (f", {doc['folds']}-fold cross-validation" if doc["folds"] > 1 else "")]
    if doc["calibration"]:
        lines += ["", "calibration:"] + [f"  {x}" for x in calibration_lines(doc["calibration"])]
    lines += ["", f"{'metric':<26} {doc['model']:>10} {'analytic':>10}"]
    for k in METRICS:
        if k in doc["metrics"]:
            lines.append(f"{k:<26} {_fmt(doc['metrics'][k]):>10} {_fmt(doc['baseline'].get(k)):>10}")
    for what, items in doc["misses"].items():
        if items:
            lines += ["", f"{what} misses ({doc['model']}):"] + [f"  {x}" for x in items]
    return "\n".join(lines)


def _scatter(doc: dict[str, Any], key: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 5))
    rows = [r for r in doc["rows"] if r[f"measured_{key}_s"]]
    for who, colour in (("predicted", "#1f77b4"), ("baseline", "#ff7f0e")):
        ax.scatter([r[f"measured_{key}_s"] for r in rows], [r[f"{who}_{key}_s"] for r in rows], s=14,
                   color=colour, label=doc["model"] if who == "predicted" else "analytic", alpha=0.8)
    lo = min(min(r[f"measured_{key}_s"], r[f"predicted_{key}_s"], r[f"baseline_{key}_s"]) for r in rows)
    hi = max(max(r[f"measured_{key}_s"], r[f"predicted_{key}_s"], r[f"baseline_{key}_s"]) for r in rows)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"measured {key} seconds")
    ax.set_ylabel(f"predicted {key} seconds")
    ax.legend()
    ax.set_title(f"{key}: predicted against measured")
    return figure_png(fig)


def validation_report(doc: dict[str, Any]) -> dict[str, bytes]:
    images = {"allreduce.png": _scatter(doc, "allreduce"), "optimal.png": _scatter(doc, "optimal")}
    md = ["# p2sim validation", "", validation_text(doc).splitlines()[0], ""] + metrics_table(doc)
    if doc["calibration"]:
        md += ["", "## Calibration", ""] + [f"- {x}" for x in calibration_lines(doc["calibration"])]
    md += ["", "## Predicted against measured", "", "![allreduce](allreduce.png)", "", "![optimal](optimal.png)", "",
           "## Rows", "", "| gpu | nodes | axes | reduce | matrix | algo | AllReduce s (meas / pred / base) | "
           "optimal s (meas / pred / base) | programs better (meas / pred / base) | predicted best program |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        ar = "n/a" if r["measured_allreduce_s"] is None else f"{r['measured_allreduce_s']:.3g}"
        better = "n/a" if r["measured_programs_better"] is None else r["measured_programs_better"]
        md.append(f"| {r['gpu']} | {r['nodes']} | {r['axes']} | {r['reduce_axes']} | {r['matrix']} | {r['algo']} | "
                  f"{ar} / {r['predicted_allreduce_s']:.3g} / {r['baseline_allreduce_s']:.3g} | "
                  f"{r['measured_optimal_s']:.3g} / {r['predicted_optimal_s']:.3g} / {r['baseline_optimal_s']:.3g} | "
                  f"{better} / {r['predicted_programs_better']} / {r['baseline_programs_better']} | "
                  f"`{r['predicted_best_program']}` |")
    text = "\n".join(md) + "\n"
    files = {"validation.md": text.encode(), "validation.html": markdown_to_html("p2sim validation", text, images)}
    files.update(images)
    return files
