"""Each option's default, written once: the command line's parser (:mod:`p2sim.cli.parser`) and the Python
API's signatures (:mod:`p2sim.api`) both read this table, so ``p2sim rank --help`` and
``inspect.signature(p2sim.rank)`` cannot disagree (tests/test_api.py checks every command).

An option not named here defaults to ``None``: not given, the request decides (the system file's node
count, P2's buffer, every core).  The values are as the command line takes them; where a number is
defined by the layer that uses it (the longest program, the verdict's tolerance) it is that constant.
Kept free of heavy imports: ``p2sim --help`` reads it.
"""

from __future__ import annotations

from types import MappingProxyType

from .formalism.synthesis import DEFAULT_MAX_SIZE
from .measurements.verdict import TOLERANCE as VERDICT_TOLERANCE

__all__ = ["SYSTEM", "REDUCE", "TOP", "ALGO", "PROTO", "MODEL", "PROFILE", "MAX_SIZE", "ORDER", "PROGRAM",
           "COLLECTIVE", "MINBYTES", "MAXBYTES", "STEPFACTOR", "FOLDS", "TOLERANCE", "LIMIT", "DEFAULTS"]

SYSTEM = "a100"  # the system of every command that simulates one (placements, synth and validate need none)
REDUCE = "0"  # the first axis
TOP = 10  # rank: entries shown
ALGO = "auto"  # NCCL's own choice, as with NCCL_ALGO unset
PROTO = "auto"  # NCCL's own choice, as with NCCL_PROTO unset
MODEL = "des"  # the contention-aware simulation
PROFILE = "paper"  # P2's rule profile (its program counts)
MAX_SIZE = DEFAULT_MAX_SIZE  # longest program, P2's
ORDER = "aligned"  # the synthesis hierarchy's levels stay hardware levels
PROGRAM = "all"  # simulate: every synthesized program (check's program defaults to the best rank finds)
COLLECTIVE = "AllReduce"  # sweep: nccl-tests' all_reduce_perf
# sweep: 8 B by factors of 2, as nccl-tests' README runs all_reduce_perf (-b 8 -e 256M -f 2), on to 1 GiB
MINBYTES = "8"
MAXBYTES = "1GiB"
STEPFACTOR = "2"
FOLDS = 1  # validate: no cross-validation
TOLERANCE = VERDICT_TOLERANCE  # check: a verdict's band (p2sim.measurements.verdict says why)
LIMIT = 20  # synth: programs shown per matrix in the table

# option (argparse destination, API parameter) -> default, for the tests and for docs
DEFAULTS = MappingProxyType({
    "system": SYSTEM, "reduce": REDUCE, "top": TOP, "algo": ALGO, "proto": PROTO, "model": MODEL,
    "profile": PROFILE, "max_size": MAX_SIZE, "order": ORDER, "program": PROGRAM, "collective": COLLECTIVE,
    "minbytes": MINBYTES, "maxbytes": MAXBYTES, "stepfactor": STEPFACTOR, "folds": FOLDS, "tolerance": TOLERANCE,
    "limit": LIMIT})
