"""Simulate every program of every matrix of P2's appendix configurations, ring and tree.

For each row of validation/program_counts.csv, on the matching A100 or V100
system with that node count, every program (paper profile) of every matrix is
simulated with the event-driven model, once with ring and once with tree, at P2's
buffer of 2^29 x nodes float32 per GPU.  Last line (wall and CPU seconds of this
process after its imports: the CPU figure is the steadier one on a loaded machine):

    simulations=N seconds=S cpu_seconds=C
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from p2sim.sim import SimSettings, SimulationContext, Simulator
from p2sim.formalism.synthesis import Profile, synthesize_placements
from p2sim.topology import load_system

from _measure import print_usage  # benchmarks/_measure.py, beside this script

COUNTS = Path(__file__).resolve().parents[1] / "validation" / "program_counts.csv"


def main() -> int:
    with COUNTS.open(newline="") as f:
        rows = list(csv.DictReader(f))
    sims = 0
    start = time.perf_counter()
    cpu = time.process_time()
    topologies = {}
    for row in rows:
        key = (row["gpu"].lower(), int(row["nodes"]))
        if key not in topologies:  # one context per system, as the studies keep one: shared step results
            topologies[key] = SimulationContext(load_system(key[0], nodes=key[1]))
        ctx = topologies[key]
        topo = ctx.topo
        axes = tuple(int(x) for x in row["axes"].split())
        red = tuple(int(x) for x in row["reduce_axes"].split())
        s = synthesize_placements(topo.hierarchy, axes, red, Profile.PAPER)
        nbytes = 2**29 * key[1] * 4
        t0 = time.perf_counter()
        for algo in ("ring", "tree"):
            sim = Simulator(topo, SimSettings(algo, engine="des"), context=ctx)
            for mp in s.matrices:
                for p in mp.programs:
                    sim.simulate(mp.lowering, p, nbytes)
                    sims += 1
        print(f"{row['gpu']} nodes={key[1]} axes={axes} reduce={red} programs={s.total_programs} "
              f"seconds={time.perf_counter() - t0:.3f}")
    print(f"simulations={sims} seconds={time.perf_counter() - start:.3f} cpu_seconds={time.process_time() - cpu:.3f}")
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
