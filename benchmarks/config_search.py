"""The configuration search at scale: ``p2sim plan --model llama3-405b --system superpod-h100 --nodes 1024``
(8,192 H100s, no ``--axes``), and a small case, each in this process; the target is 60 CPU s for the large.

One line per case, then ``_measure``'s usage line (CPU seconds and peak MiB of the whole process):

    CASE gpus=G considered=N cut_memory=M cut_recompute=R cut_bound=B simulated=S best=LABEL step_s=T cpu_s=C

``--compare``: the published configuration beside the pick (Llama 3 405B: TP 8, CP 1, PP 16, Dubey et al. 2024
section 3.3.2; the 70B's Megatron-Bridge 25.11 DGX-H100 recipe, step_times_dev.csv row D28).

    python benchmarks/config_search.py            # both cases
    python benchmarks/config_search.py --small    # the small one only
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _measure import print_usage  # noqa: E402  (benchmarks/_measure.py, beside this script)

from p2sim.studies.config_search import run_search  # noqa: E402

CASES = {
    "llama3-70b@8xdgx-h100": dict(model="llama3-70b", system="dgx-h100", nodes=8,
                                  train="global_batch=128,dtype=fp8,zero=1",
                                  compare="tensor=4,pipeline=8,data=2,vp=5,mbs=1"),
    "llama3-405b@1024xsuperpod-h100": dict(model="llama3-405b", system="superpod-h100", nodes=1024,
                                           train=None, compare="tensor=8,pipeline=16,data=64,vp=8,mbs=1"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="only the 64-GPU case")
    args = ap.parse_args()
    for name, case in CASES.items():
        if args.small and "405b" in name:
            continue
        t0 = time.process_time()
        r = run_search(**case)
        cpu = time.process_time() - t0
        print(f"{name} gpus={r.gpus} considered={r.considered} cut_memory={r.cut_memory} "
              f"cut_recompute={r.cut_recompute} cut_bound={r.cut_bound} simulated={r.finished} "
              f"best={r.best.label.replace(' ', ',')} step_s={r.best.step_seconds:.3f} cpu_s={cpu:.2f}"
              + ("" if r.compared is None else
                 f" compared={r.compared.label.replace(' ', ',')} compared_step_s={r.compared.step_seconds:.3f}"
                 f" compared_place={r.compared_place}"), flush=True)
    print_usage()
    return 0


if __name__ == "__main__":
    sys.exit(main())
