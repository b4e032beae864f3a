"""Executors: per-task overhead and a sweep's wall time, serial against process pool against Dask.

Prints, for each executor: the time to start it; the overhead per task (wall time of
mapping a function that returns at once over many items, divided by the count) with
an integer and with a real sweep task as the payload; and the wall time of one
``rank`` sweep.  Dask runs on ``local:N`` (a LocalCluster of N single-threaded worker
processes on this machine), as ``--scheduler local:N`` does.

Usage: python benchmarks/executors.py [--workers N] [--tasks N]
"""

from __future__ import annotations

import argparse
import time

from p2sim.studies.executor import make_executor, run_all
from p2sim.studies.ranking import rank_tasks, split_by_matrix
from p2sim.studies.requests import Settings
from p2sim.studies.config_task import ConfigTask
from p2sim.util.errors import InputError
from p2sim.formalism.placement import enumerate_matrices
from p2sim.topology import load_system

from _measure import print_usage  # benchmarks/_measure.py, beside this script

# the sweep: every program of every matrix of axes (8, 4, 4) reducing axes 0 and 1 on
# P2's PCIe system with 16 servers (128 GPUs, four-level hierarchy), ring and tree --
# one task per (matrix, algorithm), as p2sim rank splits it
SYSTEM, NODES, AXES, REDUCE = "p2-16gpu", 16, (8, 4, 4), (0, 1)


def identity(x):
    return x


def sweep_tasks() -> list[ConfigTask]:
    topo = load_system(SYSTEM, NODES)
    mats = enumerate_matrices(topo.hierarchy, AXES)
    tasks = []
    for algo in ("ring", "tree"):
        base = ConfigTask(spec=topo.spec, nodes=topo.nodes, axes=AXES, reduce_axes=REDUCE, bytes_per_gpu=2.0**30,
                         settings=Settings(algo=algo))
        tasks += split_by_matrix(base, mats)
    return tasks


def measure(label: str, workers: int | None, scheduler: str | None, n: int, tasks: list[ConfigTask]) -> None:
    t0 = time.perf_counter()
    with make_executor(workers, scheduler) as ex:
        started = time.perf_counter()
        list(ex.map(identity, range(8)))  # warm the workers up
        t1 = time.perf_counter()
        run_all(ex, identity, list(range(n)))
        t2 = time.perf_counter()
        payload = (tasks * (n // len(tasks) + 1))[:n]
        run_all(ex, identity, payload)
        t3 = time.perf_counter()
        ranking = rank_tasks(tasks, ex)
        t4 = time.perf_counter()
    print(f"{label:<16} start {started - t0:6.2f} s   overhead/task {1e6 * (t2 - t1) / n:8.1f} us (int), "
          f"{1e6 * (t3 - t2) / n:8.1f} us (sweep task)   sweep {t4 - t3:6.2f} s "
          f"({len(tasks)} tasks, {len(ranking.entries)} simulations, best {ranking.entries[0].seconds:.6f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="pool processes and Dask local workers (default 2)")
    ap.add_argument("--tasks", type=int, default=2000, help="tasks for the overhead figures (default 2000)")
    a = ap.parse_args()
    tasks = sweep_tasks()
    print(f"sweep: {SYSTEM} x {NODES} nodes, axes {list(AXES)} reduce {list(REDUCE)}, ring and tree; "
          f"{a.workers} workers; {a.tasks} tasks for the overheads")
    measure("serial", 1, None, a.tasks, tasks)
    measure(f"pool ({a.workers})", a.workers, None, a.tasks, tasks)
    try:
        measure(f"dask local:{a.workers}", None, f"local:{a.workers}", a.tasks, tasks)
    except InputError as e:  # Dask is an optional extra
        print(f"dask local:{a.workers}     not measured: {e}")


if __name__ == "__main__":
    main()
    print_usage()  # CPU seconds, peak memory and the load, for figures that reproduce
