"""Device states at scale: buffer sizes, validity checks and synthesis for large reduction groups.

Prints one line per figure:

* ``step_volumes`` of the full-machine AllReduce and of ReduceScatter-AllReduce-AllGather
  on one reduction group of 4096 and 16384 GPUs (256 / 1024 nodes of 16): wall seconds
  (best of 5) and peak traced memory;
* ``validate_program`` of the same programs (compact states, nothing synthesized);
* synthesis of a 1024-GPU group ``[4,16,16]`` and of ``[4,4,4,4]`` (paper and full), each
  in a fresh process: wall and CPU seconds and the process's peak resident memory;
* ``p2sim simulate --program`` (ReduceScatter-AllReduce-AllGather) on 16,384 A100 GPUs:
  the whole process's wall seconds and peak memory, then, from a cProfile run of the
  same command in this process, how its time splits.

Pass ``--no-simulate`` to skip the last (it depends on the simulator's speed).
"""

from __future__ import annotations

import cProfile
import pstats
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from p2sim.collectives import step_volumes
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program
from p2sim.formalism.synthesis import validate_program

from _measure import print_usage  # benchmarks/_measure.py, beside this script

PROGRAMS = {
    "AllReduce": "AllReduce(slice=0, Inside)",
    "RS-AR-AG": "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)",
}
SYNTH = """
import resource, sys, time
from p2sim.formalism.hierarchy import SynthesisHierarchy
from p2sim.formalism.synthesis import Profile, synthesize
levels, profile = [int(x) for x in sys.argv[1].split(",")], Profile(sys.argv[2])
t, c = time.perf_counter(), time.process_time()
n = len(synthesize(SynthesisHierarchy.of(levels), profile))
print(n, time.perf_counter() - t, time.process_time() - c, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def lowering(nodes: int) -> Lowering:
    lw = Lowering.of(Placement.of([nodes, 16], [nodes * 16], [[nodes, 16]]), [0])
    lw.table  # built once, outside the timings
    return lw


def best_of(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def volumes_and_checks() -> None:
    for nodes in (256, 1024):
        k = nodes * 16
        for name, text in PROGRAMS.items():
            prog = parse_program(text)
            # a fresh lowering each time (its memo would otherwise answer the repeats)
            fresh = [lowering(nodes) for _ in range(5)]
            seconds = min(best_of(lambda: step_volumes(lw, prog, 2.0**32), 1) for lw in fresh)
            lw = lowering(nodes)
            tracemalloc.start()
            step_volumes(lw, prog, 2.0**32)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"step_volumes {name:9s} k={k:5d}: seconds={seconds:.6f} "
                  f"traced_peak_MiB={peak / 2**20:.2f}")
        for name, text in PROGRAMS.items():
            prog = parse_program(text)
            lw = lowering(nodes)
            seconds = best_of(lambda: validate_program(lw.synthesis, prog))
            tracemalloc.start()
            validate_program(lw.synthesis, prog)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"validate_program {name:9s} k={k:5d}: seconds={seconds:.6f} traced_peak_MiB={peak / 2**20:.2f}")


def synthesis() -> None:
    for levels in ("4,16,16", "4,4,4,4"):
        for profile in ("paper", "full"):
            out = subprocess.run([sys.executable, "-c", SYNTH, levels, profile], capture_output=True, text=True,
                                 check=True).stdout.split()
            n, wall, cpu, rss = int(out[0]), float(out[1]), float(out[2]), int(out[3]) / 1024
            print(f"synthesis [{levels}] ({eval(levels.replace(',', '*'))} devices) profile={profile}: "
                  f"programs={n} wall_seconds={wall:.2f} cpu_seconds={cpu:.2f} process_peak_MiB={rss:.0f}")


def simulate_16k() -> None:
    argv = ["simulate", "--system", "a100", "--nodes", "1024", "--axes", "16384", "--reduce", "0",
            "--program", PROGRAMS["RS-AR-AG"]]
    cli = Path(sys.executable).with_name("p2sim")
    t = time.perf_counter()
    subprocess.run([str(cli), *argv], check=True, capture_output=True)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"p2sim simulate --program RS-AR-AG on 16384 A100 GPUs (1024 nodes): whole process wall_seconds={wall:.2f} "
          f"process_peak_MiB={rss:.0f}")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import p2sim.cli.main, p2sim.cli.simulate"], check=True)
    print(f"  interpreter start and imports (separate process): {time.perf_counter() - t:.2f} s")
    from p2sim.cli import main

    prof = cProfile.Profile()
    out = sys.stdout
    try:
        sys.stdout = open("/dev/null", "w")
        prof.runcall(main, argv)
    finally:
        sys.stdout.close()
        sys.stdout = out
    stats = pstats.Stats(prof)
    cum = {}
    for (path, _, name), (_, _, _, ct, _) in stats.stats.items():
        if "p2sim" in path:  # p2sim's function names are unique enough
            cum[name] = max(cum.get(name, 0.0), ct)
    total = cum.get("main", 0.0)
    parts = [
        ("topology (load_system)", "load_system"),
        ("matrices and lowering", "placement_lowerings"),
        ("parse program", "parse_program"),
        ("validity check (compact states)", "validate_program"),
        ("buffer sizes (row counts)", "step_volumes"),
        ("simulation (Simulator.simulate)", "simulate"),
    ]
    print(f"  profiled command (cProfile, in process): {total:.2f} s")
    for label, key in parts:
        print(f"    {label:34s} {cum.get(key, 0.0):8.3f} s")


def main() -> int:
    volumes_and_checks()
    synthesis()
    if "--no-simulate" not in sys.argv:
        simulate_16k()
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
