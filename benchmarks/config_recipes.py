"""Where the published recipes rank in the configuration search: each Megatron-Bridge 25.11 row of a system
(``validation/step_times/step_times_dev.csv``) searched with its model, GPUs, sequence, global batch, precision
and optimizer sharding, its own configuration passed as ``compare`` (:func:`p2sim.studies.config_search.run_search`).

One line per row: the search's pick and step, the recipe's step and place among the configurations simulated
("-": below all of them), how much slower and why; then ``_measure``'s usage line.

    python benchmarks/config_recipes.py                   # the DGX-H100 rows
    python benchmarks/config_recipes.py --system DGX-B200 --max-gpus 64
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _measure import print_usage  # noqa: E402
from step_rows import MODELS, ROWS, SYSTEMS, configuration  # noqa: E402  (benchmarks/step_rows.py)

from p2sim.studies.config_search import loses_because, run_search  # noqa: E402
from p2sim.util.errors import InputError  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", default="DGX-H100", help="the rows' system column (default: DGX-H100)")
    ap.add_argument("--max-gpus", type=int, default=1024, help="skip rows on more GPUs (default: 1024)")
    args = ap.parse_args()
    with open(ROWS, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["system"] == args.system and int(r["gpus"]) <= args.max_gpus]
    for row in rows:
        axes, train = configuration(row)
        searched = ",".join(p for p in train.split(",") if p.split("=")[0] not in ("micro_batch", "vp", "sp"))
        compare = ",".join([f"{a}={v}" for a, v in axes.items()] + [f"vp={row['vp'] if row['vp'] not in ('', 'n/a') else 1}",
                                                                   f"mbs={row['mbs']}"])
        t0 = time.process_time()
        try:
            r = run_search(model=MODELS[row["model"]], system=SYSTEMS[row["system"]], gpus=int(row["gpus"]),
                           train=searched, compare=compare)
        except InputError as e:
            print(f"{row['id']} {row['model']} gpus={row['gpus']}: {e}", flush=True)
            continue
        c = r.compared
        print(f"{row['id']} {row['model']} gpus={row['gpus']} pick={r.best.label.replace(' ', ',')} "
              f"order={r.best.order} step_s={r.best.step_seconds:.3f} recipe={c.label.replace(' ', ',')} "
              f"order={c.order} recipe_step_s={c.step_seconds:.3f} place={r.compared_place or '-'} "
              f"simulated={r.finished} cpu_s={time.process_time() - t0:.1f} :: {loses_because(c, r.best)}", flush=True)
    print_usage()
    return 0


if __name__ == "__main__":
    sys.exit(main())
