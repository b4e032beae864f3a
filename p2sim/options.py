"""Each option's default, written once, for the command line and the Python API alike.

The command line's parser (:mod:`p2sim.cli.parser`) and the Python
API's signatures (:mod:`p2sim.api`) both read this table, so ``p2sim rank --help`` and
``inspect.signature(p2sim.rank)`` cannot disagree (tests/test_api.py checks every command).

An option not named here defaults to ``None``: not given, the request decides (the system file's node
count, P2's buffer, every core).  The values are as the command line takes them.  A default that a value owns
is read from that value, written once beside its type: the simulation settings from
:data:`~p2sim.studies.requests.DEFAULT_SETTINGS` (algorithm, protocol, engine, rule profile, longest program,
device order), the system, every program and the reduction axes from :mod:`p2sim.studies.requests` and
:mod:`p2sim.studies.demand`, validate's split from :mod:`p2sim.measurements.collective_validation`; where a number is defined by the layer that uses it (the verdict's tolerance) it
is that constant.  :data:`DESCRIPTIONS` says what each API parameter
is, for the Parameters sections of :mod:`p2sim.api`'s docstrings.

Reading the defaults from their types imports the studies layer, so ``p2sim --help`` costs about half a second of
imports (measured 0.43 s before, 0.50 s after, on the 2-core development machine); signals are still answered
from the command line's first line (:mod:`p2sim.cli`), before this module is imported.
"""

from __future__ import annotations

from types import MappingProxyType

from .measurements.collective_validation import NO_SPLIT
from .measurements.verdict import TOLERANCE as VERDICT_TOLERANCE
from .studies.demand import DEFAULT_REDUCE
from .studies.rank import DEFAULT_TOP
from .studies.requests import DEFAULT_SETTINGS, DEFAULT_SYSTEM, EVERY_PROGRAM
from .studies.size_sweep import DEFAULT_COLLECTIVE, DEFAULT_MAXBYTES, DEFAULT_MINBYTES, DEFAULT_STEPFACTOR

__all__ = ["SYSTEM", "REDUCE", "TOP", "ALGO", "PROTO", "ENGINE", "PROFILE", "MAX_SIZE", "ORDER", "PROGRAM",
           "COLLECTIVE", "MINBYTES", "MAXBYTES", "STEPFACTOR", "FOLDS", "TOLERANCE", "LIMIT", "DEFAULTS", "DESCRIPTIONS"]

SYSTEM = DEFAULT_SYSTEM  # the system of every command that simulates one (placements, synth and validate need none)
REDUCE = DEFAULT_REDUCE  # the first axis
TOP = DEFAULT_TOP  # rank: entries shown
ALGO = DEFAULT_SETTINGS.algo  # NCCL's own choice, as with NCCL_ALGO unset
PROTO = DEFAULT_SETTINGS.proto  # NCCL's own choice, as with NCCL_PROTO unset
ENGINE = DEFAULT_SETTINGS.engine  # the contention-aware simulation
PROFILE = DEFAULT_SETTINGS.rules.profile.value  # P2's rule profile (its program counts)
MAX_SIZE = DEFAULT_SETTINGS.rules.max_size  # longest program, P2's
ORDER = DEFAULT_SETTINGS.order.value  # the synthesis hierarchy's levels stay hardware levels
PROGRAM = EVERY_PROGRAM  # simulate: every synthesized program (check's program defaults to the best rank finds)
COLLECTIVE = DEFAULT_COLLECTIVE  # sweep: nccl-tests' all_reduce_perf
# sweep: 8 B by factors of 2, as nccl-tests' README runs all_reduce_perf (-b 8 -e 256M -f 2), on to 1 GiB
MINBYTES = DEFAULT_MINBYTES
MAXBYTES = DEFAULT_MAXBYTES
STEPFACTOR = DEFAULT_STEPFACTOR
FOLDS = None  # validate: no cross-validation (folds are 2 or more: one fold would score its own calibration rows)
SPLIT = NO_SPLIT  # validate: no cross-validation by size
TOLERANCE = VERDICT_TOLERANCE  # check: a verdict's band (p2sim.measurements.verdict says why)
LIMIT = 20  # synth: programs shown per matrix in the table

# option (argparse destination, API parameter) -> default, for the tests and for docs
DEFAULTS = MappingProxyType({
    "system": SYSTEM, "reduce": REDUCE, "top": TOP, "algo": ALGO, "proto": PROTO, "engine": ENGINE,
    "profile": PROFILE, "max_size": MAX_SIZE, "order": ORDER, "program": PROGRAM, "collective": COLLECTIVE,
    "minbytes": MINBYTES, "maxbytes": MAXBYTES, "stepfactor": STEPFACTOR, "folds": FOLDS, "split": SPLIT, "tolerance": TOLERANCE,
    "limit": LIMIT})

# what each API parameter is, for the Parameters section of p2sim.api's docstrings (one text per name: the same
# name means the same thing in every function; the parser's --help says it for the command line)
DESCRIPTIONS = MappingProxyType({
    "system": "a system name (``p2sim systems``), a path to a .toml file, or a SystemSpec",
    "hierarchy": "level cardinalities, outermost first (``2,16``: two nodes of 16 GPUs; the default without "
                 "``system``)",
    "nodes": "node count of the system (default: the system file's)",
    "gpus": "GPU count of a job on part of the system's nodes (``step``: 64 of a 72-GPU rack; default: all of --nodes)",
    "axes": "parallelism axis sizes, optionally named: ``'data=4,tensor=8'``, ``{'data': 4, 'tensor': 8}`` or "
            "``[4, 8]``; their product is the device count (default: one axis over every device)",
    "reduce": "the reduction axes, by index or name: ``'0'``, ``'data'``, ``['data']``",
    "reduction": "a training step's reductions, ``'AXES:SIZE[ x COUNT]'`` texts (``'data:4GiB'``, "
                 "``'tensor:64MiB x 24'``) or Reduction values (also accepted as ``reductions``)",
    "data_axis": "the data-parallel axis, by index or name (default: the axis named data, dp, ddp or fsdp, "
                 "else the first)",
    "model": "a training model: a preset's name (``llama3-70b``), a Hugging Face ``config.json`` or a TOML of its "
             "fields, or a ModelSpec; every collective of its step is charged (docs/workload.md)",
    "train": "the step's training settings, ``'seq=8192,micro_batch=1,global_batch=1024,zero=1,sp=on'``, a mapping of "
             "those keys or a TrainingSpec (default: TrainingSpec()'s)",
    "compute_per_layer": "seconds of one layer's forward and backward compute for one micro-batch: the data "
                         "reduction then overlaps the last backward (default: no overlap)",
    "top": "with a model and no axes (the configuration search): how many of the fastest configurations to "
           "return (default 5)",
    "compare": "with a model and no axes: a configuration to place beside the search's pick, "
               "``'tensor=8,pipeline=16,data=64,vp=8,mbs=1'`` (recompute: the least that fits unless given)",
    "vary": "what to vary, ``'CLASS.bandwidth=V1,V2'``, ``'nodes=2,4'``, ... (one text or several)",
    "matrix": "one parallelism matrix, ``'[[2 2] [2 8]]'`` or ``[[2, 2], [2, 8]]`` (default: every matrix)",
    "program": "a program in text form",
    "bytes": "buffer per GPU: bytes, or a text like ``'2GiB'`` (default: P2's 2^29 x nodes float32)",
    "top": "how many entries the ranking keeps",
    "algo": "NCCL algorithm, forced like NCCL_ALGO (auto: NCCL's choice; both: ring and tree)",
    "proto": "NCCL protocol: auto, LL, LL128 or Simple",
    "engine": "simulation engine: des (contention-aware), analytic (NCCL's tuning model) or baseline "
              "(link-bottleneck formulas)",
    "profile": "synthesis rule profile: paper (P2's counts) or full",
    "max_size": "longest program",
    "order": "device order of a group over several axes: aligned or p2",
    "settings": "the simulation settings as one value (a Settings: algorithm, protocol, engine, rules, device "
                "order), instead of algo, proto, engine, profile, max_size and order (leave those at their defaults)",
    "compare_orders": "also give each matrix's best program under both device orders",
    "exhaustive": "simulate every program instead of bounding them first (the answer is the same)",
    "budget": "stop simulating after about this many seconds (default: no limit)",
    "top_matrices": "search only the K matrices with the least lower bounds (default: every matrix)",
    "trace": "keep every flow, for a Chrome trace (``p2sim.report.trace``)",
    "gpus_per_node": "GPUs of each node taking part, the first ones (default: all)",
    "collective": "AllReduce, ReduceScatter, AllGather, Broadcast or Reduce (or nccl-tests' names)",
    "minbytes": "smallest size, as nccl-tests reads -b",
    "maxbytes": "largest size, as nccl-tests reads -e",
    "stepfactor": "size factor between points",
    "measurements": "measurement files or directories (P2's CSV, single-collective CSV, bench_nccl logs)",
    "calibrate_on": "calibrate each system on these measurements first",
    "folds": "with calibrate_on: k-fold cross-validation over the program rows' configurations, k at least 2 "
             "(default: none, calibrated on every row and scored in sample)",
    "split": "with calibrate_on: ``sizes`` calibrates on every other size of the single-collective rows and scores "
             "the sizes between (cross-validation by size); ``none`` (default) scores every row",
    "allow_emulated": "use bench_nccl's CPU emulations (--backend numpy) too",
    "logs": "nccl-tests output files (text or -J JSON) or directories to judge",
    "tolerance": "a row is as predicted within this factor of the predicted bus bandwidth",
    "workers": "worker processes (default: all cores; 1: in this process)",
    "scheduler": "a Dask scheduler address, or ``local:N``",
    "scheduler_file": "the JSON file ``dask scheduler --scheduler-file`` writes",
    "max_matrices": "refuse more parallelism matrices than this",
    "max_simulations": "refuse a job of more simulations than this",
    "yes": "run however large the job (lifts the limits)",
})
