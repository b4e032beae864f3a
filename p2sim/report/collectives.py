"""Rendering of single-collective validation: per-row table, metrics, plots (text, Markdown, HTML)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .answer import Answer
from .files import data_uris, figure_png, render
from .tables import Column, Table

__all__ = ["collectives_text", "collectives_report", "collectives_answer", "size_text"]

METRIC_HELP = {
    "rows": "rows scored",
    "median_ratio": "median of measured / predicted bus bandwidth (1 = right; below 1: the model is optimistic)",
    "gsd": "geometric standard deviation of that ratio (1 = every row off by the same factor)",
    "spearman": "rank correlation of measured and predicted bus bandwidth over the rows",
    "multi_node_within_1_5_of_median": "share of multi-node rows whose ratio is within 1.5x of the median ratio",
}
SCOPES = {"all": "every row", "large": "rows of 64 MiB and more", "small_medium": "rows below 64 MiB"}


def size_text(n: float) -> str:
    """Bytes in the largest binary unit that keeps the number at least 1 (``8 B``, ``64 MiB``)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def _f(v: Any, fmt: str = ".3f") -> str:
    return "n/a" if v is None else format(v, fmt)


def _engine(doc: dict[str, Any]) -> str:
    """The engine scored beside the baseline (documents written before it was recorded: des)."""
    return doc.get("model", "des")


ENGINE_HELP = {"des": "the event-driven engine", "analytic": "the analytic engine (NCCL's tuning, no contention)"}


def _metric_rows(doc: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    out = []
    name = _engine(doc)
    for scope, m in doc["metrics"].items():
        for key in ("all", "single-node", "multi-node", "pcie", "small", "medium", "large"):
            if key in m[name]:
                d, b = m[name][key], m["baseline"].get(key, {})
                out.append((SCOPES[scope], f"{key} ({d['rows']} rows)",
                            f"median {_f(d['median_ratio'])}, gsd {_f(d['gsd'])}",
                            f"median {_f(b.get('median_ratio'))}, gsd {_f(b.get('gsd'))}"))
        for key in ("spearman", "multi_node_within_1_5_of_median"):
            if key in m[name]:
                out.append((SCOPES[scope], key, _f(m[name][key]), _f(m["baseline"].get(key))))
    return out


def collectives_text(doc: dict[str, Any]) -> str:
    rows = doc["rows"]
    engine = _engine(doc)
    lines = [f"single collectives: {len(rows)} rows ({', '.join(f'{v} {k}' for k, v in doc['size_classes'].items())});"
             " bus bandwidth in GB/s, ratio = measured / predicted", ""]
    # widths from the values: ids may be file names, systems any name, and a column never leans on the next
    ids = max([2] + [len(str(r["id"])) for r in rows])
    systems = max([6] + [len(r["system"]) for r in rows])
    colls = max([10] + [len(r["collective"]) for r in rows])
    num = max(9, len(engine))
    lines.append(f"{'id':>{ids}} {'system':<{systems}} {'GPUs':>6} {'collective':<{colls}} {'size':>9} "
                 f"{'measured':>9} {engine:>{num}} {'ratio':>6} {'baseline':>9} {'ratio':>6}  ran")
    for r in rows:
        gpus = f"{r['nodes']}x{r['gpus_per_node']}"
        lines.append(f"{r['id']:>{ids}} {r['system']:<{systems}} {gpus:>6} {r['collective']:<{colls}} "
                     f"{size_text(r['size_bytes']):>9} {r['measured_busbw_GBps']:9.2f} "
                     f"{r['predicted_busbw_GBps']:{num}.2f} {r['ratio']:6.2f} {r['baseline_busbw_GBps']:9.2f} "
                     f"{r['baseline_ratio']:6.2f}  {r['algo']}/{r['proto']} x{r['channels']}")
    lines += ["", f"{'rows':<26} {'':<28} {engine:<32} baseline"]
    for scope, key, d, b in _metric_rows(doc):
        lines.append(f"{scope:<26} {key:<28} {d:<32} {b}")
    if doc.get("split", {}).get("by") == "sizes":
        for system, sizes in doc["split"]["calibrated_sizes"].items():
            lines += ["", f"cross-validation by size: {system} calibrated on {len(sizes)} sizes (every other one, "
                      f"{size_text(sizes[0])} first), scored on the sizes between; per size class above"]
    if doc["calibration"]:
        lines += ["", f"calibrated on single collectives ({doc['calibrated_on_scored_rows']} of the scored rows among "
                  "them)"]
    return "\n".join(lines)


def collectives_answer(doc: dict[str, Any]) -> Answer:
    """How close the model's bus bandwidths are to the measured ones, beside the baseline's, in two sentences."""
    engine = _engine(doc)
    every = doc["metrics"]["all"]
    m, b = every[engine]["all"], every["baseline"].get("all", {})
    text = (f"On {m['rows']} measured rows, measured / predicted bus bandwidth has a median of "
            f"{_f(m['median_ratio'], '.2f')} and a spread (geometric standard deviation) of {_f(m['gsd'], '.2f')} for "
            f"{engine}, against {_f(b.get('median_ratio'), '.2f')} and {_f(b.get('gsd'), '.2f')} for the "
            "link-bottleneck baseline (1 and 1: every row predicted exactly).")
    if "spearman" in every[engine]:
        text += (f" Rank correlation with the measurements: {_f(every[engine]['spearman'])} for {engine}, "
                 f"{_f(every['baseline'].get('spearman'))} for the baseline.")
    return Answer(text)


def _colours(names: list[str]) -> dict[str, Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {n: cmap(i % 10) for i, n in enumerate(names)}


def _scatter(doc: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = doc["rows"]
    systems = sorted({r["system"] for r in rows})
    colour = _colours(systems)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharex=True, sharey=True)
    vals = [r[k] for r in rows for k in ("measured_busbw_GBps", "predicted_busbw_GBps", "baseline_busbw_GBps")]
    lo, hi = min(vals) / 1.5, max(vals) * 1.5
    for ax, (key, name) in zip(axes, (("predicted", _engine(doc)), ("baseline", "baseline"))):
        for s in systems:
            sel = [r for r in rows if r["system"] == s]
            ax.scatter([r["measured_busbw_GBps"] for r in sel], [r[f"{key}_busbw_GBps"] for r in sel], s=22,
                       color=colour[s], label=s, alpha=0.85)
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("measured bus bandwidth (GB/s)")
        ax.set_title(name)
    axes[0].set_ylabel("predicted bus bandwidth (GB/s)")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9, title="system")
    fig.suptitle("Single collectives: predicted against measured bus bandwidth")
    return figure_png(fig)


def _curves(doc: dict[str, Any]) -> bytes | None:
    """Bus bandwidth against size for every (system, layout, collective, algorithm) with three sizes or more."""
    series: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in doc["rows"]:
        series[(r["system"], r["nodes"], r["gpus_per_node"], r["collective"], r["algo_asked"], r["gpu"])].append(r)
    series = {k: sorted(v, key=lambda r: r["size_bytes"]) for k, v in series.items()
              if len({r["size_bytes"] for r in v}) >= 3}
    if not series:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    colour = _colours([str(k) for k in series])
    for k, rs in series.items():
        label = f"{k[5] or k[0]} {k[1]}x{k[2]} {k[3]} ({k[4]})"
        c = colour[str(k)]
        ax.plot([r["size_bytes"] for r in rs], [r["measured_busbw_GBps"] for r in rs], "o-", color=c,
                label=f"{label}: measured")
        ax.plot([r["size_bytes"] for r in rs], [r["predicted_busbw_GBps"] for r in rs], "--", color=c,
                label=f"{label}: predicted")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.legend(fontsize=8)
    ax.set_title("Bus bandwidth against size: measured (solid) and predicted (dashed)")
    return figure_png(fig)


def row_columns(engine: str) -> tuple[Column, ...]:
    """The rows table's columns, headed by the engine that was scored."""
    what = ENGINE_HELP.get(engine, engine)
    return (
        Column("id", "the row's id (or file:line)", lambda r: str(r["id"])),
        Column("system", "the p2sim system it ran on", lambda r: r["system"], code=True, wrap=False),
        Column("GPUs", "nodes x GPUs per node", lambda r: f"{r['nodes']}x{r['gpus_per_node']}", numeric=True),
        Column("collective", "the collective", lambda r: r["collective"]),
        Column("size", "nccl-tests' size: the larger of a rank's input and output",
               lambda r: size_text(r["size_bytes"]), numeric=True),
        Column("measured", "measured bus bandwidth, GB/s", lambda r: f"{r['measured_busbw_GBps']:.2f}",
               numeric=True, group="busbw"),
        Column(engine, f"predicted by {what}, GB/s", lambda r: f"{r['predicted_busbw_GBps']:.2f}",
               numeric=True, group="busbw"),
        Column("baseline", "predicted by the link-bottleneck baseline, GB/s",
               lambda r: f"{r['baseline_busbw_GBps']:.2f}", numeric=True, group="busbw"),
        Column(engine, f"measured / predicted by {what}", lambda r: f"{r['ratio']:.2f}", numeric=True,
               group="ratio"),
        Column("baseline", "measured / predicted by the baseline", lambda r: f"{r['baseline_ratio']:.2f}",
               numeric=True, group="ratio"),
        Column("ran", f"what {what} ran: algorithm / protocol x channels",
               lambda r: f"{r['algo']}/{r['proto']} x{r['channels']}", code=True),
    )


def _metric_tables(doc: dict[str, Any]) -> list[Table]:
    """The ratio's median and spread per class of rows, then the whole-set metrics: one quantity per column."""
    engine = _engine(doc)
    classes, whole = [], []
    for scope, m in doc["metrics"].items():
        for key in ("all", "single-node", "multi-node", "pcie", "small", "medium", "large"):
            if key in m[engine]:
                classes.append((SCOPES[scope], key, m[engine][key], m["baseline"].get(key, {})))
        for key in ("spearman", "multi_node_within_1_5_of_median"):
            if key in m[engine]:
                whole.append((SCOPES[scope], key, m[engine][key], m["baseline"].get(key)))
    what = ENGINE_HELP.get(engine, engine)

    def pair(field: str, fmt: str) -> list[Column]:
        return [Column(who, f"{METRIC_HELP[field]}: {desc}", (lambda x, i=i: _f(x[i].get(field), fmt)),
                       numeric=True, group=field.replace("_", " "))
                for i, who, desc in ((2, engine, what), (3, "baseline", "the link-bottleneck baseline"))]

    class_cols = (Column("rows", "which rows", lambda x: x[0]), Column("class", "class of rows", lambda x: x[1]),
                  Column("count", "rows in the class", lambda x: str(x[2]["rows"]), numeric=True),
                  *pair("median_ratio", ".3f"), *pair("gsd", ".3f"))
    whole_cols = (Column("rows", "which rows", lambda x: x[0]),
                  Column("metric", "the metric's name in --json output", lambda x: x[1], code=True),
                  Column(engine, what, lambda x: _f(x[2]), numeric=True),
                  Column("baseline", "the link-bottleneck baseline", lambda x: _f(x[3]), numeric=True),
                  Column("what it measures", "the metric's definition", lambda x: METRIC_HELP[x[1]]))
    return [Table.of("Ratio by class of rows", class_cols, classes, intro="Ratio = measured / predicted bus "
                     "bandwidth, per row; its median says how far off the model is, its spread how evenly."),
            Table.of("Metrics", whole_cols, whole)]


def collectives_report(doc: dict[str, Any]) -> dict[str, bytes]:
    """``collectives.md``, ``collectives.html`` and their plots."""
    images = {"collectives.png": _scatter(doc)}
    curves = _curves(doc)
    if curves is not None:
        images["collectives_sizes.png"] = curves
    captions = {"collectives.png": "Every row: predicted against measured bus bandwidth, one panel per engine, colour "
                                   "= system; on the grey line the prediction is right.",
                "collectives_sizes.png": "Bus bandwidth against size for each series of three sizes or more."}
    uris = data_uris(images)
    tables = [*_metric_tables(doc), Table.of("Rows", row_columns(_engine(doc)), doc["rows"])]
    data = {"title": "p2sim validation: single collectives", "answer": collectives_answer(doc),
            "summary": collectives_text(doc).splitlines()[0], "tables": tables,
            "images": [{"name": n, "caption": captions[n], "uri": uris[n]} for n in images]}
    files = {"collectives.md": render("collectives.md", **data), "collectives.html": render("collectives.html", **data)}
    files.update(images)
    return files
