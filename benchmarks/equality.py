"""Every predicted number of a fixed set of cases, to check that a speed-up changed none of them.

``python benchmarks/equality.py --write FILE`` simulates the cases below and writes every
result (each program's total and each step's seconds and choices) as JSON;
``--check FILE`` simulates them again and compares with a file written before (for
example from the main branch): times must agree to ``--rtol`` (default 1e-9) relative,
choices exactly.  Last line:

    cases=N results=M max_rel_diff=D mismatches=K

The cases: every program of every matrix (``rank``'s sweep) on a100 and v100 with 2 and 4
nodes, h100, dgx-h100, dgx1-v100, p2-16gpu and p4d with 2 nodes, at P2's buffer and at
1 MiB (where LL and LL128 win), with NCCL's automatic choice, forced ring and tree, and
the analytic model; P2's appendix (6256 simulations, ring and tree); the 1024-GPU runs of
``simulate_scale.py``; and single collectives of 4096 and 16384 GPUs.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

from p2sim.studies.requests import Settings
from p2sim.studies.config_task import ConfigTask, run_task
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import parse_program
from p2sim.sim import SimulationContext, Simulator
from p2sim.formalism.synthesis import Profile, synthesize_placements
from p2sim.topology import load_system

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20

# (system, nodes, axes, reduce axes)
SWEEPS = [
    ("a100", 2, (4, 8), (0,)),
    ("a100", 2, (2, 16), (1,)),
    ("a100", 2, (8, 2, 2), (0, 2)),
    ("a100", 4, (8, 8), (0,)),
    ("a100", 4, (4, 2, 8), (0, 2)),
    ("v100", 2, (4, 4), (0,)),
    ("v100", 2, (2, 8), (1,)),
    ("v100", 4, (4, 8), (1,)),
    ("h100", 2, (4, 4), (0,)),
    ("h100", 2, (2, 8), (1,)),
    ("dgx-h100", 2, (4, 4), (0,)),
    ("dgx-h100", 2, (4, 2, 2), (0, 2)),
    ("dgx1-v100", 2, (4, 4), (1,)),
    ("p2-16gpu", 2, (4, 4), (0,)),
    ("p4d", 2, (2, 8), (0,)),
]

SCALE = {
    "allreduce": "AllReduce(slice=0, Inside)",
    "rs-ar-ag": "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)",
}


def _program(r) -> dict:
    return {"total": r.total_seconds,
            "steps": [[s.op, s.seconds, s.groups, s.group_size, s.nodes_spanned, s.buffer_bytes,
                       [list(c) for c in s.choices]] for s in r.steps]}


def sweeps(out: dict) -> None:
    for system, nodes, axes, red in SWEEPS:
        topo = load_system(system, nodes=nodes)
        ctx = SimulationContext(topo)  # as a study hands one context to the tasks of a system
        for nbytes in (2**29 * topo.node_count * 4, MiB):
            for algo, engine in (("auto", "des"), ("ring", "des"), ("tree", "des"), ("auto", "analytic")):
                task = ConfigTask(spec=topo.spec, nodes=nodes, axes=axes, reduce_axes=red, bytes_per_gpu=float(nbytes),
                                 settings=Settings(algo=algo, engine=engine))
                res = run_task(task, ctx)
                for p in res.programs:
                    key = f"sweep {system} {nodes} {axes} {red} {nbytes} {algo} {engine} {p.matrix} {p.text}"
                    out[key] = {"total": p.seconds,
                                "steps": [[s.op, s.seconds, s.groups, s.group_size, s.nodes_spanned, s.buffer_bytes,
                                           [list(c) for c in s.choices]] for s in p.steps]}


def appendix(out: dict) -> None:
    with (ROOT / "validation" / "program_counts.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    topos: dict = {}
    for row in rows:
        key = (row["gpu"].lower(), int(row["nodes"]))
        if key not in topos:
            topos[key] = SimulationContext(load_system(key[0], nodes=key[1]))
        ctx = topos[key]
        topo = ctx.topo
        axes = tuple(int(x) for x in row["axes"].split())
        red = tuple(int(x) for x in row["reduce_axes"].split())
        s = synthesize_placements(topo.hierarchy, axes, red, Profile.PAPER)
        for algo in ("ring", "tree"):
            sim = Simulator(topo, algo, "des", context=ctx)
            for mp in s.matrices:
                for p in mp.programs:
                    r = sim.simulate(mp.lowering, p, 2**29 * key[1] * 4)
                    out[f"appendix {key} {axes} {red} {algo} {mp.matrix} {p.text}"] = _program(r)


def scale(out: dict, big: bool) -> None:
    runs = [("a100", 64, 16, ("ring", "tree", "auto")), ("h100", 128, 8, ("ring", "tree", "auto"))]
    if big:
        runs += [("a100", 256, 16, ("ring", "tree")), ("h100", 512, 8, ("ring", "tree")),
                 ("a100", 1024, 16, ("ring", "tree")), ("h100", 2048, 8, ("ring", "tree"))]
    for system, nodes, gpus, algos in runs:
        topo = load_system(system, nodes=nodes)
        ctx = SimulationContext(topo)
        lw = Lowering.of(Placement.of(topo.hierarchy, [topo.devices], [[nodes, gpus]]), [0])
        for algo in algos:
            for name, text in SCALE.items():
                r = Simulator(topo, algo, "des", context=ctx).simulate(lw, parse_program(text), 2**29 * nodes * 4)
                out[f"scale {system} {nodes} {algo} {name}"] = _program(r)


def compare(ref: dict, new: dict, rtol: float) -> tuple[int, float, list[str]]:
    bad: list[str] = []
    worst = 0.0

    def close(a: float, b: float) -> bool:
        nonlocal worst
        if a == b:
            return True
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        d = abs(a - b) / max(abs(a), abs(b))
        worst = max(worst, d)
        return d <= rtol

    for k, v in ref.items():
        w = new.get(k)
        if w is None:
            bad.append(f"missing: {k}")
            continue
        ok = close(v["total"], w["total"]) and len(v["steps"]) == len(w["steps"])
        for s, t in zip(v["steps"], w["steps"]):
            ok = ok and s[0] == t[0] and close(s[1], t[1]) and s[2:5] == t[2:5] and close(s[5], t[5]) and s[6] == t[6]
        if not ok:
            bad.append(f"differs: {k}: {v} != {w}")
    bad += [f"extra: {k}" for k in new if k not in ref]
    return len(ref), worst, bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="FILE")
    g.add_argument("--check", metavar="FILE")
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--big", action="store_true", help="also 4096 and 16384 GPUs (slow before issue 15)")
    args = ap.parse_args()
    out: dict = {}
    t = time.perf_counter()
    sweeps(out)
    appendix(out)
    scale(out, args.big)
    print(f"simulated {len(out)} results in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    if args.write:
        Path(args.write).write_text(json.dumps(out, sort_keys=True))
        print(f"cases={len(out)} wrote {args.write}")
        return 0
    ref = json.loads(Path(args.check).read_text())
    n, worst, bad = compare(ref, out, args.rtol)
    for b in bad[:20]:
        print(b)
    print(f"cases={n} results={len(out)} max_rel_diff={worst:.3g} mismatches={len(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
