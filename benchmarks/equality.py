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
``simulate_scale.py``; and single collectives of 4096 and 16384 GPUs.  ``--fabric`` (issue 34)
adds the fabric systems -- superpod-h100, roce-h100 (ECMP, 2:1), gb200-nvl72-pod at a few node
counts -- through ``rank`` (every simulated program, ``auto``
and ``both``), ``whatif`` (rates, oversubscription, routing) and ``plan``.
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
from p2sim.sim import SimSettings, SimulationContext, Simulator
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
            sim = Simulator(topo, SimSettings(algo, engine="des"), context=ctx)
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
                sim = Simulator(topo, SimSettings(algo, engine="des"), context=ctx)
                r = sim.simulate(lw, parse_program(text), 2**29 * nodes * 4)
                out[f"scale {system} {nodes} {algo} {name}"] = _program(r)


# (system, nodes, axes, reduce, algo): rank's every simulated (matrix, algorithm, program)
FABRIC_RANKS = [
    ("superpod-h100", 64, "data=16,pipeline=4,tensor=8", "data", "auto"),
    ("superpod-h100", 64, "data=64,tensor=8", "data", "both"),
    ("roce-h100", 24, "data=6,pipeline=4,tensor=8", "data", "auto"),
    ("gb200-nvl72-pod", 16, "data=32,pipeline=4,tensor=9", "data", "auto"),
]
# (system, nodes, axes, reduce, vary)
FABRIC_WHATIFS = [
    ("superpod-h100", 64, "data=32,pipeline=4,tensor=4", "data", ("leaf.oversubscription=1,2,4",)),
    ("roce-h100", 16, "data=4,pipeline=4,tensor=8", "data", ("routing=ecmp,adaptive", "nic.bandwidth=25,50")),
]


def fabric(out: dict) -> None:
    """The fabric systems through the studies, as a user runs them (issue 34)."""
    from p2sim.studies.plan import PlanRequest, run_plan
    from p2sim.studies.rank import RankRequest, run_rank
    from p2sim.studies.whatif import WhatifRequest, run_whatif

    gib = 4 * 2**30
    for system, nodes, axes, red, algo in FABRIC_RANKS:
        t = time.process_time()
        res = run_rank(RankRequest.build(system=system, nodes=nodes, axes=axes, reduce=red, bytes=gib, algo=algo,
                                         workers=1, yes=True))
        for e in res.ranking.entries:
            key = f"fabric rank {system} {nodes} {axes} {red} {algo} {e.matrix} {e.algo} {e.timing.text}"
            out[key] = {"total": e.timing.seconds,
                        "steps": [[s.op, s.seconds, s.groups, s.group_size, s.nodes_spanned, s.buffer_bytes,
                                   [list(c) for c in s.choices]] for s in e.timing.steps]}
        print(f"rank {system} {nodes} {axes} {algo}: {time.process_time() - t:.1f} CPU s", file=sys.stderr)
    for system, nodes, axes, red, vary in FABRIC_WHATIFS:
        res = run_whatif(WhatifRequest.build(system=system, nodes=nodes, axes=axes, reduce=red, vary=vary, bytes=gib,
                                             workers=1, yes=True))
        for row in res.rows:
            for m in row["best_per_matrix"]:
                key = f"fabric whatif {system} {nodes} {axes} {row['label']} {m['matrix']} {m['algo']}"
                out[key] = {"total": m["best_seconds"],
                            "steps": [["allreduce", m["allreduce_seconds"], m["programs"], 0, 0, 0.0, []]]}
            out[f"fabric whatif {system} {nodes} {axes} {row['label']} winner"] = {
                "total": row["seconds"], "steps": [[row["program"], 0.0, 0, 0, 0, 0.0, [[str(row["matrix"]), row["algo"]]]]]}
    res = run_plan(PlanRequest.build(system="superpod-h100", nodes=64, axes="data=16,pipeline=4,tensor=8",
                                     reductions=["data:1GiB", "tensor:64MiB x 16", "pipeline:16MiB x 4"],
                                     data_axis="data", workers=1, yes=True))
    for plan in res.plans:
        out[f"fabric plan superpod-h100 64 {plan.matrix}"] = {"total": plan.total_seconds, "steps": [
            [c.reduction.label, c.seconds, c.reduction.count, 0, 0, c.allreduce_seconds, [[c.program, c.algo]]] for c in plan.choices]}


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
    ap.add_argument("--fabric", action="store_true", help="also the fabric systems through rank, whatif and plan")
    ap.add_argument("--only-fabric", action="store_true", help="only the fabric cases")
    args = ap.parse_args()
    out: dict = {}
    t = time.perf_counter()
    if not args.only_fabric:
        sweeps(out)
        appendix(out)
        scale(out, args.big)
    if args.fabric or args.only_fabric:
        fabric(out)
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
