"""Scale: 1024 GPUs as 64 nodes x 16 A100 (one NIC each) and as 128 nodes x 8 H100 (8 NICs each).

Simulates, with the event-driven model, the full-machine AllReduce and the
ReduceScatter-AllReduce-AllGather program (ring, tree and NCCL's automatic choice),
each from a fresh simulator (no reuse), and prints the wall time of each, topology
build in its own line.  On the H100 system every collective runs 16 channels over 8
NICs per node: 2048 channel flows for one full-machine ring.
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


def run(system: str, nodes: int, gpus: int, algos: tuple[str, ...]) -> None:
    t = time.perf_counter()
    topo = load_system(system, nodes=nodes)
    print(f"topology {system} nodes={nodes} devices={topo.devices} links={len(topo.edges)} "
          f"build_seconds={time.perf_counter() - t:.3f}")
    lw = Lowering.of(Placement.of(topo.hierarchy, [topo.devices], [[nodes, gpus]]), [0])
    nbytes = 2**29 * nodes * 4
    for algo in algos:
        for name, text in PROGRAMS.items():
            t = time.perf_counter()
            r = Simulator(topo, algo, "des").simulate(lw, parse_program(text), nbytes)
            wall = time.perf_counter() - t
            ran = ",".join(s.algo for s in r.steps)
            print(f"{system} {name} algo={algo} ran={ran} predicted_seconds={r.total_seconds:.3f} "
                  f"wall_seconds={wall:.3f}")


def main() -> int:
    run("a100", 64, 16, ("ring", "tree"))
    run("h100", 128, 8, ("ring", "tree", "auto"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
