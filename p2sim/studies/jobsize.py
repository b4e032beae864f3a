"""How big a combinatorial job is, said before it starts, and the limits on it.

``placements``, ``synth``, ``rank``, ``plan``, ``whatif`` and ``validate`` multiply
matrices by programs by algorithms (by points, by reductions): a 12-level hierarchy
has 12! matrices and a four-axis rank on 512 GPUs 120,000 simulations.  Each command
counts first -- matrices without listing them (:func:`p2sim.formalism.placement.count_matrices`),
programs by synthesizing each distinct synthesis hierarchy once (the synthesis is
cached, and worker processes forked afterwards inherit it) -- prints the count on
stderr, flushed, and refuses a job above a limit unless ``--yes`` or a ``--max-*``
option raises it.

The default limits bound a job that starts unasked to about a minute.  Measured on the
2-core development machine (load average about 1): ``rank`` of a 512-GPU configuration
(``p2-16gpu`` with 64 servers, axes 8,4,4,4 reducing axes 0 and 1: 37 matrices, 11,677
simulations) took 12.3 s of CPU in one process, about 1 ms a simulation, so 50,000
simulations of such a system take about a minute (larger systems take longer per
simulation).  Synthesis of programs of up to 5 steps took 0.6 s for a synthesis hierarchy
of 4 levels, 5.2 s for 5 and 29 s for 6 (``[2, 2, 2, 2, 2, 2]``, paper profile, same
machine); deeper ones are refused unless ``--yes``.

Examples
--------
>>> limits = Limits()
>>> limits.check_matrices(3, "axes 4,16 over hierarchy 4,16")
>>> limits.check_matrices(479001600, "axes 2,..")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: matrices: axes 2,.. have 479001600 parallelism matrices, more than the limit of 10000; --max-matrices N raises it, --yes lifts every limit
>>> synthesis_cardinalities(((1, 4), (2, 4)), (0,))
(1, 4)
"""

from __future__ import annotations

import math
import os
import resource
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..util.errors import InputError
from ..util.log import announce as log_announce, progress
from ..util.units import format_bytes
from ..formalism.hierarchy import SynthesisHierarchy
from ..formalism.placement import Matrix
from ..collectives.expand import CACHE_BYTES
from ..formalism.synthesis import Profile, synthesize
from ..topology.spec import SystemSpec

__all__ = ["Limits", "Cost", "JobCost", "StepCount",
           "MAX_MATRICES", "MAX_SIMULATIONS", "MAX_SYNTHESIS_LEVELS", "MAX_JOB_SECONDS",
           "synthesis_cardinalities", "program_counts", "program_steps", "synthesis_cost", "estimate", "hashed", "check_job", "memory_limit",
           "announce", "plural", "duration", "say_synthesis"]

MAX_MATRICES = 10_000
MAX_SIMULATIONS = 50_000
MAX_SYNTHESIS_LEVELS = 6  # levels of (d) below its root
# A job estimated (JobCost) above this much CPU time, or above memory_limit(), is refused unless --yes: five
# minutes, a few times the minute the simulation limit aims at, since the estimate can err high by that much
# on small systems (where cached steps make programs cheaper than their GPU-steps).
MAX_JOB_SECONDS = 300.0
# a synthesis estimated at this much CPU or more is announced before it starts (say_synthesis)
SAY_SYNTHESIS_SECONDS = 5.0

# The cost of a job's parts, measured on this machine (2 shared cores, load about 1, Python 3.11) with small
# runs of superpod-h100 and synthesize() alone (paper profile, --max-size 5):
# * synthesis of a hierarchy (d) of L levels below its root, per device of (d), and once per (d) whatever the
#   size: L=2 0.07 s + 156 us/device ((1,2048,8): 2.56 s, 147 MiB); L=3 0.3 s + 690 us ((1,256,8,8): 11.3 s,
#   497 MiB, 31 KiB/device); L=4 1.4 s + 3.1 ms ((1,64,4,4,8): 25.4 s, 1,225 MiB, 153 KiB/device); L=5 and 6
#   from the 5.2 s and 29 s of [2]*5 and [2]*6 above, per device and memory scaled by the factor 4-5 per level
#   seen from 2 to 4.  (The memory grows with the devices: (1,2048,8,8), 131,072 devices, took 2.9 GiB within
#   120 s and ran out of 8 GB in the whatif.)
_SYNTHESIS = {  # levels: (seconds, seconds per device, bytes per device)
    1: (0.07, 156e-6, 9 * 2**10), 2: (0.07, 156e-6, 9 * 2**10), 3: (0.3, 690e-6, 31 * 2**10),
    4: (1.4, 3.1e-3, 153 * 2**10), 5: (5.2, 14e-3, 750 * 2**10), 6: (29.0, 63e-3, 3.7 * 2**20)}
#   Above 16,384 devices the cost per device grows too (more distinct states, each an array over the devices):
#   (1,512,8,8), 32,768 devices, took 49 s and 1,376 MiB (load about 10: the seconds high), 1.4 times the bytes
#   per device of (1,256,8,8) = 2^0.5; and (1,2048,8,8) ran past 8 GB, which 2^0.5 per doubling (11 GB) and
#   not the flat figure (3.9 GB) foresees: per device, times (devices / 16,384) ** 0.5 above 16,384.
_SYNTHESIS_FLAT_DEVICES = 16_384
_SYNTHESIS_GROWTH = 0.5
# * bounding (and simulating) programs: per GPU and program step, every GPU's flows in every step.  Measured
#   0.24 us for bounding the 825 programs (3,798 steps) of one matrix at 4,096 nodes (32,768 GPUs: 29.5 s)
#   and 0.23 us at 16,384 nodes (131,072 GPUs: 116 s); simulating the programs that can still win adds to it.
STEP_SECONDS_PER_GPU = 0.3e-6
# * flows on a fabric with ECMP routing: a route's port is a hash of its two ends and its channel
#   (topology/fabric.py), so no two groups of a step are one group moved (Fabric.move_key) and every group's
#   flows are built, bounded and simulated on their own, where adaptive routing shares one computation per
#   symmetry class.  Measured on this machine (CPU seconds, --workers 1, both at load about 10): whatif on
#   roce-h100, 64 nodes, axes data=16,pipeline=4,tensor=8 reducing data, 4 GiB, one point: routing=ecmp 88.4 s,
#   routing=adaptive 27.1 s, each with 1 s of synthesis and 31.6 M GPU-steps: 3.3 times the cost per GPU-step.
ECMP_STEP_FACTOR = 3.3
# * after the symmetries (issue 34), a job's bounds cost what they build, not its GPU-steps: a step is bounded
#   once per distinct (lowered step, buffer fractions) and builds one collective per class of its groups
#   that are one group moved (sim/moved.py moved_classes: by tier shape on a fabric, each group alone
#   with ECMP), and each (matrix, algorithm)'s AllReduce is simulated event-driven, one step on every GPU
#   (search.bound_task; the programs simulated afterwards, those that can still win, are not known before the
#   bounds and are not counted: on the jobs below, none to a few per matrix).  A search bounds a program only
#   as far as it can still win (search.BoundJob), which the count cannot know: the constants absorb it.
#   Fitted by non-negative least squares on relative errors (each job alike), the program step's fixed at
#   8 us (cProfile of the SuperPOD rank: lowering, sizing and keying a step of the prefix tree), to nine
#   jobs of benchmarks/fabric_2048.py's kind (`--workers 1`, this machine, load about 1, CPU s measured /
#   estimated with these constants): rank of data=GPUs/32,pipeline=4,tensor=8 reducing data on
#   superpod-h100 at 2,048 nodes 24.2 / 27.6 and 256 nodes 8.5 / 8.8, on flat h100 at 2,048 nodes
#   7.5 / 2.8 (its AllReduces' flow symmetry costs more than the fit gives), on roce-h100 (ECMP) at 64
#   nodes 42.0 / 43.9, on gb200-nvl72-pod at 224 racks 151.3 / 99.5; its whatif of 3 points on
#   superpod-h100 65.9 / 63.6 and on h100 13.3 / 7.1; the 4-axis rank on superpod-h100 55.0 / 60.8;
#   plan with three reductions on superpod-h100 48.1 / 55.7.  The fit leaves nothing per GPU of a
#   distinct step beyond its collectives (0).  With ECMP each group is a collective chosen and finished on
#   its own (its ports can change NCCL's choice); its structure is moved from its class's up to the ports
#   and re-hashed.
CLASS_SECONDS = 0.197e-3  # a collective chosen and built (or moved)
DISTINCT_STEP_SECONDS_PER_GPU = 0.0  # a distinct step's moves and link sums, per GPU (fitted: 0, see above)
PROGRAM_STEP_SECONDS = 8e-6  # a program step's lookups
SIMULATED_SECONDS_PER_GPU = 13.5e-6  # an AllReduce simulated event-driven, per GPU
# * the structures each process builds per system (topology, routes, groups, flow arrays): 1.2 GiB per
#   worker process bounding at 131,072 GPUs (9.6 KiB a GPU), on top of the process's own 100 MiB.
STRUCTURE_BYTES_PER_GPU = 9.6 * 2**10
PROCESS_BYTES = 100 * 2**20
# * and the collectives and structures each process keeps, up to the expander's CACHE_BYTES (its LRU bound),
#   which a large system fills: at 8 KiB a GPU from 16,384 GPUs on.  Measured peaks against the estimate,
#   rank --axes data=GPUs/32,pipeline=4,tensor=8 --workers 1: superpod-h100 at 2,048 nodes 433 MiB (estimate
#   397 MiB), at 256 nodes 150 MiB (137 MiB); flat h100 at 2,048 nodes 210 MiB (386 MiB, high: its collectives
#   hold fewer arrays than a fabric's).
CACHE_BYTES_PER_GPU = 8 * 2**10

# the --bytes default in words (requests.default_bytes computes it)
DEFAULT_BYTES_HELP = ("P2's 2^29 x nodes float32, i.e. 2 GiB x nodes per GPU: 4 GiB on 2 nodes, 512 GiB on 256; "
                      "a buffer above the system's GPU memory is warned about")


def plural(n: int, word: str) -> str:
    """``1 matrix``, ``3 matrices``, ``2 simulations``.

    Examples
    --------
    >>> plural(1, "matrix"), plural(3, "matrix"), plural(2, "synthesis hierarchy")
    ('1 matrix', '3 matrices', '2 synthesis hierarchies')
    """
    if n == 1:
        return f"1 {word}"
    if word.endswith("ix"):
        return f"{n} {word[:-2]}ices"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return f"{n} {word[:-1]}ies"
    return f"{n} {word}s"


class Cost(Protocol):
    """What :meth:`Limits.check_cost` reads of an estimate (:class:`JobCost`, a sweep's, a what-if's points')."""

    @property
    def seconds(self) -> float: ...

    @property
    def memory(self) -> float: ...

    def text(self) -> str: ...


@dataclass(frozen=True)
class Limits:
    """The largest job a command starts without ``--yes`` (``None``: no limit)."""

    matrices: int | None = MAX_MATRICES
    simulations: int | None = MAX_SIMULATIONS
    synthesis_levels: int | None = MAX_SYNTHESIS_LEVELS
    seconds: float | None = MAX_JOB_SECONDS  # the estimated CPU time (JobCost); memory: memory_limit()
    # --max-simulations was given: it then limits a bounded search's programs too (by default only the
    # estimated cost does: a bounded program costs a lookup or a bound, not a simulation)
    simulations_given: bool = False

    @classmethod
    def of(cls, yes: bool = False, max_matrices: int | None = None, max_simulations: int | None = None) -> Limits:
        """``--yes`` lifts every limit; ``--max-matrices`` / ``--max-simulations`` raise (or lower) one."""
        if yes:
            return cls(None, None, None, None)
        return cls(MAX_MATRICES if max_matrices is None else max_matrices,
                   MAX_SIMULATIONS if max_simulations is None else max_simulations,
                   simulations_given=max_simulations is not None)

    def check_matrices(self, count: int, what: str) -> None:
        if self.matrices is not None and count > self.matrices:
            raise InputError(f"matrices: {what} have {count} parallelism matrices, more than the limit of "
                             f"{self.matrices}; --max-matrices N raises it, --yes lifts every limit")

    def check_synthesis(self, cardinalities: Iterable[tuple[int, ...]], max_size: int) -> None:
        if self.synthesis_levels is None:
            return
        for c in cardinalities:
            if len(c) - 1 > self.synthesis_levels:
                raise InputError(f"synthesis: the synthesis hierarchy {list(c)} has {len(c) - 1} levels; "
                                 f"programs of up to {max_size} steps over more than {self.synthesis_levels} "
                                 "levels take minutes to hours to synthesize; --yes runs it anyway, a smaller "
                                 "--max-size or fewer reduction axes make it smaller")

    def check_simulations(self, count: int, what: str) -> None:
        if self.simulations is not None and count > self.simulations:
            raise InputError(f"simulations: {what} make {count} simulations, more than the limit of "
                             f"{self.simulations}; --max-simulations N raises it, --yes lifts every limit")


    def check_cost(self, cost: Cost, what: str, smaller: str) -> None:
        """Refuse a job whose estimated CPU time or memory is above the limits, with the figures and the way out.

        ``smaller``: the options that make this job smaller (``--matrix M``, fewer ``--nodes``, ..).
        """
        if self.seconds is None:
            return
        memory = memory_limit()
        if cost.seconds <= self.seconds and cost.memory <= memory:
            return
        over = (f"about {_duration(cost.seconds)} of CPU time" if cost.seconds > self.seconds else
                f"about {format_bytes(cost.memory)} of memory")
        limit = (f"{_duration(self.seconds)}" if cost.seconds > self.seconds else
                 f"{format_bytes(memory)} (half of this machine's memory, or of ulimit -v)")
        raise InputError(f"job: {what} would take {over} ({cost.text()}), more than the limit of {limit}; "
                         f"{smaller} make it smaller, --yes runs it anyway")


@dataclass(frozen=True)
class JobCost:
    """What a job will cost, estimated from its size before anything big is built (constants above).

    ``gpus`` per system built, ``builds`` systems (each what-if point builds its own; points share no
    structures), ``gpu_steps`` the GPUs times the steps of every program bounded or simulated, summed over
    the systems, ``processes`` that each build the structures, and the synthesis of every distinct (d).

    Examples
    --------
    >>> cost = JobCost(gpus=1024, builds=1, gpu_steps=1024 * 1000, processes=2, synthesis_seconds=1.0,
    ...                synthesis_bytes=0)
    >>> kept = 1024 * (STRUCTURE_BYTES_PER_GPU + CACHE_BYTES_PER_GPU)
    >>> round(cost.seconds, 4), cost.memory == 2 * (PROCESS_BYTES + kept)
    (1.3072, True)
    """

    gpus: int
    builds: int
    gpu_steps: int
    processes: int
    synthesis_seconds: float
    synthesis_bytes: float
    hashed_gpu_steps: int = 0  # of gpu_steps, those on fabrics with ECMP routing (ECMP_STEP_FACTOR each)
    steps: StepCount | None = None  # the job's steps counted as the bounds compute them: then gpu_steps unused

    @property
    def seconds(self) -> float:
        if self.steps is not None:
            return self.synthesis_seconds + self.steps.seconds
        steps = self.gpu_steps + (ECMP_STEP_FACTOR - 1) * self.hashed_gpu_steps
        return self.synthesis_seconds + steps * STEP_SECONDS_PER_GPU

    @property
    def memory(self) -> float:
        """The synthesis (in this process, inherited by forked workers) and every process's structures."""
        kept = min(CACHE_BYTES, self.gpus * CACHE_BYTES_PER_GPU)
        return self.synthesis_bytes + self.processes * (PROCESS_BYTES + self.gpus * STRUCTURE_BYTES_PER_GPU + kept)

    def brief(self) -> str:
        """The estimate in a few words, for the line that announces a job it let start."""
        cpu = _duration(self.seconds)
        return (f"estimated {'' if cpu.startswith('under') else 'about '}{cpu} of CPU and "
                f"{format_bytes(self.memory, 2)} of memory")

    def text(self) -> str:
        if self.steps is not None:
            return (f"{self.steps.text()}, {self.processes} {'process' if self.processes == 1 else 'processes'}, "
                    f"and {_duration(self.synthesis_seconds)} of program synthesis")
        steps = f"{self.gpu_steps:,} GPU-steps of flows over {self.gpus:,} GPUs" + (
            f" in each of {self.builds} systems built" if self.builds > 1 else "") + (
            f" ({self.hashed_gpu_steps:,} of them ECMP-hashed, {ECMP_STEP_FACTOR:g}x the cost)"
            if self.hashed_gpu_steps else "")
        return (f"{steps}, {self.processes} {'process' if self.processes == 1 else 'processes'}, and "
                f"{_duration(self.synthesis_seconds)} of program synthesis")


@dataclass(frozen=True)
class StepCount:
    """A job's bounds as the simulator computes them: ``program_steps`` looked up, ``distinct`` steps
    (lowered step and buffer fractions) bounded over ``gpus`` GPUs in all, ``classes`` collectives built.

    Examples
    --------
    >>> count = StepCount(100, 2, 32768, 10) + StepCount(1, 0, 0, 0)
    >>> count.program_steps, count.seconds == 101 * PROGRAM_STEP_SECONDS + 32768 * DISTINCT_STEP_SECONDS_PER_GPU + (
    ...     10 * CLASS_SECONDS)
    (101, True)
    """

    program_steps: int = 0
    distinct: int = 0
    gpus: int = 0
    classes: int = 0
    simulated: int = 0  # GPUs of the event-driven step runs known before the bounds (each matrix's AllReduce)

    def __add__(self, other: StepCount) -> StepCount:
        return StepCount(self.program_steps + other.program_steps, self.distinct + other.distinct,
                         self.gpus + other.gpus, self.classes + other.classes, self.simulated + other.simulated)

    def __mul__(self, k: int) -> StepCount:
        return StepCount(*(k * x for x in (self.program_steps, self.distinct, self.gpus, self.classes,
                                           self.simulated)))

    @property
    def seconds(self) -> float:
        return (self.program_steps * PROGRAM_STEP_SECONDS + self.gpus * DISTINCT_STEP_SECONDS_PER_GPU
                + self.classes * CLASS_SECONDS + self.simulated * SIMULATED_SECONDS_PER_GPU)

    def text(self) -> str:
        return (f"{self.program_steps:,} program steps, {self.distinct:,} distinct steps over {self.gpus:,} GPUs "
                f"in all, {self.classes:,} collectives built"
                + (f", {self.simulated:,} GPU-steps simulated event-driven" if self.simulated else ""))


def _duration(seconds: float) -> str:
    """``under 1 s``, ``45 s``, ``303 s``, ``12 min``, ``3.1 h``."""
    if seconds < 1:
        return "under 1 s"
    if seconds < 10 * 60:  # seconds up to ten minutes: "about 303 s, more than the limit of 300 s", not "5 min, .. 5 min"
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def memory_limit() -> float:
    """Half of this machine's memory, or of the address-space limit (``ulimit -v``) where that is lower.

    A job above it would swap, or fail with a ``MemoryError`` part way; half leaves room for the estimate's
    error and for the other processes of a shared machine.
    """
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        physical = 2**40
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        physical = min(physical, soft)
    return physical / 2


def synthesis_cost(cardinalities: Iterable[tuple[int, ...]]) -> tuple[float, float]:
    """Seconds of every (d)'s synthesis, and the memory of the largest one, before any is synthesized."""
    seconds, memory = 0.0, 0.0
    for c in set(cardinalities):
        devices = math.prod(c)
        if devices < 2:
            continue
        fixed, per_device, per_byte = _SYNTHESIS[min(max(len(c) - 1, 1), max(_SYNTHESIS))]
        growth = max(1.0, devices / _SYNTHESIS_FLAT_DEVICES) ** _SYNTHESIS_GROWTH
        seconds += fixed + devices * per_device * growth
        memory = max(memory, devices * per_byte * growth)
    return seconds, memory


def estimate(gpus: int, builds: int, gpu_steps: int, processes: int,
             cardinalities: Iterable[tuple[int, ...]], hashed_gpu_steps: int = 0) -> JobCost:
    """A job's :class:`JobCost`: ``gpu_steps`` summed over its ``builds`` systems (``hashed_gpu_steps`` of them
    on ECMP fabrics), the synthesis of its (d)."""
    seconds, memory = synthesis_cost(cardinalities)
    return JobCost(gpus, builds, gpu_steps, processes, seconds, memory, hashed_gpu_steps)


def hashed(spec: SystemSpec) -> bool:
    """Whether the system's fabric routes by ECMP hashing (its GPU-steps cost ``ECMP_STEP_FACTOR`` times more)."""
    return spec.fabric is not None and spec.fabric.routing == "ecmp"


def check_job(limits: Limits, matrices: Sequence[Matrix], reduce_axes: Sequence[int], gpus: int, builds: int,
              simulations: int, processes: int, what: str, smaller: str, hashed_builds: int = 0) -> None:
    """The check before any synthesis: what the synthesis alone and each matrix's AllReduce (one step on every
    GPU, ``simulations`` of them per system; ``hashed_builds`` of the systems on ECMP fabrics) will cost at least."""
    cards = [synthesis_cardinalities(m, reduce_axes) for m in matrices]
    cost = estimate(gpus, builds, simulations * gpus * builds, processes, cards, simulations * gpus * hashed_builds)
    limits.check_cost(cost, what, smaller)
    say_synthesis(cost, cards)


def say_synthesis(cost: JobCost, cardinalities: Iterable[tuple[int, ...]]) -> None:
    """Before a synthesis of many devices (seconds to minutes, its progress said as it runs): what it will cost,
    so that a large job's first line is an estimate (the job's own, counted from the programs, follows)."""
    if cost.synthesis_seconds >= SAY_SYNTHESIS_SECONDS:
        distinct = sum(1 for c in set(cardinalities) if math.prod(c) > 1)
        log_announce(f"counting programs first: {plural(distinct, 'synthesis hierarchy')}, estimated about "
                     f"{_duration(cost.synthesis_seconds)} of CPU and {format_bytes(cost.synthesis_bytes, 2)} of "
                     "memory; the job's estimate follows")


def synthesis_cardinalities(matrix: Matrix, reduce_axes: Sequence[int]) -> tuple[int, ...]:
    """The cardinalities of a matrix's synthesis hierarchy (d), without building its lowering."""
    per_level = [math.prod(matrix[i][j] for i in set(reduce_axes)) for j in range(len(matrix[0]))]
    return SynthesisHierarchy.of(per_level).cardinalities


def program_counts(matrices: Sequence[Matrix], reduce_axes: Sequence[int], profile: Profile,
                   max_size: int, limits: Limits) -> list[int]:
    """How many programs each matrix has: one synthesis per distinct (d), checked against the depth limit first."""
    return [n for n, _ in _programs(matrices, reduce_axes, profile, max_size, limits)]


def program_steps(matrices: Sequence[Matrix], reduce_axes: Sequence[int], profile: Profile,
                  max_size: int, limits: Limits) -> list[int]:
    """How many steps each matrix's programs have in all (synthesized once, as :func:`program_counts`)."""
    return [n for _, n in _programs(matrices, reduce_axes, profile, max_size, limits)]


def _programs(matrices: Sequence[Matrix], reduce_axes: Sequence[int], profile: Profile, max_size: int,
              limits: Limits) -> list[tuple[int, int]]:
    cards = [synthesis_cardinalities(m, reduce_axes) for m in matrices]
    distinct = [c for c in dict.fromkeys(cards) if math.prod(c) > 1]
    limits.check_synthesis(distinct, max_size)
    sizes: dict[tuple[int, ...], tuple[int, int]] = {}
    # a synthesis over many devices takes minutes (constants above): said while it runs
    with progress("counting programs (synthesis hierarchies)", len(distinct)) as advance:
        for c in distinct:
            progs = synthesize(SynthesisHierarchy(c, (None,) * len(c)), profile, max_size)
            sizes[c] = (len(progs), sum(len(p.instructions) for p in progs))
            advance(1)
    return [sizes.get(c, (0, 0)) for c in cards]


def announce(command: str, text: str) -> None:
    """One line on stderr, flushed at once, so that it shows before a long job even when piped."""
    print(f"p2sim {command}: {text}", file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    """A job's duration as its estimates say it (``under 1 s``, ``45 s``, ``12 min``, ``3.1 h``)."""
    return _duration(seconds)
