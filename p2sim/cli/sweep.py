"""``p2sim sweep``: one collective over a range of sizes, in nccl-tests' layout."""

from __future__ import annotations

import argparse
import sys

from ..studies.size_sweep import sizes, sweep_sizes
from ..collectives import check_algo, check_proto
from ..util.errors import InputError
from ..util.fileio import check_output_dir
from ..util.parsing import byte_size, positive_int
from ..sim.model import check_model
from .common import emit, topology

__all__ = ["cmd_sweep", "COLLECTIVE_NAMES"]

# nccl-tests' binary names and p2sim's collective names
COLLECTIVE_NAMES = {"allreduce": "AllReduce", "all_reduce": "AllReduce", "reducescatter": "ReduceScatter",
                    "reduce_scatter": "ReduceScatter", "allgather": "AllGather", "all_gather": "AllGather",
                    "broadcast": "Broadcast", "reduce": "Reduce"}


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..report.files import write_report
    from ..report.size_sweep import sweep_plot, sweep_table

    if args.out:
        check_output_dir(args.out, "out")
    topo = topology(args)
    coll = COLLECTIVE_NAMES.get(args.collective.lower().replace("-", "_").removesuffix("_perf"))
    if coll is None:
        raise InputError(f"collective: {args.collective!r} is not one of AllReduce, ReduceScatter, AllGather, "
                         "Broadcast, Reduce")
    gpn = topo.gpus_per_node if args.gpus_per_node is None else positive_int(args.gpus_per_node, "gpus-per-node")
    if gpn > topo.gpus_per_node:
        raise InputError(f"gpus-per-node: {gpn} is more than {topo.spec.name}'s {topo.gpus_per_node}")
    members = [n * topo.gpus_per_node + g for n in range(topo.node_count) for g in range(gpn)]
    algo, proto, model = check_algo(args.algo), check_proto(args.proto), check_model(args.model)
    if model == "baseline":
        raise InputError("model: the baseline has no protocols or algorithm choice to sweep; use des or analytic")
    pts = sweep_sizes(topo, coll, members, sizes(byte_size(args.minbytes, "minbytes"),
                                                 byte_size(args.maxbytes, "maxbytes"),
                                                 positive_int(args.stepfactor, "stepfactor")), algo, proto, model)
    header = (f"{topo.spec.name}, {topo.node_count} node(s) x {gpn} GPUs, {coll}; algo {algo}, proto {proto}, "
              f"{model} model (predicted)")
    if args.json:
        emit({"system": topo.spec.name, "nodes": topo.node_count, "gpus_per_node": gpn, "collective": coll,
              "algo": algo, "proto": proto, "model": model, "points": [p.to_json() for p in pts]})
    else:
        print(sweep_table(header, coll, pts))
    if args.out:
        sys.stdout.flush()  # the table stands even if the report cannot be written
        files = write_report(args.out, {"sweep.png": sweep_plot(header, pts),
                                        "sweep.txt": (sweep_table(header, coll, pts) + "\n").encode()})
        if not args.json:
            print(f"\nreport: {', '.join(str(w) for w in files)}")
    return 0
