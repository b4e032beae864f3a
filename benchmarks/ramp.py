"""The ramp: measured / predicted time of every full-range nccl-tests log, per size class.

For every log in ``validation/logs/`` (or the directories given) whose sizes reach all three size
classes -- small (< 64 KiB), medium (64 KiB - 64 MiB) and large (>= 64 MiB), issue 33's split -- it
prints, per class, the rows, the median of measured / predicted time and its geometric spread
(``gsd``: exp of the standard deviation of the log ratios, as ``p2sim validate`` computes it) and the
worst row (the ratio farthest from 1), three times:

* ``data-sheet``: predicted from the shipped system file the log's ``systems.csv`` names;
* ``calibrated``: after fitting that system to the whole log (:func:`p2sim.measurements.fit.calibrate`,
  what ``p2sim calibrate`` and ``validate --calibrate-on`` run), predicting the same log;
* ``half``: fitted to every other size of the log (the 1st, 3rd, ... distinct sizes) and predicting
  the other half (cross-validation by size).

Then one line per log and stage with the worst per-size ratio over all its scored rows, and last the
wall seconds of each log and of the whole run, the CPU seconds and peak memory.  Prediction and
calibration are p2sim's own (``predict_collectives``, ``calibrate``); nothing is re-implemented here.

Usage: ``python benchmarks/ramp.py [DIR ...] [--engine des|analytic] [--quick]`` (``--quick``: the
data-sheet stage only).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from _measure import print_usage  # benchmarks/_measure.py, beside this script

from p2sim.measurements.collective_predict import predict_collectives
from p2sim.measurements.collective_rows import CollectiveRow
from p2sim.measurements.fit import calibrate
from p2sim.measurements.inputs import load_inputs
from p2sim.studies.executor import make_executor

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "validation" / "logs"
# issue 33's size classes ("small < 64 KiB, medium 64 KiB-64 MiB, large"): the large class starts
# where validate's does (collective_validation.LARGE); 64 KiB itself is medium here
SMALL_BELOW = 64 * 1024
LARGE_FROM = 64 * 2**20
CLASSES = ("small", "medium", "large")


def ramp_class(nbytes: float) -> str:
    """``small`` below 64 KiB, ``medium`` from 64 KiB to below 64 MiB, ``large`` from 64 MiB."""
    return "small" if nbytes < SMALL_BELOW else "medium" if nbytes < LARGE_FROM else "large"


def is_full_range(rows: Sequence[CollectiveRow]) -> bool:
    """Whether a log's sizes reach every size class."""
    return {ramp_class(r.size_bytes) for r in rows} == set(CLASSES)


def halves(rows: Sequence[CollectiveRow]) -> tuple[list[CollectiveRow], list[CollectiveRow]]:
    """The rows of every other distinct size (1st, 3rd, ...) and the rows of the sizes between."""
    sizes = sorted({r.size_bytes for r in rows})
    fit = set(sizes[0::2])
    return [r for r in rows if r.size_bytes in fit], [r for r in rows if r.size_bytes not in fit]


def by_log(rows: Sequence[CollectiveRow]) -> dict[str, list[CollectiveRow]]:
    """The rows of each log (by file, in file order)."""
    out: dict[str, list[CollectiveRow]] = {}
    for r in rows:
        out.setdefault(r.source, []).append(r)
    return out


@dataclass(frozen=True)
class ClassScore:
    rows: int
    median: float  # of measured / predicted time
    gsd: float
    worst: float  # the ratio farthest from 1 (in log terms)
    worst_size: float


def score(ratios: Sequence[tuple[float, float]]) -> ClassScore | None:
    """The median, geometric spread and worst of (size, measured / predicted time) pairs."""
    if not ratios:
        return None
    logs = np.log([x for _, x in ratios])
    k = int(np.argmax(np.abs(logs)))
    return ClassScore(len(ratios), float(np.exp(np.median(logs))), float(np.exp(np.std(logs))),
                      float(np.exp(logs[k])), ratios[k][0])


def time_ratios(rows: Sequence[CollectiveRow], specs: dict | None, engine: str) -> list[tuple[float, float]]:
    """(size, measured / predicted seconds) of every row, predicted by p2sim."""
    return [(p.row.size_bytes, p.row.seconds / p.seconds) for p in predict_collectives(rows, specs, engine)]


def per_class(ratios: Sequence[tuple[float, float]]) -> dict[str, ClassScore | None]:
    return {c: score([x for x in ratios if ramp_class(x[0]) == c]) for c in CLASSES}


def _size(nbytes: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= f:
            return f"{nbytes / f:g} {unit}"
    return f"{nbytes:g} B"


def _print_stage(log: str, stage: str, ratios: Sequence[tuple[float, float]]) -> None:
    for c, s in per_class(ratios).items():
        if s is None:
            print(f"{log:<44} {stage:<11} {c:<7} {'-':>5}")
            continue
        print(f"{log:<44} {stage:<11} {c:<7} {s.rows:>5} {s.median:>7.3f} {s.gsd:>6.3f} {s.worst:>7.3f} "
              f"at {_size(s.worst_size)}", flush=True)


def run_log(name: str, rows: list[CollectiveRow], engine: str, quick: bool, executor) -> dict[str, float]:
    """Print one log's three stages; the worst per-size ratio of each."""
    system = rows[0].system
    worst: dict[str, float] = {}
    stages: list[tuple[str, list[tuple[float, float]]]] = [("data-sheet", time_ratios(rows, None, engine))]
    if not quick:
        fit = calibrate([], system, executor, engine, collectives=rows)
        stages.append(("calibrated", time_ratios(rows, {system: fit.after}, engine)))
        train, test = halves(rows)
        half = calibrate([], system, executor, engine, collectives=train)
        stages.append(("half", time_ratios(test, {system: half.after}, engine)))
    for stage, ratios in stages:
        _print_stage(name, stage, ratios)
        worst[stage] = max((x for _, x in ratios), key=lambda x: abs(math.log(x)))
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", default=[str(LOGS)], help="directories of nccl-tests logs (default: "
                    "validation/logs/)")
    ap.add_argument("--engine", default="des", choices=("des", "analytic"))
    ap.add_argument("--quick", action="store_true", help="the data-sheet stage only")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    logs = by_log(load_inputs(args.dirs).collectives)
    full = {src: rows for src, rows in logs.items() if is_full_range(rows)}
    for src in sorted(set(logs) - set(full)):
        print(f"skipped (not full range): {src}")
    print(f"{'log':<44} {'stage':<11} {'class':<7} {'rows':>5} {'median':>7} {'gsd':>6} {'worst':>7}  "
          "(measured / predicted time)")
    summary = []
    with make_executor(1, None, None, None) as ex:
        for src, rows in sorted(full.items()):
            t0 = time.perf_counter()
            name = f"{Path(src).name} ({rows[0].system}, {rows[0].nodes}x{rows[0].gpus_per_node})"
            worst = run_log(Path(src).name, rows, args.engine, args.quick, ex)
            summary.append((name, worst, time.perf_counter() - t0))
    for name, worst, secs in summary:
        parts = "  ".join(f"{k} {v:.3f}" for k, v in worst.items())
        print(f"worst per-size ratio: {name}: {parts}  ({secs:.1f} s)")
    print(f"logs={len(full)} engine={args.engine} wall_seconds={time.perf_counter() - start:.1f}")
    print_usage()
    return 0


if __name__ == "__main__":
    sys.exit(main())
