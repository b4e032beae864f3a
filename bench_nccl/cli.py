"""``python -m bench_nccl``: run programs on GPUs (or CPUs) and summarise logs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from p2sim.errors import P2SimError
from p2sim.parsing import byte_size, int_list, positive_int
from p2sim.placement import parse_matrix

from .env import Placement, from_environment
from .errors import BenchError
from .launch import launch_local
from .logfile import read_log, summary_lines
from .runner import RunConfig, run_rank


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m bench_nccl", description="Run p2sim's reduction programs with NCCL and log "
                     "their times (JSON lines that p2sim validate and p2sim calibrate read).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    r = sub.add_parser("run", help="run programs; starts one process per GPU unless a launcher already did",
                       description="Run every synthesized program (or one) of a configuration. Started plainly, "
                                   "it launches one process per GPU on this machine; under torchrun, mpirun or "
                                   "srun each process is one rank (RANK/WORLD_SIZE and friends).")
    r.add_argument("--system", default="a100", help="system name or .toml file (default: a100)")
    r.add_argument("--nodes", default=None, help="node count (default: the system file's)")
    r.add_argument("--axes", default=None, help="axis sizes (default: one axis over all GPUs)")
    r.add_argument("--reduce", default="0", help="reduction axes (default: 0)")
    r.add_argument("--matrix", default=None, help="only this matrix (default: every matrix)")
    r.add_argument("--programs", default="all", help="all, or one program in p2sim's text form (default: all)")
    r.add_argument("--algo", default="ring", choices=["ring", "tree"], help="NCCL_ALGO for the run (default: ring)")
    r.add_argument("--bytes", default="256MiB", help="buffer per GPU (default: 256MiB)")
    r.add_argument("--warmup", default="3", help="warm-up iterations per program (default: 3)")
    r.add_argument("--iters", default="10", help="timed iterations per program (default: 10)")
    r.add_argument("--log", default="results.jsonl", help="JSON-lines log to append to (default: results.jsonl)")
    r.add_argument("--resume", action="store_true", help="skip (program, iteration) records already in the log")
    r.add_argument("--backend", default="nccl", choices=["nccl", "numpy"],
                   help="nccl (GPUs) or numpy (CPU emulation with p2sim's numeric executor)")
    r.add_argument("--address", default="127.0.0.1",
                   help="address rank 0's store listens on (one machine: loopback; several: MASTER_ADDR)")
    r.add_argument("--timeout", default="300", help="seconds to wait for peers before giving up (default: 300)")
    r.add_argument("--max-records", default=None, help="stop after writing this many records (resume later)")
    r.add_argument("--profile", default="paper", help="synthesis rule profile (default: paper)")
    r.add_argument("--order", default="aligned", choices=["aligned", "p2"],
                   help="device order of a reduction group over several axes (default: aligned; p2: as P2/XLA)")
    r.add_argument("--inject-failure", default=None, metavar="RANK:RECORD", help=argparse.SUPPRESS)
    s = sub.add_parser("summary", help="summarise a log", description="One line per program of a log.")
    s.add_argument("log")
    o = sub.add_parser("single", help="check the five NCCL collectives on a machine with one GPU",
                       description="Run each collective on a one-rank NCCL communicator and check the results.")
    o.add_argument("--bytes", default="64MiB", help="buffer (default: 64MiB)")
    return parser


def config_of(args: argparse.Namespace) -> RunConfig:
    fail = None
    if args.inject_failure:
        a, b = args.inject_failure.split(":")
        fail = (int(a), int(b))
    return RunConfig(
        system=args.system,
        nodes=None if args.nodes is None else positive_int(args.nodes, "nodes"),
        axes=(), reduce_axes=int_list(args.reduce, "reduce"),
        matrix=None if args.matrix is None else parse_matrix(args.matrix),
        programs=args.programs, algo=args.algo, bytes=byte_size(args.bytes),
        warmup=int_list(args.warmup, "warmup")[0], iters=positive_int(args.iters, "iters"), log=args.log,
        resume=args.resume, backend=args.backend, timeout=float(positive_int(args.timeout, "timeout")),
        max_records=None if args.max_records is None else positive_int(args.max_records, "max-records"),
        inject_failure=fail, profile=args.profile, order=args.order,
    )


def cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from dataclasses import replace

    from p2sim.topology import load_system

    from .plan import plan_programs

    cfg = config_of(args)
    topo = load_system(cfg.system, cfg.nodes)
    axes = (topo.devices,) if args.axes is None else int_list(args.axes, "axes", minimum=1)
    cfg = replace(cfg, axes=tuple(axes))
    # the ranks plan the same way; planning here first rejects bad axes, reduction axes,
    # matrices and programs with one message before any process starts
    plan_programs(topo.hierarchy, cfg.axes, cfg.reduce_axes, cfg.matrix, cfg.programs, cfg.profile, cfg.order)
    if cfg.backend == "nccl":
        from .backends import CUPY_HELP

        try:
            import cupy  # noqa: F401
        except ImportError:
            raise BenchError(CUPY_HELP) from None
    placement: Placement | None = from_environment()
    if placement is None:
        if args.address not in ("127.0.0.1", "localhost", "::1"):
            raise BenchError("address: the local launcher serves on loopback only; across machines start the "
                             "ranks with torchrun, mpirun or srun (see bench_nccl/README.md)")
        code = launch_local(argv, topo.devices, args.address)
        if code == 0:
            print("\n".join(summary_lines(read_log(cfg.log))))
        return code
    return run_rank(cfg, placement)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "single":
            from .backends import single_gpu_check

            lines = single_gpu_check(byte_size(args.bytes))
            print("\n".join(lines))
            return 0 if all(line.endswith("PASS") for line in lines) else 1
        if args.command == "summary":
            records = read_log(args.log)
            if not records:
                raise BenchError(f"{args.log}: no records")
            print("\n".join(summary_lines(records)))
            return 0
        return cmd_run(args, argv)
    except P2SimError as e:
        print(f"bench_nccl: error: {e}", file=sys.stderr)
        return 1 if isinstance(e, BenchError) else 2
