"""``python -m bench_nccl``: run programs on GPUs (or CPUs) and summarise logs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from p2sim.util.errors import InputError, P2SimError
from p2sim.util.parsing import byte_size, int_list, nccl_tests_size, positive_int
from p2sim.util.fileio import check_not_input, check_output_file, guarded_stdout
from p2sim.util.signals import answering_signals, ended_by, ending

from .env import Placement, from_environment
from .errors import STOPPED_BY_PEER, BenchError, PeerLost, Signalled
from .gpu import gpu_message, is_gpu_error, preflight
from .launch import LAUNCHED_VAR, launch_local
from .logfile import compare_lines, read_log, repeated_records, summary_lines

# the collectives by the names users type: p2sim's, nccl-tests' programs, and short forms
COLLECTIVE_NAMES = {alias: name for name, aliases in {
    "AllReduce": ("allreduce", "all_reduce", "all_reduce_perf", "ar"),
    "ReduceScatter": ("reducescatter", "reduce_scatter", "reduce_scatter_perf", "rs"),
    "AllGather": ("allgather", "all_gather", "all_gather_perf", "ag"),
    "Broadcast": ("broadcast", "broadcast_perf", "bcast"),
    "Reduce": ("reduce", "reduce_perf"),
}.items() for alias in (name.lower(), *aliases)}


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
    r.add_argument("--algo", default="ring", choices=["ring", "tree"],
                   help="ring: NCCL_ALGO=Ring; tree: AllReduce as a tree, the rest as rings (NCCL >= 2.19) "
                        "(default: ring)")
    r.add_argument("--bytes", default="256MiB", help="buffer per GPU (default: 256MiB)")
    r.add_argument("--warmup", default="3", help="warm-up iterations per program (default: 3)")
    r.add_argument("--iters", default="10", help="timed iterations per program (default: 10)")
    r.add_argument("--log", default="results.jsonl", help="JSON-lines log to append to (default: results.jsonl)")
    r.add_argument("--resume", action="store_true", help="skip (program, iteration) records already in the log")
    r.add_argument("--force", action="store_true", help="let --log name the --system file (refused otherwise)")
    r.add_argument("--backend", default="nccl", choices=["nccl", "numpy"],
                   help="nccl (GPUs) or numpy (CPU emulation with p2sim's numeric executor)")
    r.add_argument("--address", default="127.0.0.1",
                   help="loopback address the local launcher's store listens on (127.0.0.1, localhost or ::1); "
                        "ranks started by torchrun, mpirun or srun use P2SIM_BENCH_ADDR (default MASTER_ADDR)")
    r.add_argument("--timeout", default="300", help="seconds to wait for peers before giving up (default: 300)")
    r.add_argument("--max-records", default=None, help="stop after writing this many records (resume later)")
    r.add_argument("--profile", default="paper", help="synthesis rule profile (default: paper)")
    r.add_argument("--order", default="aligned", choices=["aligned", "p2"],
                   help="device order of a reduction group over several axes (default: aligned; p2: as P2/XLA)")
    r.add_argument("--inject-failure", default=None, metavar="RANK:RECORD", help=argparse.SUPPRESS)
    r.add_argument("--inject-slow", default=None, metavar="RANK:SECONDS", help=argparse.SUPPRESS)
    w = sub.add_parser("sweep", help="time one collective over a range of sizes (nccl-tests' table)",
                       description="Time one collective from --minbytes to --maxbytes like nccl-tests' "
                                   "all_reduce_perf and friends: out of place and in place, back-to-back calls "
                                   "between two CUDA events, checked against numpy; prints nccl-tests' table and "
                                   "logs one JSON record per size that p2sim validate reads. Started plainly, it "
                                   "launches --ranks processes (default: every GPU); under torchrun, mpirun or "
                                   "srun each process is one rank.")
    w.add_argument("--collective", "-C", default="AllReduce",
                   help="AllReduce, ReduceScatter, AllGather, Broadcast or Reduce (or all_reduce_perf, ...; "
                        "default: AllReduce)")
    w.add_argument("-b", "--minbytes", default="1KiB",
                   help="smallest size, as nccl-tests reads -b: a number with K, M or G, 1024-based, of which only "
                        "the first letter counts (1MB is 1 MiB) (default: 1KiB)")
    w.add_argument("-e", "--maxbytes", default="256MiB", help="largest size (default: 256MiB)")
    w.add_argument("-f", "--stepfactor", default="2", help="each size this many times the last, at least 2 (default: 2)")
    w.add_argument("-w", "--warmup", default="5", help="untimed calls per size (default: 5, as nccl-tests)")
    w.add_argument("-n", "--iters", default="20", help="timed calls per size (default: 20, as nccl-tests)")
    w.add_argument("-c", "--check", default="1", choices=["0", "1"], help="check the results (default: 1)")
    w.add_argument("--algo", default="auto", choices=["auto", "ring", "tree"],
                   help="auto: NCCL chooses; ring or tree: NCCL_ALGO (tree: AllReduce only) (default: auto)")
    w.add_argument("--ranks", default=None, help="processes to launch (default: the system's GPUs, else every GPU)")
    w.add_argument("--system", default=None, help="the p2sim system measured, recorded in the log (optional)")
    w.add_argument("--nodes", default=None, help="its node count (default: the system file's)")
    w.add_argument("--log", default="sweep.jsonl", help="JSON-lines log to append to (default: sweep.jsonl)")
    w.add_argument("--force", action="store_true", help="let --log name the --system file (refused otherwise)")
    w.add_argument("--backend", default="nccl", choices=["nccl", "numpy"],
                   help="nccl (GPUs) or numpy (CPU emulation with p2sim's numeric executor)")
    w.add_argument("--address", default="127.0.0.1", help=argparse.SUPPRESS)
    w.add_argument("--timeout", default="300", help="seconds to wait for peers before giving up (default: 300)")
    s = sub.add_parser("summary", help="summarise a log", description="One line per program (or sweep) of a log.")
    s.add_argument("log")
    c = sub.add_parser("compare", help="compare two sweep logs (e.g. numpy against nccl)",
                       description="Match two sweep logs row by row (collective, size, in place) and compare "
                                   "#wrong and the checksums of the results; exit 1 on any difference.")
    c.add_argument("log_a")
    c.add_argument("log_b")
    o = sub.add_parser("single", help="check the backend on one GPU: every collective, one rank",
                       description="Run the backend with one rank: its communicators (a one-rank commSplit where "
                                   "CuPy and NCCL have it), every collective as a program step and as sweep calls "
                                   "out of place and in place, each checked against numpy.")
    o.add_argument("--bytes", default="64MiB", help="buffer (default: 64MiB)")
    o.add_argument("--backend", default="nccl", choices=["nccl", "numpy"], help="nccl (default) or numpy")
    return parser


def config_of(args: argparse.Namespace):
    from p2sim.formalism.placement import parse_matrix

    from .runner import RunConfig

    fail = None
    if args.inject_failure:
        a, b = args.inject_failure.split(":")
        fail = (int(a), int(b))
    slow = None
    if args.inject_slow:
        a, b = args.inject_slow.split(":")
        slow = (int(a), float(b))
    return RunConfig(
        system=args.system,
        nodes=None if args.nodes is None else positive_int(args.nodes, "nodes"),
        axes=(), reduce_axes=int_list(args.reduce, "reduce"),
        matrix=None if args.matrix is None else parse_matrix(args.matrix),
        programs=args.programs, algo=args.algo, bytes=byte_size(args.bytes),
        warmup=int_list(args.warmup, "warmup")[0], iters=positive_int(args.iters, "iters"), log=args.log,
        resume=args.resume, backend=args.backend, timeout=float(positive_int(args.timeout, "timeout")),
        max_records=None if args.max_records is None else positive_int(args.max_records, "max-records"),
        inject_failure=fail, inject_slow=slow, profile=args.profile, order=args.order,
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
    placement: Placement | None = from_environment()
    if placement is None or placement.rank == 0:
        _check_log(cfg.log, topo.spec.source, args.force)
    if placement is None:
        _local_only(args.address)
        if cfg.backend == "nccl":
            preflight(topo.devices)  # F5: one message for a missing driver, GPUs or NCCL, before any rank starts
        code = launch_local(argv, topo.devices, args.address)
        if code == 0:
            print("\n".join(summary_lines(read_log(cfg.log))))
        return code
    _not_under_a_launcher(args.address)
    from .runner import run_rank

    return run_rank(cfg, placement)


def _check_log(path: str, system: str | None = None, force: bool = False) -> None:
    """Before any rank starts: the log can be written, is not the ``--system`` file (records appended to it
    would spoil it), and what it holds already is a readable log whose repeated records (a log pasted into
    itself) are said as p2sim validate says them, or refused where they disagree.  Ranks that the local
    launcher started leave the saying to it."""
    check_output_file(path, "log")
    if system is not None:
        check_not_input(path, [("--system", system)], "log", force)
    read_log(path)  # also what --resume reads back
    for line in repeated_records(path):
        if LAUNCHED_VAR not in os.environ:
            print(f"bench_nccl: warning: {line}", file=sys.stderr)


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _local_only(address: str) -> None:
    if address not in LOOPBACK:
        raise InputError("address: the local launcher serves on loopback only; across machines start the "
                         "ranks with torchrun, mpirun or srun (see bench_nccl/README.md)")


def _not_under_a_launcher(address: str) -> None:
    """A rank started by torchrun, mpirun or srun takes the store's address from the environment."""
    if address not in LOOPBACK:
        raise InputError(f"address: {address!r} is for the local launcher; ranks started by torchrun, mpirun or "
                         "srun meet at P2SIM_BENCH_ADDR (default MASTER_ADDR): set that instead")


def cmd_sweep(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from .sweep import SweepConfig, run_sweep_rank

    name = COLLECTIVE_NAMES.get(args.collective.lower())
    if name is None:
        raise InputError(f"collective: {args.collective!r} is not one of AllReduce, ReduceScatter, AllGather, "
                         "Broadcast, Reduce")
    if args.algo == "tree" and name != "AllReduce":
        raise InputError(f"algo: NCCL has a tree only for AllReduce, not {name}")
    # as nccl-tests' -b/-e (parsesize in src/common.cu): 1KB is 1024 bytes
    lo, hi = nccl_tests_size(args.minbytes, "minbytes"), nccl_tests_size(args.maxbytes, "maxbytes")
    if lo > hi:
        raise InputError(f"minbytes: {args.minbytes} is above maxbytes {args.maxbytes}")
    factor = positive_int(args.stepfactor, "stepfactor")
    if factor < 2:  # nccl-tests' -f 1 steps by -i bytes instead, which bench_nccl does not do; 1 would never advance
        raise InputError(f"stepfactor: {factor} must be at least 2 (each size is -f times the last; for one size "
                         "give -b and -e the same)")
    cfg = SweepConfig(collective=name, minbytes=lo, maxbytes=hi, factor=factor,
                      warmup=int_list(args.warmup, "warmup")[0], iters=positive_int(args.iters, "iters"),
                      check=args.check == "1", algo=args.algo, log=args.log, backend=args.backend,
                      timeout=float(positive_int(args.timeout, "timeout")), system=args.system,
                      nodes=None if args.nodes is None else positive_int(args.nodes, "nodes"))
    ranks = None if args.ranks is None else positive_int(args.ranks, "ranks")
    devices, source = None, None
    if cfg.system is not None:
        from p2sim.topology import load_system

        topo = load_system(cfg.system, cfg.nodes)
        devices, source = topo.devices, topo.spec.source
        if ranks is not None and ranks != devices:
            raise InputError(f"ranks: {ranks}, but system {cfg.system} has {devices} GPUs (one rank per GPU)")
    placement = from_environment()
    if placement is None or placement.rank == 0:
        _check_log(cfg.log, source, args.force)
    if placement is None:
        _local_only(args.address)
        ranks = ranks or devices
        if cfg.backend == "nccl":
            ranks = ranks or preflight().devices
            preflight(ranks)  # F5
        elif ranks is None:
            raise InputError("ranks: --backend numpy needs --ranks N (or --system)")
        return launch_local(argv, ranks, args.address)
    _not_under_a_launcher(args.address)
    if ranks is not None and ranks != placement.world:
        raise InputError(f"ranks: {ranks}, but the launcher started {placement.world} ranks")
    return run_sweep_rank(cfg, placement)


def _dispatch(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if args.command == "single":
        from .single import single_check

        if args.backend == "nccl":
            preflight(1)  # F5: the install/driver message, not a CUDA traceback
        lines = single_check(byte_size(args.bytes), args.backend)
        print("\n".join(lines))
        return 0 if all(line.endswith("PASS") for line in lines[1:]) else 1
    if args.command == "summary":
        records = read_log(args.log)
        if not records:
            raise BenchError(f"{args.log}: no records")
        print("\n".join(summary_lines(records)))
        return 0
    if args.command == "compare":
        lines, same = compare_lines(read_log(args.log_a), read_log(args.log_b), args.log_a, args.log_b)
        print("\n".join(lines))
        return 0 if same else 1
    if args.command == "sweep":
        return cmd_sweep(args, argv)
    return cmd_run(args, argv)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench_nccl``: Ctrl-C and ``SIGTERM`` end it in one line (exit 130 or 143), never a traceback;
    a rank that the local launcher started stops quietly (the launcher says it once, for every rank)."""
    with answering_signals():
        try:
            return _main(argv)
        except BaseException as e:
            how = ended_by(e)
            if how is None:
                raise
            ending()
            if not os.environ.get(LAUNCHED_VAR):
                print(f"bench_nccl: {how[0]}", file=sys.stderr)
            return how[1]


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        with guarded_stdout():  # a full disk behind stdout: one line, as for the log
            return _dispatch(args, argv)
    except P2SimError as e:
        print(f"bench_nccl: error: {e}", file=sys.stderr)
        if isinstance(e, PeerLost):
            return STOPPED_BY_PEER  # so the launcher blames the rank that failed first
        if isinstance(e, Signalled):
            return e.exit_status
        return 1 if isinstance(e, BenchError) else 2
    except BrokenPipeError:  # the reader of stdout left (| head): as p2sim, not an error
        return 0
    except Exception as e:  # noqa: BLE001
        if not is_gpu_error(e):
            raise
        # F5: a CUDA or NCCL failure is one line, not a traceback
        print(f"bench_nccl: error: {gpu_message(e)}", file=sys.stderr)
        return 1
