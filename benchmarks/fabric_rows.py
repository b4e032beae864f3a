"""Published nccl-tests rows above the node: measured against predicted bus bandwidth, per row and per group.

Reads every single-collective CSV in ``validation/collectives/fabric/`` (the dev rows and the public
rows, with their mapping files; see validation/README.md) and, separately, the multi-node rows of
the earlier set ``validation/collectives/nccl_tests_dev.csv``.  Each row is predicted as
``p2sim validate`` predicts it (:func:`p2sim.measurements.collective_predict.predict_each`,
the event-driven model by default).  A row p2sim cannot read or predict (a system it does not ship,
an algorithm it cannot run for that collective) is printed as ``cannot predict: <reason>`` and left
out of the scores.

Per group (all fabric rows; NVL72 racks; SHARP (CollNet forced); the rest; the earlier multi-node
rows): the median of measured / predicted, its geometric standard deviation (``gsd``, as
``p2sim validate`` computes it) and Spearman's rank correlation of measured and predicted busbw.
Last, the wall seconds of loading and predicting, and the process's CPU seconds and peak memory.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _measure import print_usage  # benchmarks/_measure.py, beside this script
from _rows import score_line  # benchmarks/_rows.py: the groups' score line

from p2sim.measurements.collective_csv import SkippedRow, is_collective_csv, read_collective_csv
from p2sim.measurements.collective_predict import CollectivePrediction, predict_each
from p2sim.measurements.collective_rows import CollectiveRow

ROOT = Path(__file__).resolve().parent.parent
FABRIC = ROOT / "validation" / "collectives" / "fabric"
EARLIER = ROOT / "validation" / "collectives" / "nccl_tests_dev.csv"


def _read(paths: Sequence[Path]) -> tuple[list[CollectiveRow], list[SkippedRow]]:
    rows: list[CollectiveRow] = []
    skipped: list[SkippedRow] = []
    for p in paths:
        r, s = read_collective_csv(p)
        rows += r
        skipped += s
    return rows, skipped


def _short(reason: str) -> str:
    """A reason on one line: paths from the repository, without the list of known systems."""
    return reason.replace(f"{ROOT}/", "").split(" (known: ")[0]


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{int(n // scale)} {unit}"
    return f"{n:.0f} B"


def _line(p: CollectivePrediction) -> str:
    r = p.row
    return (f"{r.ident:>5} {r.system:<16} {r.nodes:>3} {r.ranks:>5} {r.collective:<10} {r.algo:<15} {p.algo:<15} "
            f"{_size(r.size_bytes):>8} {r.busbw / 1e9:>9.2f} {p.busbw(p.seconds) / 1e9:>9.2f} {p.ratio:>6.3f}")


HEAD = (f"{'id':>5} {'system':<16} {'n':>3} {'ranks':>5} {'collective':<10} {'asked':<15} {'ran':<15} "
        f"{'size':>8} {'measured':>9} {'predicted':>9} {'m/p':>6}")


def _scores(name: str, preds: Sequence[CollectivePrediction]) -> str:
    return score_line(name, preds, 34)


def _nvl72(p: CollectivePrediction) -> bool:
    return p.row.system.startswith("gb200-nvl72")


def _sharp(p: CollectivePrediction) -> bool:
    return p.row.algo.startswith("collnet")


GROUPS: tuple[tuple[str, Callable[[CollectivePrediction], bool]], ...] = (
    ("all fabric rows", lambda p: True),
    ("NVL72 racks (gb200-nvl72*)", _nvl72),
    ("SHARP (CollNet forced)", _sharp),
    ("the rest", lambda p: not _nvl72(p) and not _sharp(p)),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=("des", "analytic"), default="des")
    args = ap.parse_args()
    t0 = time.perf_counter()
    files = sorted(f for f in FABRIC.iterdir() if f.is_file() and is_collective_csv(f))
    rows, skipped = _read(files)
    earlier_all, earlier_skipped = _read([EARLIER])
    earlier = [r for r in earlier_all if r.nodes > 1]
    t_read = time.perf_counter() - t0
    out = {"fabric": predict_each(rows, engine=args.engine), "earlier": predict_each(earlier, engine=args.engine)}
    t_pred = time.perf_counter() - t0 - t_read
    for label, title, bad in (("fabric", f"fabric rows ({', '.join(f.name for f in files)})", skipped),
                              ("earlier", f"earlier multi-node rows ({EARLIER.name}, nodes > 1)", earlier_skipped)):
        preds, failed = out[label]
        print(f"## {title}: busbw in GB/s, m/p = measured / predicted ({args.engine} engine)")
        print(HEAD)
        for p in preds:
            print(_line(p))
        for r, why in failed:
            print(f"{r.ident:>5} {r.system:<16} {r.nodes:>3} {r.ranks:>5} {r.collective:<10} {r.algo:<15} "
                  f"cannot predict: {_short(why)}")
        for s in bad:
            print(f"{s.ident:>5} cannot predict: {_short(s.reason)}")
        print()
    print("## scores (rows p2sim predicted)")
    fabric = out["fabric"][0]
    for name, keep in GROUPS:
        print(_scores(name, [p for p in fabric if keep(p)]))
    print(_scores("earlier multi-node rows", out["earlier"][0]))
    n_out = len(skipped) + len(out["fabric"][1])
    print(f"fabric rows: {len(rows) + len(skipped)} read, {len(fabric)} predicted, {n_out} cannot be predicted")
    print(f"wall_seconds: read={t_read:.2f} predict={t_pred:.2f} total={time.perf_counter() - t0:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
