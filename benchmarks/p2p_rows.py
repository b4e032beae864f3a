"""Published alltoall_perf / sendrecv_perf rows: measured against predicted bus bandwidth and time, per row and group.

Reads ``validation/collectives/p2p/`` as ``p2sim validate --measurements validation/collectives/p2p/`` does
(:func:`p2sim.measurements.inputs.load_inputs`: nccl-tests tables kept verbatim from their sources, each
mapped to the p2sim system it ran on by the directory's ``systems.csv``; the sources are in its
``SOURCES.md``) and predicts each row as ``validate`` does
(:func:`p2sim.measurements.collective_predict.predict_each`, the event-driven model by default): NCCL's
grouped sends and receives (:mod:`p2sim.collectives.p2p`).  A row p2sim cannot predict is printed as
``cannot predict: <reason>`` and left out of the scores.

Per row: measured and predicted busbw (GB/s) and time (us), and measured / predicted busbw (``m/p``).
Per group (every row; each collective; one node; above the node; each system, node count and GPUs per
node; the large rows, 16 MiB and more, of each of those): the median of m/p, its geometric standard
deviation (``gsd``, as ``p2sim validate`` computes it) and Spearman's rank correlation of measured and
predicted busbw.  Last, the wall seconds of loading and predicting, and the process's CPU seconds and
peak memory.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _measure import print_usage  # benchmarks/_measure.py, beside this script
from _rows import score_line  # benchmarks/_rows.py: the groups' score line

from p2sim.measurements.collective_predict import CollectivePrediction, predict_each
from p2sim.measurements.inputs import load_inputs

ROOT = Path(__file__).resolve().parent.parent
P2P = ROOT / "validation" / "collectives" / "p2p"
LARGE = 16 << 20  # the rows past the latency-bound part of every sweep kept here: 16 MiB per rank and more


def _size(n: float) -> str:
    # alltoall_perf rounds a size down to whole elements per peer (80 ranks: 33553920 B for 32 MiB),
    # shown as ~32 MiB; the row's exact bytes are in its table
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            shown = f"{n / scale:.4g}"
            return f"{shown} {unit}" if float(shown) * scale == n else f"~{shown} {unit}"
    return f"{n:.0f} B"


HEAD = (f"{'file':<40} {'system':<9} {'n':>3} {'ranks':>5} {'collective':<9} {'place':<5} {'size':>8} "
        f"{'measured':>9} {'predicted':>9} {'m/p':>6} {'t_meas_us':>10} {'t_pred_us':>10} {'ran':<14}")


def _line(p: CollectivePrediction) -> str:
    r = p.row
    place = "in" if r.in_place else "out"
    return (f"{Path(r.source).name:<40} {r.system:<9} {r.nodes:>3} {r.ranks:>5} {r.collective:<9} {place:<5} "
            f"{_size(r.size_bytes):>8} {r.busbw / 1e9:>9.2f} {p.busbw(p.seconds) / 1e9:>9.2f} {p.ratio:>6.3f} "
            f"{r.seconds * 1e6:>10.2f} {p.seconds * 1e6:>10.2f} {p.algo}/{p.proto} x{p.channels}")


def _scores(name: str, preds: Sequence[CollectivePrediction]) -> str:
    return score_line(name, preds, 38)


def _groups(preds: Sequence[CollectivePrediction]) -> list[tuple[str, Callable[[CollectivePrediction], bool]]]:
    out: list[tuple[str, Callable[[CollectivePrediction], bool]]] = [("all rows", lambda p: True)]
    for coll in sorted({p.row.collective for p in preds}):
        out.append((coll, lambda p, c=coll: p.row.collective == c))
    out += [("one node", lambda p: p.row.nodes == 1), ("above the node", lambda p: p.row.nodes > 1)]
    # a layout is a system, a node count and the GPUs used in each node: the H100 all-to-all tables run
    # 10 nodes of 1, 2, 4 and 8 GPUs, different traffic on the same nodes
    for system, nodes, gpn in sorted({(p.row.system, p.row.nodes, p.row.gpus_per_node) for p in preds}):
        def same(p: CollectivePrediction, s: str = system, n: int = nodes, g: int = gpn) -> bool:
            return p.row.system == s and p.row.nodes == n and p.row.gpus_per_node == g
        out.append((f"{system} {nodes} x {gpn} GPUs", same))
        out.append((f"{system} {nodes} x {gpn} GPUs, >= 16 MiB", lambda p, f=same: f(p) and p.row.size_bytes >= LARGE))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=("des", "analytic"), default="des")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = list(load_inputs(P2P).collectives)
    rows.sort(key=lambda r: (r.system, r.nodes, r.collective, r.size_bytes, r.in_place))
    t_read = time.perf_counter() - t0
    preds, failed = predict_each(rows, engine=args.engine)
    t_pred = time.perf_counter() - t0 - t_read
    print(f"## {P2P.relative_to(ROOT)}: busbw in GB/s, time in us, m/p = measured / predicted busbw "
          f"({args.engine} engine)")
    print(HEAD)
    for p in preds:
        print(_line(p))
    for r, why in failed:
        print(f"{Path(r.source).name:<40} {r.system:<9} {r.nodes:>3} {r.ranks:>5} {r.collective:<9} "
              f"cannot predict: {why.replace(f'{ROOT}/', '').split(' (known: ')[0]}")
    print()
    print("## scores (rows p2sim predicted)")
    for name, keep in _groups(preds):
        print(_scores(name, [p for p in preds if keep(p)]))
    print(f"rows: {len(rows)} read, {len(preds)} predicted, {len(failed)} cannot be predicted")
    print(f"wall_seconds: read={t_read:.2f} predict={t_pred:.2f} total={time.perf_counter() - t0:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
