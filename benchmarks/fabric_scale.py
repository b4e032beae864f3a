"""Fabrics at scale: the shipped SuperPOD (three tiers, 32-node units) from 128 to 2,048 nodes.

Per case one line, each in a fresh process (cold caches, the interpreter's imports included in
the whole-process figures):

* ``simulate``: a 16,384-GPU (2,048-node) AllReduce and ReduceScatter-AllReduce-AllGather with
  NCCL's automatic choice -- ``wall_seconds`` and ``peak_mib`` of the whole process;
* ``rank`` and ``whatif``: a 3-axis job (data, pipe, tensor) at 128 and 1,024 nodes, through the
  command line, ``wall_seconds`` of the command.

``--quick`` runs the 128-node cases and the simulations only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from _measure import print_usage  # benchmarks/_measure.py, beside this script

SIM = """
import resource, sys, time
t0 = time.perf_counter()
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program
from p2sim.sim import Simulator
from p2sim.topology import load_system
topo = load_system("superpod-h100", nodes=2048)
h = topo.hierarchy
lw = Lowering.of(Placement.of(h, [topo.devices], [list(h)]), [0])
r = Simulator(topo).simulate(lw, parse_program(sys.argv[1]), 2**30)
print(f"ran={','.join(s.algo for s in r.steps)} predicted_seconds={r.total_seconds:.6g} "
      f"wall_seconds={time.perf_counter() - t0:.2f} "
      f"peak_mib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
"""
PROGRAMS = {
    "allreduce": "AllReduce(slice=0, Inside)",
    "rs-ar-ag": "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)",
}
JOBS = {128: "data=16,pipe=8,tensor=8", 1024: "data=128,pipe=8,tensor=8"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    for name, text in PROGRAMS.items():
        out = subprocess.run([sys.executable, "-c", SIM, text], capture_output=True, text=True)
        if out.returncode:
            sys.stderr.write(out.stderr)
            return out.returncode
        print(f"simulate superpod-h100 gpus=16384 {name} {out.stdout.strip()}", flush=True)
    for nodes, axes in JOBS.items():
        if args.quick and nodes > 128:
            continue
        for cmd in (["rank", "--reduce", "data"], ["whatif", "--reduce", "data", "--vary", "leaf.oversubscription=1,2"]):
            t = time.perf_counter()
            run = subprocess.run([sys.executable, "-m", "p2sim", *cmd, "--system", "superpod-h100", "--nodes", str(nodes),
                                  "--axes", axes, "--bytes", "1GiB", "-q"], capture_output=True, text=True)
            if run.returncode:
                sys.stderr.write(run.stderr)
                return run.returncode
            print(f"{cmd[0]} superpod-h100 nodes={nodes} axes={axes} wall_seconds={time.perf_counter() - t:.1f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
