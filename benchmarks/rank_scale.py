"""Searches that scale: a four-level 512-GPU rank and a three-level 256-node plan.

* ``rank`` on ``benchmarks/systems/a100-pods.toml`` (pods of A100 nodes: [pod 8, node 4,
  pcie 4, gpu 4], 512 GPUs), axes 8,4,4,4 reducing axis 0: 396 matrices, 113,382
  programs; the exact top 10.
* ``plan`` on ``benchmarks/systems/a100-3level.toml`` ([node 256, pcie 4, gpu 4], 4096
  GPUs), axes 32,8,16 with a data-parallel reduction over axis 0 (4 GiB) and 48
  tensor-parallel ones over axis 2 (256 MiB): 70 (matrix, reduction) pairs, 15,812 programs.

Each runs as the ``p2sim`` command in a fresh process, with the bounded search (the
default) on one and on two worker processes, and with ``--exhaustive`` when asked
(``--exhaustive``: minutes); one line each:

    COMMAND workers=N search=bounded|exhaustive programs=P simulated=S exact=E wall_seconds=W cpu_seconds=C

``cpu_seconds`` is the command's and its workers' CPU time.  With ``--exhaustive`` the two
answers' JSON is compared (``same_answer=True``: identical but for the search statistics).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from _measure import print_usage  # benchmarks/_measure.py, beside this script

HERE = Path(__file__).resolve().parent
RANK = ["rank", "--system", str(HERE / "systems" / "a100-pods.toml"), "--axes", "8,4,4,4", "--reduce", "0",
        "--top", "10", "--yes"]
PLAN = ["plan", "--system", str(HERE / "systems" / "a100-3level.toml"), "--axes", "32,8,16",
        "--reduction", "0:4GiB", "--reduction", "2:256MiB x 48", "--yes"]


def run(argv: list[str], workers: int, exhaustive: bool) -> dict:
    cmd = [sys.executable, "-m", "p2sim", *argv, "--json", "--workers", str(workers)] + (
        ["--exhaustive"] if exhaustive else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    doc = json.loads(out)
    s = doc["search"]
    print(f"{argv[0]} workers={workers} search={'exhaustive' if exhaustive else 'bounded'} programs={s['programs']} "
          f"simulated={s['simulated']} exact={s['exact']} wall_seconds={wall:.1f} cpu_seconds={cpu:.1f}", flush=True)
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exhaustive", action="store_true", help="also simulate every program and compare (minutes)")
    args = ap.parse_args()
    for argv in (RANK, PLAN):
        docs = [run(argv, w, False) for w in (1, 2)]
        if args.exhaustive:
            full = run(argv, 2, True)
            for d in docs + [full]:
                d.pop("search")
                d.pop("simulations", None)
            print(f"{argv[0]} same_answer={all(d == full for d in docs)}", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
