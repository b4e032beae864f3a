"""User-scale commands at 2,048 nodes (16,384 GPUs): CPU seconds and peak memory of the whole process.

Each case runs ``p2sim`` through its command line in a fresh process with ``--workers 1`` (so
the process's CPU time is all the work) and prints one line: the case, CPU seconds
(user + system of the child, as GNU time reports them), wall seconds, peak resident MiB, and the
answer's first line of JSON-free text (so that a faster but different answer shows).  The
load average is printed first: the figures are only comparable on a quiet machine.

Cases (issue 26): ``rank`` of a 3-axis job (data, pipeline, tensor=8; reduce data) and of a
4-axis job with two reduction axes, ``whatif`` over three NIC bandwidths, ``plan`` with two
reductions, ``sweep -b 8 -e 8GiB``, on ``h100``, ``p5`` and ``superpod-h100``; and ``sweep`` on
``p5`` at 1,024 nodes.

Usage: ``python benchmarks/commands_2048.py [--systems h100,p5,superpod-h100] [--cases rank3,...]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from _measure import print_usage  # benchmarks/_measure.py, beside this script

NODES = 2048
CASES = {
    "rank3": ["rank", "--axes", "data=256,pipeline=8,tensor=8", "--reduce", "data", "--bytes", "1GiB"],
    "rank4": ["rank", "--axes", "data=128,context=2,pipeline=8,tensor=8", "--reduce", "data,context",
              "--bytes", "1GiB"],
    "whatif": ["whatif", "--axes", "data=256,pipeline=8,tensor=8", "--reduce", "data", "--bytes", "1GiB",
               "--vary", "nic.bandwidth=25,50,100"],
    "plan": ["plan", "--axes", "data=256,pipeline=8,tensor=8", "--reduction", "data:1GiB",
             "--reduction", "tensor:64MiB x 16", "--data-axis", "data"],
    "sweep": ["sweep", "-b", "8", "-e", "8GiB"],
}


def run_case(system: str, nodes: int, case: str) -> str:
    argv = [sys.executable, "-m", "p2sim", *CASES[case], "--system", system, "--nodes", str(nodes), "-q"]
    if case != "sweep":
        argv += ["--workers", "1"]
    # GNU time reports the child's own CPU seconds and peak (ru_maxrss) on the last line of stderr;
    # run() reads both pipes while the child runs (a sweep prints a rank line per GPU)
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *argv], capture_output=True, text=True)
    out, err = proc.stdout, proc.stderr
    wall, user, kernel, peak_kib = (float(x) for x in err.strip().splitlines()[-1].split())
    cpu = user + kernel
    lines = out.splitlines()
    answer = next((ln for ln in lines if ln.startswith(("best placement", "best plan"))), lines[-1] if lines else "")
    if proc.returncode:
        answer = "FAILED: " + (err.strip().splitlines()[:-1] or ["?"])[-1]
    return (f"{case:<7} {system:<14} nodes={nodes:<5} cpu_seconds={cpu:7.2f} wall_seconds={wall:7.2f} "
            f"peak_mib={peak_kib / 1024:6.0f}  {answer[:90]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default="h100,p5,superpod-h100")
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores", flush=True)
    for system in args.systems.split(","):
        for case in args.cases.split(","):
            print(run_case(system, NODES, case), flush=True)
    if "p5" in args.systems.split(",") and "sweep" in args.cases.split(","):
        print(run_case("p5", 1024, "sweep"), flush=True)


if __name__ == "__main__":
    main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
