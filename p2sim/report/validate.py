"""Rendering of validation and calibration results: terminal text, Markdown and HTML reports."""

from __future__ import annotations

from typing import Any

from ..measurements.fit import PLAUSIBLE
from ..measurements.program_scores import BEATS, DEFINITIONS
from .answer import Answer
from .files import data_uris, figure_png, render
from .tables import Column, Table

__all__ = ["validation_text", "validation_report", "validation_answer", "calibration_lines", "basis_sentence",
           "METRICS"]

METRICS = tuple(DEFINITIONS)
BASELINE = "baseline"
BASELINE_WHAT = "link bottleneck"  # what the baseline model is, where its name alone would say nothing


def _fmt(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _s(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def calibration_lines(cals: list[dict[str, Any]]) -> list[str]:
    lines = []
    for c in cals:
        fold = "" if c.get("fold") is None else f" (fold {c['fold']})"
        classes = ", ".join(f"{n} {v['file_GBps']:g} -> {v['fitted_GBps']:.3g} GB/s" for n, v in c["classes"].items())
        rates = c["rates_GBps"]
        caps = ", ".join(f"{k} {'none' if v is None else f'{v:.3g}'}" for k, v in rates.items()) or "none"
        lats = "".join(f"; {k} {v:.3g} us" for k, v in c.get("latencies_us", {}).items())
        lats += "".join(f"; {k} {v:.3g}" for k, v in c.get("shares", {}).items())
        lines.append(f"{c['system']} ({c['model']}){fold}: {classes}; per-channel rates (GB/s) {caps}{lats}; rms log error "
                     f"{c['rms_log_error_before']:.3f} -> {c['rms_log_error_after']:.3f} over {c['residuals']} "
                     f"times, {c['evaluations']} evaluations")
    return lines


def _order_lines(doc: dict[str, Any]) -> list[str]:
    """Which device order each file's programs are predicted in (that of the measurements)."""
    return [f"device order {o['order']} for {o['source']} ({o['rows']} rows; {o['from']})" for o in doc["orders"]]


def calibration_warnings(cals: list[dict[str, Any]]) -> list[str]:
    return [w + ("" if c.get("fold") is None else f" (fold {c['fold']})") for c in cals for w in c["warnings"]]


def basis_sentence(doc: dict[str, Any]) -> str:
    """Whether the scored rows were also calibration rows, in words."""
    b = doc["calibration_basis"]
    n, seen, k = b["scored_rows"], b["rows_also_in_calibration"], b["folds"]
    if b["basis"] == "not calibrated":
        return "Not calibrated: the predictions use the system files' link figures as they stand."
    if b["basis"] == "in sample":
        return (f"In sample: calibrated on the same rows it scores (all {n} scored rows were calibration rows), so "
                "the metrics say how well the calibrated model fits these measurements, not how well it predicts "
                "unseen ones (use --folds K to cross-validate).")
    if b["basis"] == "out of sample":
        how = (f"{k}-fold cross-validation: each fold is predicted by models calibrated on the other folds only"
               if k > 1 else "calibrated on other measurements")
        return f"Out of sample: none of the {n} scored rows was a calibration row ({how})."
    return f"Partly in sample: {seen} of the {n} scored rows were also calibration rows."


def validation_text(doc: dict[str, Any]) -> str:
    lines = [f"{doc['groups']} groups, {len(doc['rows'])} rows; engine {doc['model']}"
             + (f", {doc['folds']}-fold cross-validation" if doc["folds"] > 1 else "")]
    lines += _order_lines(doc)
    if doc["calibration"]:
        lines += ["", "calibration:"] + [f"  {x}" for x in calibration_lines(doc["calibration"])]
        lines += [f"  WARNING {w}" for w in calibration_warnings(doc["calibration"])]
        lines += ["", basis_sentence(doc)]
    lines += ["", f"{'metric':<26} {doc['model']:>10} {BASELINE:>10}"]
    for k in METRICS:
        if k in doc["metrics"]:
            lines.append(f"{k:<26} {_fmt(doc['metrics'][k]):>10} {_fmt(doc['baseline'].get(k)):>10}")
    for what, items in doc["misses"].items():
        if items:
            lines += ["", f"{what} misses ({doc['model']}):"] + [f"  {x}" for x in items]
    return "\n".join(lines)


def _colours(systems: list[str]) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10")
    return {s: cmap(i % 10) for i, s in enumerate(systems)}


def _scatter(doc: dict[str, Any], key: str) -> bytes:
    """Predicted against measured seconds: one panel per engine, colour = system, marker = algorithm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["rows"] if r[f"measured_{key}_s"]]
    systems = sorted({r["gpu"] for r in rows})
    colour = _colours(systems)
    # a marker per algorithm the rows name, in order of first appearance (every row is drawn, whatever it ran)
    shapes = "o^sDv<>ph*"
    markers = {a: shapes[k % len(shapes)] for k, a in enumerate(dict.fromkeys(r["algo"] for r in rows))}
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharex=True, sharey=True)
    values = [r[f"{w}_{key}_s"] for r in rows for w in ("measured", "predicted", "baseline")]
    lo, hi = min(values) / 1.3, max(values) * 1.3
    # the panels are named by engine; the baseline's says what it is rather than its name twice
    for ax, (who, name) in zip(axes, (("predicted", doc["model"]), ("baseline", f"{BASELINE} ({BASELINE_WHAT})"))):
        for s in systems:
            for algo, marker in markers.items():
                sel = [r for r in rows if r["gpu"] == s and r["algo"] == algo]
                if sel:
                    ax.scatter([r[f"measured_{key}_s"] for r in sel], [r[f"{who}_{key}_s"] for r in sel], s=22,
                               color=colour[s], marker=marker, alpha=0.8, label=f"{s} {algo}")
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, label="predicted = measured")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel(f"measured {key} seconds")
        ax.set_title(name)
    axes[0].set_ylabel(f"predicted {key} seconds")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9, title="system, algorithm")
    what = "AllReduce" if key == "allreduce" else "best program"
    fig.suptitle(f"{what}: predicted against measured seconds")
    return figure_png(fig)


MODEL_HELP = {
    "measured": "measured on the GPUs (the measurement file)",
    "predicted": "predicted by the validated engine",
    "baseline": "predicted by the link-bottleneck baseline (one ring or tree per group, its slowest hop, no contention)",
}


def _rows_table(doc: dict[str, Any]) -> Table:
    engine = doc["model"]
    who = {"measured": "measured", "predicted": engine, "baseline": BASELINE}

    def triple(group: str, field: str, unit: str, fmt) -> list[Column]:
        return [Column(who[w], f"{unit}, {MODEL_HELP[w]}", (lambda r, w=w: fmt(r, w)), numeric=True, group=group)
                for w in ("measured", "predicted", "baseline")]

    def speedup(r: dict[str, Any], w: str) -> str:
        if w == "baseline":
            return f"{r['baseline_allreduce_s'] / r['baseline_optimal_s']:.2f}x"
        v = r[f"{w}_speedup"]
        return "n/a" if v is None else f"{v:.2f}x"

    def better(r: dict[str, Any], w: str) -> str:
        v = r[f"{w}_programs_better"]
        return "n/a" if v is None else str(v)

    cols = [
        Column("gpu", "the measured system", lambda r: r["gpu"]),
        Column("nodes", "node count", lambda r: str(r["nodes"]), numeric=True),
        Column("axes", "parallelism axis sizes", lambda r: str(r["axes"]), wrap=False),
        Column("reduce", "reduction axes", lambda r: str(r["reduce_axes"]), wrap=False),
        Column("matrix", "parallelism matrix", lambda r: r["matrix"], code=True, wrap=False),
        Column("algo", "NCCL algorithm", lambda r: r["algo"]),
        *triple("AllReduce s", "allreduce", "seconds of the matrix's single AllReduce",
                lambda r, w: _s(r[f"{w}_allreduce_s"])),
        *triple("best program s", "optimal", "seconds of the matrix's fastest program",
                lambda r, w: _s(r[f"{w}_optimal_s"])),
        *triple("speedup", "speedup", "the matrix's AllReduce s / its best program s (same algorithm), each", speedup),
        *triple("programs faster than AllReduce", "better",
                "count, over all matrices of the configuration, of programs faster than their matrix's AllReduce",
                better),
        Column(engine, "the fastest program of the matrix as the validated engine predicts it",
               lambda r: r["predicted_best_program"], code=True, group="best program"),
    ]
    return Table.of("Rows", cols, doc["rows"], intro="One row per measured (configuration, matrix, algorithm).")


def _metrics_table(doc: dict[str, Any]) -> Table:
    engine = doc["model"]
    cols = [
        Column("metric", "the metric's name in --json output", lambda k: k, code=True),
        Column(engine, MODEL_HELP["predicted"], lambda k: _fmt(doc["metrics"][k]), numeric=True),
        Column(BASELINE, MODEL_HELP["baseline"], lambda k: _fmt(doc["baseline"].get(k)), numeric=True),
        Column("what it measures", "the metric's definition", lambda k: DEFINITIONS[k]),
    ]
    notes = [f"'Beats the AllReduce' means its best program is at least {BEATS:.2f}x faster. "
             "n/a: the measurements hold nothing to score it on."]
    return Table.of("Metrics", cols, [k for k in METRICS if k in doc["metrics"]], notes=notes)


def _calibration_tables(doc: dict[str, Any]) -> list[Table]:
    cals = doc["calibration"]
    if not cals:
        return []

    def fit(c: dict[str, Any]) -> str:
        return f"{c['system']} ({c['model']})" + ("" if c.get("fold") is None else f" fold {c['fold']}")

    items = [(c, name, v) for c in cals for name, v in c["classes"].items()]
    link_cols = [
        Column("fit", "system (engine) and, when cross-validating, the fold held out", lambda x: fit(x[0])),
        Column("link class", "the system file's link class", lambda x: x[1], code=True),
        Column("file GB/s", "the system file's bandwidth per direction", lambda x: f"{x[2]['file_GBps']:g}",
               numeric=True),
        Column("fitted GB/s", "the calibrated bandwidth per direction", lambda x: f"{x[2]['fitted_GBps']:.3g}",
               numeric=True),
        Column("fitted / file", "the calibrated bandwidth over the file's", lambda x: f"{x[2]['ratio']:.3g}",
               numeric=True),
        Column("check", "implausible when below a tenth or above twice the file's figure",
               lambda x: "ok" if PLAUSIBLE[0] <= x[2]["ratio"] <= PLAUSIBLE[1] else "IMPLAUSIBLE"),
    ]
    fit_cols = [
        Column("fit", "system (engine) and fold", fit),
        Column("rows", "measured rows of the system it was fitted to", lambda c: str(c["rows"]), numeric=True),
        Column("per-channel rates GB/s", "fitted per-channel rates: network (net) and GPU side (channel), per "
               "algorithm; unlisted ones keep the file's or NCCL's default",
               lambda c: ", ".join(f"{k} {_s(v)}" for k, v in c["rates_GBps"].items()) or "none"),
        Column("latencies us", "fitted latencies: launch (per collective) and step_latency (one network step); "
               "unlisted ones keep the file's or the transport's", lambda c: ", ".join(
                   f"{k} {_s(v)}" for k, v in c.get("latencies_us", {}).items()) or "none"),
        Column("rms log error", "root mean square of log(predicted / measured) before -> after the fit",
               lambda c: f"{c['rms_log_error_before']:.3f} -> {c['rms_log_error_after']:.3f}", numeric=True),
        Column("times", "measured times fitted", lambda c: str(c["residuals"]), numeric=True),
    ]
    return [Table.of("Calibrated link rates", link_cols, items),
            Table.of("Calibration fits", fit_cols, cals)]


def _misses(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for who, misses in ((doc["model"], doc["misses"]), (BASELINE, doc["baseline_misses"])):
        for metric, items in misses.items():
            out.append({"model": who, "metric": metric, "items": items})
    return out


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0%}"


def validation_answer(doc: dict[str, Any]) -> Answer:
    """How often the engine picks what the measurements pick, and how far its times are off, beside the baseline."""
    m, b, engine = doc["metrics"], doc["baseline"], doc["model"]

    def both(k: str) -> str:
        return f"{_pct(m.get(k))} (baseline {_pct(b.get(k))})"

    text = (f"On {len(doc['rows'])} measured rows in {doc['groups']} groups, {engine} picks the fastest measured "
            f"placement in {both('top1_matrix')} of groups, orders pairs of placements right in "
            f"{both('pairwise_order')} of pairs, and predicts whether some program beats the AllReduce in "
            f"{both('beats_allreduce_accuracy')} of rows. Its predicted times are off by {both('mape_allreduce')} on "
            f"average for the AllReduce and {both('mape_optimal')} for the best program.")
    return Answer(text)  # the calibration basis and warnings follow it on the page


def validation_report(doc: dict[str, Any]) -> dict[str, bytes]:
    images = {"allreduce.png": _scatter(doc, "allreduce"), "optimal.png": _scatter(doc, "optimal")}
    captions = {
        "allreduce.png": "Each matrix's AllReduce: predicted against measured seconds, one panel per engine; "
                         "colour = system, marker = algorithm; on the grey line prediction equals measurement.",
        "optimal.png": "Each matrix's fastest program: predicted against measured seconds, as above.",
    }
    uris = data_uris(images)
    data = {
        "title": "p2sim validation",
        "answer": validation_answer(doc),
        "summary": validation_text(doc).splitlines()[0],
        "basis": basis_sentence(doc),
        "orders": _order_lines(doc),
        "warnings": calibration_warnings(doc["calibration"]),
        "metrics": _metrics_table(doc),
        "calibration": _calibration_tables(doc),
        "misses": _misses(doc),
        "images": [{"name": n, "caption": captions[n], "uri": uris[n]} for n in images],
        "rows": _rows_table(doc),
    }
    files = {"validation.md": render("validation.md", **data), "validation.html": render("validation.html", **data)}
    files.update(images)
    return files
