"""Issue 47's targets at 2,048 nodes (16,384 GPUs): CPU seconds and peak MiB of every row, with the load first.

Each row runs ``p2sim`` through its command line in a fresh process with ``--workers 1`` (the
process's CPU time is then all the work; a shared machine's other load shows in wall seconds,
not in CPU seconds) and prints one line: the row, the system, its node count, CPU seconds (user +
system of the child, as GNU time reports them), wall seconds, peak resident MiB, the issue's
target for the row and whether the row is within it, and the answer's first line (so that a
faster but different answer shows).  The machine's load average is printed first.

Rows (issue 34's rows, issue 47's targets; the job is issue 34's: axes data = GPUs/32, pipeline 4,
tensor 8, reduce data, 4 GiB):

* ``rank3`` on ``superpod-h100``, ``roce-h100``, ``gb200-nvl72-pod`` (racks of 72 GPUs: as many
  racks as give about the same GPUs, 224 -- whole units of 8 -- at 2,048 nodes) and the flat ``h100``;
* ``rank4``, axes data, context 2, pipeline 4, tensor 8 reducing data and context, on ``superpod-h100``;
* ``whatif`` of three points on each: ``leaf.oversubscription=1,2,4`` on a fabric, NIC speeds
  ``nic.bandwidth=25,50,100`` on ``h100``;
* ``plan`` with three reductions (data 4 GiB, tensor 64 MiB x 16, pipeline 16 MiB x 8) on ``superpod-h100``.

A row that fails (a refusal included) prints ``FAILED:`` and the command's last line of stderr.

Usage: ``python benchmarks/fabric_2048.py [--nodes 2048] [--rows rank3,rank4,whatif,plan] [--systems ...]``
(``--nodes 64`` runs the same rows smaller).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from dataclasses import dataclass

from _measure import print_usage  # benchmarks/_measure.py, beside this script

NODES = 2048
FABRICS = ("superpod-h100", "roce-h100", "gb200-nvl72-pod")
FLAT = "h100"
GPUS_PER_NODE = {"superpod-h100": 8, "roce-h100": 8, "h100": 8, "gb200-nvl72-pod": 72}
# issue 47's targets (CPU seconds, peak MiB) per row and system; every row within 500 MiB
TARGETS = {("rank3", "superpod-h100"): 10.0, ("rank4", "superpod-h100"): 30.0, ("whatif", "superpod-h100"): 15.0,
           ("plan", "superpod-h100"): 15.0, ("rank3", "gb200-nvl72-pod"): 15.0, ("whatif", "gb200-nvl72-pod"): 30.0,
           ("rank3", "roce-h100"): 30.0, ("whatif", "roce-h100"): 60.0, ("rank3", "h100"): 4.0,
           ("whatif", "h100"): 8.0}
PEAK_MIB = 500.0


@dataclass(frozen=True)
class Row:
    name: str  # rank3, rank4, whatif, plan
    system: str
    nodes: int
    argv: tuple[str, ...]

    @property
    def target(self) -> tuple[float, float]:
        return TARGETS[(self.name, self.system)], PEAK_MIB


def nodes_of(system: str, nodes: int) -> int:
    """The node count with about as many GPUs as ``nodes`` 8-GPU nodes (gb200-nvl72-pod: racks of 72, down to
    whole scalable units of 8 racks -- placements put axes on whole units -- which also keeps the GPUs a
    multiple of the job's 64 = context x pipeline x tensor: 224 racks, 16,128 GPUs, at 2,048 nodes; the
    issue's 228 racks are not whole units)."""
    gpn = GPUS_PER_NODE[system]
    if gpn == 8:
        return nodes
    return max(8, 8 * (nodes * 8 // gpn // 8))


def job(system: str, nodes: int, context: bool = False) -> list[str]:
    gpus = nodes * GPUS_PER_NODE[system]
    if context:
        return ["--axes", f"data={gpus // 64},context=2,pipeline=4,tensor=8", "--reduce", "data,context"]
    return ["--axes", f"data={gpus // 32},pipeline=4,tensor=8", "--reduce", "data"]


def rows(nodes: int, names: list[str], systems: list[str]) -> list[Row]:
    out = []
    for system in systems:
        n = nodes_of(system, nodes)
        common = ("--system", system, "--nodes", str(n))
        vary = "nic.bandwidth=25,50,100" if system == FLAT else "leaf.oversubscription=1,2,4"
        if "rank3" in names:
            out.append(Row("rank3", system, n, ("rank", *common, *job(system, n), "--bytes", "4GiB")))
        if "rank4" in names and system == "superpod-h100":
            out.append(Row("rank4", system, n, ("rank", *common, *job(system, n, True), "--bytes", "4GiB")))
        if "whatif" in names:
            out.append(Row("whatif", system, n, ("whatif", *common, *job(system, n), "--bytes", "4GiB",
                                                 "--vary", vary)))
        if "plan" in names and system == "superpod-h100":
            axes = job(system, n)[:2]
            out.append(Row("plan", system, n, ("plan", *common, *axes, "--reduction", "data:4GiB",
                                               "--reduction", "tensor:64MiB x 16", "--reduction",
                                               "pipeline:16MiB x 8", "--data-axis", "data")))
    return out


def run_row(row: Row) -> str:
    argv = [sys.executable, "-m", "p2sim", *row.argv, "-q", "--workers", "1"]
    # GNU time reports the child's own CPU seconds and peak (ru_maxrss) on the last line of stderr
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *argv], capture_output=True, text=True)
    out, err = proc.stdout, proc.stderr
    wall, user, kernel, peak_kib = (float(x) for x in err.strip().splitlines()[-1].split())
    cpu, peak = user + kernel, peak_kib / 1024
    lines = out.splitlines()
    answer = next((ln for ln in lines if ln.startswith(("best placement", "best plan"))), lines[-1] if lines else "")
    if proc.returncode:
        said = [ln for ln in err.strip().splitlines()[:-1] if not ln.startswith("Command exited")]
        answer = "FAILED: " + (said or ["?"])[-1]
    cpu_target, peak_target = row.target
    within = "within" if cpu <= cpu_target and peak <= peak_target and not proc.returncode else "OVER"
    return (f"{row.name:<7} {row.system:<16} nodes={row.nodes:<5} cpu_seconds={cpu:8.2f} wall_seconds={wall:8.2f} "
            f"peak_mib={peak:6.0f} target={cpu_target:g}s/{peak_target:g}MiB {within:<6} {answer[:80]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=NODES, help="8-GPU nodes (a multiple of 8; default 2048)")
    ap.add_argument("--rows", default="rank3,rank4,whatif,plan")
    ap.add_argument("--systems", default=",".join((*FABRICS, FLAT)))
    args = ap.parse_args()
    if args.nodes < 8 or args.nodes % 8:
        ap.error(f"--nodes: {args.nodes} must be a multiple of 8 (data = GPUs/64 must be whole and above 1)")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores", flush=True)
    for row in rows(args.nodes, args.rows.split(","), args.systems.split(",")):
        if math.prod(int(a.split("=")[1]) for a in row.argv[row.argv.index("--axes") + 1].split(",")) != \
                row.nodes * GPUS_PER_NODE[row.system]:
            print(f"{row.name:<7} {row.system:<16} nodes={row.nodes:<5} skipped: the axes do not cover the GPUs")
            continue
        print(run_row(row), flush=True)


if __name__ == "__main__":
    main()
    print_usage()  # this process's CPU seconds (children included), peak memory and the load
