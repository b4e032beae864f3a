"""Scale: a 64-node x 16-GPU A100 system (1024 GPUs).

Simulates, with the event-driven model, the full-machine AllReduce and the
ReduceScatter-AllReduce-AllGather program (ring and tree), each from a fresh
simulator (no reuse), and prints the wall time of each, topology build included
in its own line.
"""

from __future__ import annotations

import sys
import time

from p2sim.hierarchy import Lowering
from p2sim.placement import Placement
from p2sim.program import parse_program
from p2sim.sim import Simulator
from p2sim.topology import load_system

PROGRAMS = {
    "allreduce": "AllReduce(slice=0, Inside)",
    "rs-ar-ag": "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)",
}


def main() -> int:
    t = time.perf_counter()
    topo = load_system("a100", nodes=64)
    print(f"topology a100 nodes=64 devices={topo.devices} links={len(topo.edges)} "
          f"build_seconds={time.perf_counter() - t:.3f}")
    lw = Lowering.of(Placement.of(topo.hierarchy, [topo.devices], [[64, 16]]), [0])
    nbytes = 2**29 * 64 * 4
    for algo in ("ring", "tree"):
        for name, text in PROGRAMS.items():
            t = time.perf_counter()
            r = Simulator(topo, algo, "des").simulate(lw, parse_program(text), nbytes)
            wall = time.perf_counter() - t
            print(f"{name} algo={algo} predicted_seconds={r.total_seconds:.3f} wall_seconds={wall:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
