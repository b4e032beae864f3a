"""Synthesize every configuration of P2's appendix (paper profile) and time it.

Prints one line per configuration, then three extra figures (a 3-level hierarchy of
64 devices, a reduction group of 256 devices, and the same appendix run with the
synthesis cache cleared before every configuration), and last:

    configurations=42 programs=N seconds=S

where S is the wall time of synthesizing all configurations in one process (the
process-wide cache of per-hierarchy results fills as it goes, as in real use).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from p2sim.formalism.hierarchy import SynthesisHierarchy
from p2sim.formalism.synthesis import Profile, synthesize, synthesize_placements

from _measure import print_usage  # benchmarks/_measure.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
COUNTS = ROOT / "validation" / "program_counts.csv"


def configurations() -> list[dict[str, str]]:
    with COUNTS.open(newline="") as f:
        return list(csv.DictReader(f))


def run_all(rows: list[dict[str, str]], clear_each: bool) -> tuple[int, float, list[str]]:
    lines, total = [], 0
    start = time.perf_counter()
    for row in rows:
        if clear_each:
            synthesize.cache_clear()
        h = (int(row["nodes"]), int(row["gpus_per_node"]))
        axes = tuple(int(x) for x in row["axes"].split())
        red = tuple(int(x) for x in row["reduce_axes"].split())
        s = synthesize_placements(h, axes, red, Profile.PAPER)
        total += s.total_programs
        ok = len(s.matrices) == int(row["matrices"]) and s.total_programs == int(row["programs_total"])
        lines.append(f"{row['gpu']} {h} axes={axes} reduce={red} matrices={len(s.matrices)} "
                     f"programs={s.total_programs} {'ok' if ok else 'MISMATCH'}")
    return total, time.perf_counter() - start, lines


def timed(hierarchy: list[int], profile: Profile) -> tuple[int, float]:
    synthesize.cache_clear()
    t = time.perf_counter()
    n = len(synthesize(SynthesisHierarchy.of(hierarchy), profile))
    return n, time.perf_counter() - t


def main() -> int:
    rows = configurations()
    synthesize.cache_clear()
    total, seconds, lines = run_all(rows, clear_each=False)
    print("\n".join(lines))
    _, cold, _ = run_all(rows, clear_each=True)
    for h in ([4, 4, 4], [2, 4, 8]):
        for prof in Profile:
            n, s = timed(h, prof)
            print(f"three-level {h} ({64} devices) profile={prof.value}: programs={n} seconds={s:.3f}")
    for prof in Profile:
        n, s = timed([16, 16], prof)
        print(f"reduction group of 256 devices [16, 16] profile={prof.value}: programs={n} seconds={s:.3f}")
    print(f"appendix with the cache cleared before every configuration: seconds={cold:.3f}")
    print(f"configurations={len(rows)} programs={total} seconds={seconds:.3f}")
    return 0 if all(line.endswith("ok") for line in lines) else 1


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
