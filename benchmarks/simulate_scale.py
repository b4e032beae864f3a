"""Scale: full-machine AllReduce and ReduceScatter-AllReduce-AllGather on 1024, 4096 and 16,384 GPUs.

The A100 system (16 GPUs and one NIC per node) with 64, 256 and 1024 nodes, and the H100
system (8 GPUs and 8 NICs per node, rail-optimised) with 128, 512 and 2048 nodes; ring and
tree (and NCCL's automatic choice on 1024 GPUs).  Every case runs in a fresh process: it
builds the topology (its own figure), then simulates the program with the event-driven
model from nothing cached -- routes, ring patterns, NCCL's choice, the flows -- so the
simulation figure includes the cold expansion.  Per case one line:

    SYSTEM PROGRAM gpus=G algo=A ran=.. predicted_seconds=P topology_seconds=T cpu_seconds=C wall_seconds=W peak_mib=M

``cpu_seconds`` and ``wall_seconds`` are the simulation's (``process_time`` and
``perf_counter``); ``peak_mib`` is the process's peak resident memory
(``resource.getrusage``), about 100 MiB of it the interpreter with numpy, scipy,
networkx and SimPy imported.  ``--gpus 1024,4096`` picks sizes.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

from _measure import print_usage  # benchmarks/_measure.py, beside this script

PROGRAMS = {
    "allreduce": "AllReduce(slice=0, Inside)",
    "rs-ar-ag": "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)",
}
SYSTEMS = {"a100": 16, "h100": 8}  # GPUs per node


def case(system: str, nodes: int, algo: str, name: str) -> None:
    from p2sim.formalism.hierarchy import Lowering
    from p2sim.formalism.placement import Placement
    from p2sim.formalism.program import parse_program
    from p2sim.sim import SimSettings, Simulator
    from p2sim.topology import load_system

    t = time.perf_counter()
    topo = load_system(system, nodes=nodes)
    build = time.perf_counter() - t
    lw = Lowering.of(Placement.of(topo.hierarchy, [topo.devices], [[nodes, SYSTEMS[system]]]), [0])
    program = parse_program(PROGRAMS[name])
    cpu, wall = time.process_time(), time.perf_counter()
    r = Simulator(topo, SimSettings(algo, engine="des")).simulate(lw, program, 2**29 * nodes * 4)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"{system} {name} gpus={topo.devices} algo={algo} ran={','.join(s.algo for s in r.steps)} "
          f"predicted_seconds={r.total_seconds:.6g} topology_seconds={build:.3f} cpu_seconds={cpu:.3f} "
          f"wall_seconds={wall:.3f} peak_mib={peak:.0f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="1024,4096,16384")
    ap.add_argument("--case", nargs=4, metavar=("SYSTEM", "NODES", "ALGO", "PROGRAM"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        case(args.case[0], int(args.case[1]), args.case[2], args.case[3])
        return 0
    for gpus in (int(g) for g in args.gpus.split(",")):
        for system, per in SYSTEMS.items():
            algos = ("ring", "tree", "auto") if gpus <= 1024 else ("ring", "tree")
            for algo in algos:
                for name in PROGRAMS:
                    run = subprocess.run([sys.executable, __file__, "--case", system, str(gpus // per), algo, name],
                                         capture_output=True, text=True)
                    if run.returncode:
                        sys.stderr.write(run.stderr)
                        return run.returncode
                    print(run.stdout, end="", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
