"""Scaling of the fluid engine with the number of distinct flows, beside SimGrid's.

Scenario (seeded, so the same flows every run): a rail-optimised cluster of 64 nodes of 8 GPUs
(A100-like numbers: 150 GB/s NVSwitch ports, 25 GB/s PCIe and NICs, 4 NICs per node on 4 rail
leaves joined by 4 spines, 100 GB/s leaf-spine links) -- 2,688 directed links.  Each flow is one
channel of a ring collective over a random group of 2 to 64 GPUs: the same 1 to 8 local GPUs on
each of 1 to 8 random nodes (as P2 lowers groups), its ring sorted by GPU index, loading every link of every hop of its ring (a link crossed twice counts twice), plus a
private 20 GB/s link: the per-channel ceiling that ``p2sim.sim.simulator`` appends.  Volumes
(1 MiB to 256 MiB) and start-up latencies (5 to 50 us) are drawn per flow, so flows join and
finish at distinct times.

For each flow count it prints p2sim's wall time for ``run_flows``; where SimGrid's Python
bindings import under ``--simgrid-python`` (default ``/usr/bin/python3``, e.g. Debian's
python3-simgrid), SimGrid's time on the same flows (``benchmarks/simgrid_flows.py``, its
``Engine.run`` only, platform building excluded) and the ratio p2sim / SimGrid, and the largest
relative difference of the flows' finish times between the two.  ``--reference N`` also runs the
previous dense engine (``tests/reference_engine.py``) up to N flows and prints the largest
relative difference of the finish times.

    python benchmarks/flows_scaling.py [--flows 100,200,500,1000,2000,5000] [--scenario rings,pairs,step]
                                       [--reference 500] [--simgrid-timeout 1200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _measure import print_usage  # benchmarks/_measure.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.reference_engine

from p2sim.sim.engine import FlowSpec, run_flows  # noqa: E402

NODES, GPUS, NICS, SPINES = 64, 8, 4, 4
# bytes/s: NVSwitch port 150 GB/s each way, PCIe 4.0 x16 and a 200 Gb/s NIC 25 GB/s each way
NVL, PCIE, NIC, CORE, CHANNEL = 150e9, 25e9, 25e9, 100e9, 20e9


class Cluster:
    """Link numbering of the benchmark cluster (directed links, one index each)."""

    def __init__(self) -> None:
        gpus = NODES * GPUS
        nics = NODES * NICS
        self.nvl_up = np.arange(gpus)
        self.nvl_down = self.nvl_up + gpus
        self.pcie_up = self.nvl_down + gpus
        self.pcie_down = self.pcie_up + gpus
        self.nic_up = 4 * gpus + np.arange(nics)
        self.nic_down = self.nic_up + nics
        base = 4 * gpus + 2 * nics
        self.core_up = base + np.arange(NICS * SPINES).reshape(NICS, SPINES)  # leaf (rail) -> spine
        self.core_down = self.core_up + NICS * SPINES  # spine -> leaf
        self.links = base + 2 * NICS * SPINES
        self.capacity = np.empty(self.links)
        self.capacity[:2 * gpus] = NVL
        self.capacity[2 * gpus:4 * gpus] = PCIE
        self.capacity[4 * gpus:base] = NIC
        self.capacity[base:] = CORE

    def hop(self, a: int, b: int, channel: int) -> list[int]:
        """Directed links from GPU a to GPU b (NCCL-like: NVSwitch inside, rail NICs across)."""
        na, nb = divmod(a, GPUS)[0], divmod(b, GPUS)[0]
        if na == nb:
            return [int(self.nvl_up[a]), int(self.nvl_down[b])]
        ra, rb = (a % GPUS // 2 + channel) % NICS, (b % GPUS // 2 + channel) % NICS
        out = [int(self.pcie_up[a]), int(self.nic_up[na * NICS + ra])]
        if ra != rb:  # across rails: through a spine chosen by the channel
            s = channel % SPINES
            out += [int(self.core_up[ra, s]), int(self.core_down[rb, s])]
        return out + [int(self.nic_down[nb * NICS + rb]), int(self.pcie_down[b])]


def scenario(n: int, seed: int = 0, kind: str = "rings") -> tuple[list[FlowSpec], np.ndarray]:
    """``n`` flows with private ceilings; returns (flows, capacity).

    ``rings``: each flow one channel of a ring over a random group; ``pairs``: each flow one
    point-to-point transfer between two random GPUs (one hop of a ring); ``step``: one program
    step of many concurrent groups, as a cross-node step runs them: ``n / 8`` rings of 8 channels,
    each over the same GPU of 8 random nodes, every channel the same share of one 256 MiB buffer
    with one start-up latency (so flows finish in large simultaneous batches).
    """
    cl = Cluster()
    rng = np.random.default_rng(seed)
    flows = []
    if kind == "step":
        for g in range(max(n // 8, 1)):
            nodes = np.sort(rng.choice(NODES, size=8, replace=False))
            local = int(rng.integers(GPUS))
            ring = (nodes * GPUS + local).tolist()
            for channel in range(8):
                load: dict[int, int] = {}
                for a, b in zip(ring, ring[1:] + ring[:1]):
                    for e in cl.hop(a, b, channel):
                        load[e] = load.get(e, 0) + 1
                load[cl.links + len(flows)] = 1  # the private per-channel ceiling
                edges = np.array(sorted(load), dtype=np.int64)
                flows.append(FlowSpec(edges, np.array([float(load[e]) for e in edges]), 2.0**28 / 8, 20e-6,
                                      f"group {g} channel {channel}"))
        return flows, np.concatenate([cl.capacity, np.full(len(flows), CHANNEL)])
    for j in range(n):
        if kind == "pairs":
            group = rng.choice(NODES * GPUS, size=2, replace=False)
            hops = [(int(group[0]), int(group[1]))]
        else:
            # a group as P2 lowers them: the same local GPUs on each of a few nodes, its ring
            # sorted by GPU index, so it leaves and enters each node once
            m = int(rng.choice([1, 2, 4, 8]))
            g = int(rng.choice([1, 2, 4, 8] if m > 1 else [2, 4, 8]))
            nodes = rng.choice(NODES, size=m, replace=False)
            local = rng.choice(GPUS, size=g, replace=False)
            group = np.sort((nodes[:, None] * GPUS + local[None, :]).ravel())
            hops = list(zip(group.tolist(), np.roll(group, -1).tolist()))
        channel = int(rng.integers(8))
        load: dict[int, int] = {}
        for a, b in hops:
            for e in cl.hop(int(a), int(b), channel):
                load[e] = load.get(e, 0) + 1
        load[cl.links + j] = 1  # the private per-channel ceiling
        edges = np.array(sorted(load), dtype=np.int64)
        coef = np.array([float(load[e]) for e in edges])
        volume = float(int(2.0 ** rng.uniform(20, 28)))
        latency = float(rng.uniform(5e-6, 50e-6))
        flows.append(FlowSpec(edges, coef, volume, latency, f"flow {j}"))
    capacity = np.concatenate([cl.capacity, np.full(n, CHANNEL)])
    return flows, capacity


def simgrid_times(flows: list[FlowSpec], capacity: np.ndarray, python: str, timeout: float) -> dict | None:
    """SimGrid's run on the same flows, or None when its bindings are not importable.

    ``{"timeout": seconds}`` when it ran longer than ``timeout`` seconds.
    """
    try:
        subprocess.run([python, "-c", "import simgrid"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    data = {"capacity": capacity.tolist(),
            "flows": [{"edges": f.edges.tolist(), "coef": [int(c) for c in f.coef],
                       "volume": int(f.volume), "latency": f.latency} for f in flows]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
        json.dump(data, tmp)
    try:
        out = subprocess.run([python, str(ROOT / "benchmarks" / "simgrid_flows.py"), tmp.name],
                             check=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    finally:
        Path(tmp.name).unlink()
    return json.loads(out.stdout.strip().splitlines()[-1])


def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.abs(b))) if len(b) else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", default="100,200,500,1000,2000,5000")
    ap.add_argument("--reference", type=int, default=0, help="run the previous dense engine up to N flows")
    ap.add_argument("--scenario", default="rings,pairs,step", help="rings, pairs, step (comma-separated)")
    ap.add_argument("--simgrid-python", default="/usr/bin/python3")
    ap.add_argument("--simgrid-timeout", type=float, default=1200.0, help="seconds before giving SimGrid up")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cl = Cluster()
    print(f"cluster: {NODES} nodes x {GPUS} GPUs, {cl.links} links (+1 private link per flow)")
    for kind, n in ((k, int(x)) for k in args.scenario.split(",") for x in args.flows.split(",")):
        flows, capacity = scenario(n, args.seed, kind)
        entries = sum(len(f.edges) for f in flows)
        t = time.perf_counter()
        makespan, records, _ = run_flows(flows, capacity)
        wall = time.perf_counter() - t
        ends = np.array([r.end for r in records])
        line = (f"{kind} flows={n} entries={entries} distinct_ends={len(np.unique(ends))} "
                f"makespan={makespan:.6f} p2sim_seconds={wall:.3f}")
        sg = simgrid_times(flows, capacity, args.simgrid_python, args.simgrid_timeout)
        if sg is not None and "timeout" in sg:
            line += f" simgrid_seconds>{sg['timeout']:.0f}"
        elif sg is not None:
            line += (f" simgrid_seconds={sg['run_seconds']:.3f} ratio={wall / sg['run_seconds']:.2f}"
                     f" vs_simgrid_rel={rel_diff(ends, np.array(sg['ends'])):.1e}")
        if n <= args.reference:
            from tests.reference_engine import run_flows as run_reference

            t = time.perf_counter()
            _, ref, _ = run_reference(flows, capacity)
            line += (f" reference_seconds={time.perf_counter() - t:.3f}"
                     f" vs_reference_rel={rel_diff(ends, np.array([r.end for r in ref])):.1e}")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
    sys.exit(code)
