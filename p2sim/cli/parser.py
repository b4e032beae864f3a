"""The ``p2sim`` command line's options: one subparser per command, defaults from :mod:`p2sim.options`.

Each option's destination is the name of
the :mod:`p2sim.api` parameter it sets (:func:`p2sim.cli.common.options`), its default read from
:mod:`p2sim.options` (the table the API's signatures read too).

Handlers are named, not imported (``"studies:cmd_rank"``), so that ``p2sim --help`` and a parse error
import nothing but this module.
"""

from __future__ import annotations

import argparse
import sys

from .. import options as o
from ..studies.jobsize import DEFAULT_BYTES_HELP, MAX_MATRICES, MAX_SIMULATIONS
from ..util.algorithms import ALGO_CHOICES, STUDY_CHOICES, choices_text
from ..util.version import __version__

__all__ = ["build_parser", "EXIT_INPUT"]

EXIT_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, not a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _print_message(self, message: str, file=None) -> None:  # type: ignore[no-untyped-def]
        # argparse drops a failed write silently, so --help to a full disk would exit 0: stdout's failure is
        # raised (p2sim.util.fileio.guarded_stdout makes it one line); stderr's stays argparse's business
        if message and file is sys.stdout:
            file.write(message)
        else:
            super()._print_message(message, file)


def _add_layout(p: argparse.ArgumentParser, reduce: bool = True, system: bool = False) -> None:
    if system:
        p.add_argument("--system", default=o.SYSTEM, help=f"system name or .toml file (default: {o.SYSTEM}; see p2sim systems)")
        p.add_argument("--nodes", default=None, help="node count (default: the system file's)")
    else:
        p.add_argument("--hierarchy", default=None, metavar="H0,H1,..",
                       help="level cardinalities, outermost first (default: 2,16 -- two nodes of 16 GPUs)")
        p.add_argument("--system", default=None, help="take the hierarchy from a system (name or .toml file)")
        p.add_argument("--nodes", default=None, help="node count of --system (default: the system file's)")
    p.add_argument("--axes", default=None, metavar="P0,P1,.. | NAME=P0,..",
                   help="parallelism axis sizes, optionally named (data=8,tensor=4,pipeline=2); their product must "
                        "equal the device count (default: one axis over all devices)")
    if reduce:
        p.add_argument("--reduce", default=o.REDUCE, metavar="R,..",
                       help=f"the reduction axes, by index or name (default: {o.REDUCE})")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="p2sim", description=(
        "Synthesize parallelism placements and reduction programs for hierarchical GPU systems."))
    parser.add_argument("--version", action="version", version=f"p2sim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("placements", help="enumerate the parallelism matrices of axes over a hierarchy",
                       description="Enumerate every parallelism matrix of the axes over the hierarchy.")
    _add_layout(p, reduce=False)
    _add_limits(p, simulations=False)
    p.set_defaults(func="formalism:cmd_placements")

    p = sub.add_parser("synth", help="synthesize every reduction program for every matrix",
                       description="Synthesize every valid reduction program (shortest first) for every "
                                   "parallelism matrix, or for the one given with --matrix.")
    _add_layout(p)
    p.add_argument("--matrix", default=None, help='only this matrix, e.g. "[[2 2] [2 8]]"')
    p.add_argument("--profile", default=o.PROFILE, help=f"rule profile: paper (P2's counts) or full (default: {o.PROFILE})")
    p.add_argument("--max-size", default=str(o.MAX_SIZE), help=f"longest program (default: {o.MAX_SIZE})")
    p.add_argument("--lower", action="store_true", help="with --json: include the global device groups of every step")
    _add_order(p)
    p.add_argument("--limit", default=str(o.LIMIT), help=f"programs shown per matrix in the table (0 = all; default {o.LIMIT})")
    _add_limits(p, simulations=False)
    p.set_defaults(func="formalism:cmd_synth")

    p = sub.add_parser("systems", help="list the known systems",
                       description="List the system files p2sim knows (topologies/ and $P2SIM_TOPOLOGIES).")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func="simulate:cmd_systems")

    p = sub.add_parser("topo", help="summarise a system's topology",
                       description="Summarise a system: devices, links by class, bisection bandwidth.")
    p.add_argument("system", help="system name or .toml file")
    p.add_argument("--nodes", default=None, help="node count (default: the system file's)")
    p.add_argument("--draw", default=None, metavar="FILE.png",
                   help="also write a picture of the graph (.png, .svg or .pdf)")
    _add_force(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func="simulate:cmd_topo")

    p = sub.add_parser("simulate", help="predict the time of programs on a system",
                       description="Simulate programs step by step on a system: every synthesized program "
                                   "(--program all) or one given in text form.")
    _add_layout(p, system=True)
    p.add_argument("--matrix", default=None, help='the parallelism matrix, e.g. "[[2 2] [2 8]]" (default: every matrix)')
    p.add_argument("--program", default=o.PROGRAM, help=f"a program in text form, or all (default: {o.PROGRAM})")
    _add_algo(p)
    p.add_argument("--proto", default=o.PROTO, help=f"NCCL protocol: auto, LL, LL128 or Simple (default: {o.PROTO})")
    p.add_argument("--bytes", default=None, help=f"buffer per GPU, e.g. 2GiB or 8B (default: {DEFAULT_BYTES_HELP})")
    _add_engine(p, "des (contention-aware), analytic (NCCL's tuning model, no contention) or baseline "
                   "(link-bottleneck formulas)")
    p.add_argument("--profile", default=o.PROFILE, help=f"rule profile for --program all (default: {o.PROFILE})")
    p.add_argument("--max-size", default=str(o.MAX_SIZE), help=f"longest program (default: {o.MAX_SIZE})")
    p.add_argument("--trace", default=None, metavar="FILE.json",
                   help="write a Chrome trace of flows on links (its directory must exist)")
    _add_limits(p)
    _add_order(p)
    _add_csv(p)
    p.set_defaults(func="simulate:cmd_simulate")

    p = sub.add_parser("sweep", help="one collective over a range of sizes, like nccl-tests",
                       description="Predict one collective over sizes from -b to -e by factor -f on a system's GPUs, "
                                   "printed in nccl-tests' columns with the algorithm and protocol NCCL would pick.")
    p.add_argument("--system", default=o.SYSTEM, help=f"system name or .toml file (default: {o.SYSTEM}; see p2sim systems)")
    p.add_argument("--nodes", default=None, help="node count (default: the system file's)")
    p.add_argument("-g", "--gpus-per-node", default=None,
                   help="GPUs of each node taking part, the first ones (nccl-tests' -g with one process per node; "
                        "default: all)")
    p.add_argument("-C", "--collective", default=o.COLLECTIVE,
                   help="AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AllToAll or SendRecv (or nccl-tests' "
                        "names; "
                        f"default: {o.COLLECTIVE})")
    p.add_argument("-b", "--minbytes", default=o.MINBYTES,
                   help="smallest size, read as nccl-tests reads -b: bytes, or a number with K, M or G, "
                        f"1024-based, of which only the first letter counts (1K, 1MB is 1 MiB, 2GiB) (default: {o.MINBYTES})")
    p.add_argument("-e", "--maxbytes", default=o.MAXBYTES, help=f"largest size, as -b (default: {o.MAXBYTES})")
    p.add_argument("-f", "--stepfactor", default=o.STEPFACTOR, help=f"size factor between points (default: {o.STEPFACTOR})")
    _add_algo(p)
    p.add_argument("--proto", default=o.PROTO, help=f"auto, LL, LL128 or Simple (default: {o.PROTO})")
    _add_engine(p, "des or analytic")
    p.add_argument("--yes", action="store_true",
                   help="run however large the sweep (its estimated CPU time and memory are limited as rank's; an "
                        "AllToAll builds every pair of ranks at every size)")
    p.add_argument("--out", default=None, metavar="DIR", help="write sweep.txt, the pages sweep.html and sweep.md and the plot sweep.png into DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--emit", default=None, metavar="nccl-tuner",
                   help="print NCCL example-tuner rules for the sizes where p2sim predicts a faster "
                        "algorithm/protocol than NCCL's own, instead of the table")
    _add_csv(p)
    p.set_defaults(func="sweep:cmd_sweep")

    p = sub.add_parser("rank", help="rank every (matrix, program) by predicted time",
                       description="Rank every program of every parallelism matrix and print the top K, "
                                   "with speedups over each matrix's single AllReduce (with the des engine, only "
                                   "the programs whose lower bound can still win are simulated: same answer). "
                                   "Only the reduction over --reduce is optimised: the other axes' traffic is not "
                                   "counted (p2sim plan weighs every reduction of a training step; p2sim plan "
                                   "--model every collective of a model's step).")
    _add_layout(p, system=True)
    _add_model(p, "refused here, pointing to p2sim plan --model: a model's whole step is plan's question",
               refused=True)
    p.add_argument("--matrix", default=None, help="only this matrix (default: every matrix)")
    p.add_argument("--bytes", default=None, help=f"buffer per GPU (default: {DEFAULT_BYTES_HELP})")
    p.add_argument("--top", default=str(o.TOP), help=f"how many to show (default: {o.TOP})")
    p.add_argument("--out", default=None, metavar="DIR", help="write report.md, report.html and plots into DIR")
    p.add_argument("--compare-orders", action="store_true",
                   help="also give each matrix's best program under both device orders and the aligned one's gain")
    _add_emit(p)
    _add_settings_options(p)
    _add_search_options(p)
    _add_csv(p)
    p.set_defaults(func="studies:cmd_rank")

    p = sub.add_parser("plan", help="rank placements by a whole training step's communication",
                       description="Rank parallelism matrices by the total predicted time of a training step: "
                                   "every collective of a --model's step, or the --reduction values given (each "
                                   "reduction with its best program), against the default placement and plain "
                                   "AllReduce. With --model and --axes, by the step's time as p2sim step computes "
                                   "it (compute, bubble, exposed communication, optimizer), the communication "
                                   "beside it.")
    _add_layout(p, reduce=False, system=True)
    p.add_argument("--reduction", action="append", default=[], metavar='"AXES:SIZE[ x COUNT]"',
                   help='a reduction of the step, e.g. "0:4GiB" or "1:512MiB x 24" (repeatable; refused with '
                        "--model, whose step p2sim step times: an added reduction is not part of it)")
    _add_model(p, "every collective of its step is charged")
    p.add_argument("--data-axis", default=None,
                   help="the data-parallel axis, by index or name, placed outermost by the default placement "
                        "(default: the axis named data, dp, ddp or fsdp, else the first)")
    p.add_argument("--top", default=None, metavar="K",
                   help="with --model and no --axes (the configuration search): the K fastest configurations "
                        "printed, each with why it loses to the best (default: 5)")
    p.add_argument("--compare", default=None, metavar="AXES,vp=..,mbs=..",
                   help="with --model and no --axes: a configuration to place beside the search's pick, e.g. "
                        "tensor=8,pipeline=16,data=64,vp=8,mbs=1[,recompute=full] (default recompute: the least "
                        "that fits)")
    p.add_argument("--out", default=None, metavar="DIR", help="write plan.md and plan.html into DIR")
    _add_emit(p)
    _add_settings_options(p)
    _add_search_options(p)
    _add_csv(p)
    p.set_defaults(func="studies:cmd_plan")

    p = sub.add_parser("step", help="one training configuration's step time, throughput and memory",
                       description="Predict one training configuration's step: its time by part (compute, pipeline "
                                   "bubble, exposed communication by axis, optimizer), tokens/s and model TFLOP/s per "
                                   "GPU, MFU and memory per GPU; a configuration that does not fit the GPU's memory "
                                   "is refused.")
    p.add_argument("--model", required=True, metavar="NAME|FILE",
                   help="a preset (llama3-8b, llama3-70b, llama3-405b, deepseek-v3, gpt-oss-120b, qwen3-30b-a3b, "
                        "qwen3-235b-a22b, ...), a Hugging Face config.json or a TOML of its fields")
    p.add_argument("--system", default=o.SYSTEM, help=f"system name or .toml file (default: {o.SYSTEM})")
    p.add_argument("--nodes", default=None, help="node count (the job on all their GPUs; default: the system file's)")
    p.add_argument("--gpus", default=None, help="GPU count, on part of the system's nodes (64 of a 72-GPU rack)")
    p.add_argument("--axes", required=True, metavar="NAME=SIZE,..",
                   help="tensor, pipeline, context, expert and data sizes (their product the job's GPUs; data is "
                        "Megatron-LM's data-parallel size over expert), e.g. tensor=4,pipeline=8,data=2")
    p.add_argument("--train", default=None, metavar="KEY=V,..",
                   help="seq, micro_batch, global_batch, dtype (bf16, fp16, fp8), grad_dtype, sp (on|off), vp "
                        "(virtual stages), recompute (none, selective, full, or modules core_attn+layernorm+moe_act+mla_up_proj), zero (0-3 or fsdp), tp_overlap (on|off; on needs sp=on), "
                        "dispatcher (a MoE model's: alltoall, deepep, hybridep), offload (layers whose activations go to "
                        "host memory, or auto: the fewest that fit; no pipeline, no recompute)")
    _add_engine(p, "the collectives' simulation")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    p.set_defaults(func="studies:cmd_step")

    p = sub.add_parser("whatif", help="vary link classes or the node count and find the winners",
                       description="Vary link classes or the node count over values (Cartesian product) and report "
                                   "the best matrix and program at each point, marking where the winner changes.")
    p.add_argument("--system", default=o.SYSTEM, help=f"system name or .toml file (default: {o.SYSTEM})")
    p.add_argument("--nodes", default=None, help="node count when not varied (default: the system file's)")
    p.add_argument("--axes", default=None,
                   help="axis sizes, optionally named (data=*,tensor=16); one '*' absorbs the remaining devices "
                        "(default: one axis)")
    p.add_argument("--reduce", default=o.REDUCE, help=f"reduction axes, by index or name (default: {o.REDUCE})")
    p.add_argument("--vary", action="append", default=[], metavar="TARGET=V1,V2,..",
                   help="CLASS.bandwidth (GB/s), CLASS.latency (us), nodes; on a [fabric]: TIER.oversubscription, "
                        "TIER.nodes, TIER.uplinks, routing (adaptive, ecmp), qps_per_connection (queue pairs per NCCL "
                        "connection, ib/roce); faults: nodeN.COMPONENT.bandwidth "
                        "(GB/s), nodeN.speed (factor), TIERg.uplinks (ports of one group); with values "
                        "(repeatable)")
    p.add_argument("--bytes", default=None, help=f"buffer per GPU (default, at each point: {DEFAULT_BYTES_HELP})")
    p.add_argument("--matrix", default=None,
                   help='only this parallelism matrix, e.g. "[[2 2] [2 8]]" (default: every matrix)')
    p.add_argument("--program", default=o.PROGRAM,
                   help=f"only this program, in text form, on one matrix; or all (default: {o.PROGRAM})")
    _add_model(p, "at each point every collective of its step is charged, as p2sim plan --model does, and the "
                  "point reports the best and the default placement's step by axis (--reduce, --bytes, --matrix "
                  "and --program are the step's to decide)")
    _add_settings_options(p)
    _add_search_options(p, pruning=False)
    p.add_argument("--out", default=None, metavar="DIR", help="write the pages whatif.html and whatif.md and the plot whatif.png into DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_csv(p)
    p.set_defaults(func="studies:cmd_whatif")

    p = sub.add_parser("validate", help="compare predictions with GPU measurements",
                       description="Simulate every measured configuration and score the predictions against the "
                                   "measurements, beside the link-bottleneck baseline.")
    p.add_argument("--measurements", required=True, metavar="FILE|DIR",
                   help="P2-style CSV, single-collective CSV, or bench_nccl JSON-lines log (or a directory of them)")
    p.add_argument("--calibrate-on", default=None, metavar="FILE|DIR", help="calibrate each system on these first")
    p.add_argument("--system", default=None,
                   help="the p2sim system of nccl-tests logs (and of bench_nccl sweep logs that name none) that a "
                        "directory's systems.csv does not map")
    p.add_argument("--folds", default=o.FOLDS,
                   help="with --calibrate-on: k-fold cross-validation over the program rows' configurations, k at "
                        "least 2 (default: none: calibrated on every row, scored in sample)")
    p.add_argument("--split", default=o.SPLIT, metavar="none|sizes",
                   help="with --calibrate-on: 'sizes' calibrates on every other size of the single-collective rows "
                        f"and scores the sizes between, per size class (default: {o.SPLIT})")
    _add_engine(p, "des or analytic", "; the baseline is always scored beside it")
    p.add_argument("--allow-emulated", action="store_true",
                   help="score (and calibrate on) bench_nccl's CPU emulations (--backend numpy) without a warning")
    p.add_argument("--workers", default=None, help="worker processes (default: all cores; 1 = in-process)")
    _add_scheduler(p)
    _add_limits(p)
    p.add_argument("--out", default=None, metavar="DIR", help="write validation.md, validation.html and plots into DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_csv(p)
    p.set_defaults(func="measurements:cmd_validate")

    p = sub.add_parser("check", help="nccl-tests commands that measure a placement's steps, and verdicts on logs",
                       description="Print, for each step of a placement's program (given, or the best rank finds), "
                                   "the nccl-tests command that measures it (NCCL_TESTS_SPLIT where the step runs "
                                   "several groups at once) with its prediction and what bounds it; given nccl-tests "
                                   "logs (text or -J JSON, split runs included), judge each row: as predicted, or "
                                   "slower / faster than predicted, naming the resource that bounds the prediction.")
    p.add_argument("logs", nargs="*", metavar="LOG", help="nccl-tests output files (text or -J .json) or directories")
    _add_layout(p, system=True)
    p.add_argument("--matrix", default=None, help='the placement, e.g. "[[2 2] [2 8]]" (default: the best rank finds)')
    p.add_argument("--program", default=None, help="its program in text form (default: the best rank finds; needs "
                                                    "--matrix)")
    p.add_argument("--bytes", default=None, help=f"buffer per GPU (default: {DEFAULT_BYTES_HELP})")
    _add_model(p, "one command per distinct collective of its step under the best placement p2sim plan --model "
                  "finds (or --matrix), with its count per step (--reduce, --bytes and --program are the step's)")
    _add_algo(p)
    p.add_argument("--proto", default=o.PROTO, help=f"auto, LL, LL128 or Simple (default: {o.PROTO})")
    p.add_argument("--tolerance", default=str(o.TOLERANCE),
                   help=f"a row is as predicted within this factor of the predicted bus bandwidth (default: "
                        f"{o.TOLERANCE}, p2sim's spread against published nccl-tests runs)")
    p.add_argument("--workers", default=None, help="worker processes for finding the best placement (default: all "
                                                   "cores)")
    _add_csv(p)
    p.set_defaults(func="measurements:cmd_check")

    p = sub.add_parser("calibrate", help="fit link-class bandwidths to measurements",
                       description="Fit one system's parameters (link-class bandwidths, per-channel rates, launch, "
                                   "per-step cost, network step), each within its physical bounds, to measurements "
                                   "by a robust fit on log times (docs/validation.md); write a system file.")
    p.add_argument("--measurements", required=True, metavar="FILE|DIR", help="measurement CSV or JSON-lines log")
    p.add_argument("--system", required=True, help="the system to calibrate (name or .toml file)")
    p.add_argument("--out", required=True, metavar="FILE.toml", help="the calibrated system file to write")
    _add_force(p)
    _add_engine(p, "des or analytic")
    p.add_argument("--allow-emulated", action="store_true",
                   help="fit bench_nccl's CPU emulations (--backend numpy) too; refused otherwise: they time numpy, "
                        "not the links")
    p.add_argument("--workers", default=None, help="worker processes (default: all cores; 1 = in-process)")
    _add_scheduler(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func="measurements:cmd_calibrate")
    for p in sub.choices.values():
        _add_verbosity(p)
    return parser


def _add_limits(p: argparse.ArgumentParser, simulations: bool = True) -> None:
    p.add_argument("--max-matrices", default=None, metavar="N",
                   help=f"refuse more parallelism matrices than this (default: {MAX_MATRICES})")
    if simulations:
        p.add_argument("--max-simulations", default=None, metavar="N",
                       help=f"refuse a job of more simulations than this (default: {MAX_SIMULATIONS}; a bounded "
                            "search is limited by its estimated cost unless this is given)")
    p.add_argument("--yes", action="store_true",
                   help="run however large the job (lifts the limits on matrices, simulations and synthesis depth)")


def _add_scheduler(p: argparse.ArgumentParser) -> None:
    # the numbers are p2sim.studies.executor's DEFAULT_PORT, START_LIMIT_S and NO_WORKER_WAIT_S, written out so
    # that --help imports no executor (tests/test_executor.py checks that they agree)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--scheduler", default=None, metavar="ADDRESS|local:N",
                       help="run the simulations on Dask (needs p2sim[dask]): a dask.distributed scheduler address "
                            "(tcp://host:8786; tcp:// and port 8786 when not given), or local:N worker processes "
                            "here; an address fails within 20 s if its host does not resolve, nothing answers, or "
                            "no worker joins in 10 s (not with --workers)")
    group.add_argument("--scheduler-file", default=None, metavar="FILE",
                       help="run the simulations on the Dask scheduler whose address is in FILE, the JSON file "
                            "dask scheduler --scheduler-file FILE writes (as on Slurm); otherwise as --scheduler")


def _add_algo(p: argparse.ArgumentParser, choices: tuple[str, ...] = ALGO_CHOICES, default: str = o.ALGO) -> None:
    p.add_argument("--algo", default=default, metavar="A",
                   help=f"NCCL algorithm, forced like NCCL_ALGO: {choices_text(choices)}; one that cannot run a "
                        f"collective it has on the system or a group is refused, as NCCL refuses it; a collective "
                        f"it does not have at all runs as a ring (default: {default})")


def _add_engine(p: argparse.ArgumentParser, what: str, more: str = "") -> None:
    p.add_argument("--engine", default=o.ENGINE,
                   help=f"simulation engine: {what} (default: {o.ENGINE}{more})")


def _add_model(p: argparse.ArgumentParser, what: str, refused: bool = False) -> None:
    p.add_argument("--model", default=None, metavar="NAME|FILE",
                   help=f"a training model: a preset (gpt3-175b, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, "
                        f"deepseek-v3), a Hugging Face config.json or a TOML of its fields; {what} (axes named "
                        "tensor, context, pipeline, data, expert or tp, cp, pp, dp, ep)")
    if refused:  # still parsed, so that the refusal names them rather than argparse's "unrecognized"
        for name, shown in (("--train", "KEY=V,.."), ("--compute-per-layer", "SECONDS")):
            p.add_argument(name, default=None, metavar=shown,
                           help=f"refused here, as --model is (p2sim plan --model takes {name})")
        return
    p.add_argument("--train", default=None, metavar="KEY=V,..",
                   help="the step's training settings with --model: seq, micro_batch, global_batch, dtype "
                        "(bf16, fp16, fp8: FP8 GEMMs), grad_dtype, sp (sequence parallelism on|off), vp (virtual "
                        "stages), schedule (1f1b, interleaved), zero (0-3) or data_parallel (ddp, zero1-3, fsdp), "
                        "recompute (none, selective, full, or modules joined by +), tp_overlap (on|off; on needs sp=on), dispatcher (alltoall, deepep, "
                        "hybridep), offload (layers whose activations go to host memory; no pipeline); e.g. "
                        "seq=8192,micro_batch=1,global_batch=1024,zero=1,sp=on (default: a preset's published "
                        "seq and global batch, else seq=4096 and one micro-batch per data rank; bf16 weights, "
                        "fp32 gradients, ddp)")
    p.add_argument("--compute-per-layer", default=None, metavar="SECONDS",
                   help="with --model: one layer's forward and backward compute for one micro-batch; the data "
                        "reduction then overlaps the last backward as DDP's buckets do (default: no overlap, "
                        "communication summed)")


def _add_csv(p: argparse.ArgumentParser) -> None:
    p.add_argument("--csv", default=None, metavar="FILE|-",
                   help="also write the main table as CSV to FILE, columns named as in --json ('-': print the CSV "
                        "instead of the table)")
    _add_force(p)


def _add_force(p: argparse.ArgumentParser) -> None:
    # every command with an output file option has --csv, but topo (--draw) and calibrate (--out)
    p.add_argument("--force", action="store_true",
                   help="let an output (--csv, --out, --trace, --draw) replace a file this command reads: its "
                        "--system file, measurements or logs (refused otherwise)")


def _add_emit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--emit", default=None, metavar="torch|jax|json|megatron|nccl-tuner",
                   help="print instead of the table: the best placement and its program as PyTorch or JAX code "
                        "(a per-level mesh and the program's collectives), as JSON, as a script that starts "
                        "Megatron-LM's pretrain_gpt.py on it (its parallel sizes and rank order; axes named "
                        "tensor, context, expert, data, pipeline), or as NCCL example-tuner rules where p2sim "
                        "predicts a faster algorithm/protocol than NCCL's own")


def _add_settings_options(p: argparse.ArgumentParser, algo: str = o.ALGO) -> None:
    _add_algo(p, STUDY_CHOICES, algo)
    p.add_argument("--proto", default=o.PROTO, help=f"NCCL protocol: auto, LL, LL128 or Simple (default: {o.PROTO})")
    _add_engine(p, "des, analytic or baseline")
    p.add_argument("--profile", default=o.PROFILE, help=f"rule profile (default: {o.PROFILE})")
    p.add_argument("--max-size", default=str(o.MAX_SIZE), help=f"longest program (default: {o.MAX_SIZE})")
    p.add_argument("--workers", default=None,
                   help="worker processes (default: all cores; at most the cores and the tasks; 1 = in-process)")
    _add_scheduler(p)
    _add_limits(p)
    _add_order(p)


def _add_search_options(p: argparse.ArgumentParser, pruning: bool = True) -> None:
    p.add_argument("--exhaustive", action="store_true",
                   help="simulate every program (default with the des engine: bound every program first and "
                        "simulate only those whose lower bound can still beat the K-th best or their matrix's "
                        "best; the answer is the same)")
    if not pruning:
        return
    p.add_argument("--budget", default=None, metavar="SECONDS",
                   help="stop simulating after about this many seconds and say whether the answer is proven "
                        "(default: no limit)")
    p.add_argument("--top-matrices", default=None, metavar="K",
                   help="search only the K matrices with the least lower bounds (default: every matrix)")


def _add_order(p: argparse.ArgumentParser) -> None:
    p.add_argument("--order", default=o.ORDER, choices=["aligned", "p2"],
                   help="device order of a reduction group over several axes: aligned (the default; the "
                        "synthesis hierarchy's levels stay hardware levels) or p2 (row-major over the reduction "
                        "axes' coordinates, as P2 through XLA)")


def _add_verbosity(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true",
                       help="say nothing on stderr but warnings and errors (no job sizes, no progress bars)")
    group.add_argument("-v", "--verbose", action="store_true", help="also say what is done in detail on stderr")
