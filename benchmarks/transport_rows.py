"""Every published single-collective row p2sim has, scored per transport and per size class.

Where ``fabric_rows.py`` groups the rows above the node by fabric and ``ramp.py`` scores each full-range
log, this script asks issue 46's question: is p2sim right on each kind of cluster, at every size?  It
reads every set of published rows in ``validation/`` (the dev points ``collectives/nccl_tests_dev.csv``,
the fabric rows ``collectives/fabric/``, the point-to-point and all-to-all tables ``collectives/p2p/``
and the full-range logs ``logs/``, each with its mapping file), predicts each as ``p2sim validate``
does (:func:`p2sim.measurements.collective_predict.predict_each`: under the environment its job set,
with the algorithm it was forced to), and prints, per transport and size class, the rows, the median
of measured / predicted bus bandwidth, its geometric spread (``gsd``) and Spearman's rank correlation.

The transport of a row is its system's ``[network] transport`` (``ib``, ``roce``, ``efa``, ``tcpx``,
...) when it spans nodes, ``nvlink`` or ``pcie`` inside one node.  The size classes are issue 46's:
small below 1 MiB, medium 1-64 MiB, large from 64 MiB.  Last, the wall seconds, CPU seconds and peak
memory.  ``--rows`` prints every row too.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from _measure import print_usage  # benchmarks/_measure.py, beside this script
from _rows import score_line  # benchmarks/_rows.py: a group's score line

from p2sim.measurements.collective_csv import is_collective_csv, read_collective_csv
from p2sim.measurements.collective_predict import CollectivePrediction, predict_each
from p2sim.measurements.collective_rows import CollectiveRow
from p2sim.measurements.inputs import load_inputs
from p2sim.topology import Topology, find_spec

ROOT = Path(__file__).resolve().parent.parent
VALIDATION = ROOT / "validation"
# directories of CSVs read row by row (a row this p2sim cannot read is reported, not fatal)
CSV_DIRS = (VALIDATION / "collectives", VALIDATION / "collectives" / "fabric")
# directories of logs with a systems.csv, read as `p2sim validate --measurements DIR` reads them
LOG_DIRS = (VALIDATION / "collectives" / "p2p", VALIDATION / "logs")
MiB = 2**20
CLASSES = ("small", "medium", "large")


def size_class(nbytes: float) -> str:
    """Issue 46's classes: small below 1 MiB, medium 1-64 MiB, large from 64 MiB."""
    return "small" if nbytes < MiB else "medium" if nbytes < 64 * MiB else "large"


@functools.cache
def _inside(system: str) -> str:
    """How a node's GPUs reach each other: ``nvlink`` or ``pcie`` (the path NCCL takes between its first two)."""
    return "nvlink" if Topology(find_spec(system), 1).router.intra_type(0, 1) == "NVL" else "pcie"


def transport(row: CollectiveRow) -> str:
    """The network transport of a row across nodes; inside one node, NVLink or PCIe."""
    return find_spec(row.system).nccl.transport if row.nodes > 1 else _inside(row.system)


def read_rows() -> tuple[list[CollectiveRow], list[str]]:
    """Every published row, and a line for each one that could not be read."""
    rows: list[CollectiveRow] = []
    bad: list[str] = []
    for d in CSV_DIRS:
        for f in sorted(p for p in d.iterdir() if p.is_file() and is_collective_csv(p)):
            got, skipped = read_collective_csv(f)
            rows += got
            bad += [f"{s.ident}: {s.reason}" for s in skipped]
    for d in LOG_DIRS:
        rows += load_inputs(d).collectives
    return rows, bad


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=("des", "analytic"), default="des")
    ap.add_argument("--rows", action="store_true", help="print every row too")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows, bad = read_rows()
    preds, failed = predict_each(rows, engine=args.engine)
    wall = time.perf_counter() - t0
    if args.rows:
        print("transport class   system            n ranks collective     asked        ran          size B"
              "   measured predicted    m/p")
        for p in preds:
            r = p.row
            print(f"{transport(r):<9} {size_class(r.size_bytes):<7} {r.system:<16} {r.nodes:>3} {r.ranks:>5} "
                  f"{r.collective:<14} {r.algo:<12} {p.algo:<12} {r.size_bytes:>12.0f} {r.busbw / 1e9:>9.2f} "
                  f"{p.busbw(p.seconds) / 1e9:>9.2f} {p.ratio:>6.3f}")
        print()
    print(f"## published rows per transport and size class: m/p = measured / predicted busbw ({args.engine} engine)")
    width = 22
    print(score_line("all", preds, width))
    for c in CLASSES:
        print(score_line(f"all {c}", [p for p in preds if size_class(p.row.size_bytes) == c], width))
    for t in sorted({transport(p.row) for p in preds}):
        mine = [p for p in preds if transport(p.row) == t]
        print(score_line(t, mine, width))
        for c in CLASSES:
            sel = [p for p in mine if size_class(p.row.size_bytes) == c]
            if sel:
                print(score_line(f"  {t} {c}", sel, width))
    for r, why in failed:
        print(f"cannot predict {r.ident} ({r.source}:{r.line}): {why.splitlines()[0]}")
    for line in bad:
        print(f"cannot read {line.splitlines()[0]}")
    print(f"rows: {len(rows) + len(bad)} read, {len(preds)} predicted, {len(failed) + len(bad)} cannot be")
    print(f"wall_seconds={wall:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
