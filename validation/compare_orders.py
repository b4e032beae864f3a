"""Print the README's device-order table: aligned against p2 on P2's three-axis configurations.

Every configuration of P2's three-axis measurements (4 nodes, reduce axes 0 and 2), both
algorithms, with the shipped system files and with systems calibrated on P2's 2-node
measurements.  Only matrices whose groups differ between the orders are listed.

Usage: ``python validation/compare_orders.py [--workers N]`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CONFIGS = {"a100": ("16,2,2", "8,2,4", "4,2,8", "2,2,16"), "v100": ("8,2,2", "4,2,4", "2,2,8")}
HERE = Path(__file__).resolve().parent


def p2sim(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "p2sim", *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"p2sim {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def short(program: str) -> str:
    """``ReduceScatter(slice=1, Inside)`` -> ``RS(1,I)``, ``Parallel(0)`` -> ``P(0)``."""
    ops = {"AllReduce": "AR", "ReduceScatter": "RS", "AllGather": "AG", "Reduce": "R", "Broadcast": "B"}
    out = []
    for step in program.split(" ; "):
        m = re.fullmatch(r"(\w+)\(slice=(\d+), (\w+)(?:\((\d+)\))?\)", step)
        form = {"Inside": "I", "Parallel": "P", "Master": "M"}[m[3]] + (f"({m[4]})" if m[4] else "")
        out.append(f"{ops[m[1]]}({m[2]},{form})")
    return " ; ".join(out)


def comparison(system: str, axes: str, workers: str) -> dict:
    doc = json.loads(p2sim("rank", "--system", system, "--nodes", "4", "--axes", axes, "--reduce", "0,2",
                           "--algo", "both", "--compare-orders", "--json", "--workers", workers))
    return {(tuple(map(tuple, c["matrix"])), c["algo"]): c for c in doc["order_comparison"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="0", help="worker processes per rank (default: all cores)")
    args = ap.parse_args()
    workers = args.workers if args.workers != "0" else str(len(__import__("os").sched_getaffinity(0)))
    print("| system | axes | matrix | ring: aligned best (x AllReduce) | ring: p2 best (x AllReduce) "
          "| gain ring | gain tree |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for system, configs in CONFIGS.items():
            cal = str(Path(tmp) / f"{system}-cal.toml")
            p2sim("calibrate", "--measurements", str(HERE / "data"), "--system", system, "--out", cal,
                  "--workers", workers)
            for axes in configs:
                shipped, fitted = comparison(system, axes, workers), comparison(cal, axes, workers)
                for (matrix, algo), c in shipped.items():
                    if algo != "ring" or c["same_groups"]:
                        continue
                    tree, ctree = shipped[(matrix, "tree")], fitted[(matrix, "tree")]
                    m = "[" + " ".join("[" + " ".join(map(str, r)) + "]" for r in matrix) + "]"
                    print(f"| {system.upper()} | {axes} | `{m}` "
                          f"| `{short(c['aligned']['best_program'])}` ({c['aligned']['speedup']:.2f}x) "
                          f"| `{short(c['p2']['best_program'])}` ({c['p2']['speedup']:.2f}x) "
                          f"| {c['gain']:.2f}x / {fitted[(matrix, 'ring')]['gain']:.2f}x "
                          f"| {tree['gain']:.2f}x / {ctree['gain']:.2f}x |")


if __name__ == "__main__":
    main()
