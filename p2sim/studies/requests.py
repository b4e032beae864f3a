"""The inputs every study shares, checked once when a request is built.

A request's ``build`` takes the values a user gives -- the command line's text
(``"data=4,tensor=8"``, ``"2GiB"``) or Python values (``{"data": 4, "tensor": 8}``,
``2**31``) -- and refuses a bad one with the message the command line prints: the field
and the value.  Every value here is then valid; the studies never parse again.

Examples
--------
>>> job = Job.build(system="a100", axes={"data": 4, "tensor": 8})
>>> job.axes, job.axis_names, job.axes_text
((4, 8), ('data', 'tensor'), 'data=4,tensor=8')
>>> Job.build(system="a100", axes="3,4")
Traceback (most recent call last):
...
p2sim.util.errors.PlacementError: axes: the product of 3,4 is 12, but the hierarchy 2,16 has 32 devices
>>> SearchOptions.of(budget="ten")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: budget: 'ten' is not a number of seconds
"""

from __future__ import annotations

import math
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from ..collectives import check_algo, check_forced, check_proto
from ..util.algorithms import BOTH, STUDY_CHOICES
from ..formalism.hierarchy import Order, reduce_axes_of
from ..formalism.naming import generic_levels
from ..formalism.placement import check_sizes
from ..formalism.synthesis import DEFAULT_MAX_SIZE, Profile
from ..sim.context import SimulationContext
from ..sim.engines import check_engine
from ..sim.model_config import ModelConfig
from ..sim.sim_settings import SimSettings
from ..topology import Topology, find_spec, load_system
from ..topology.spec import SystemSpec
from ..util.errors import InputError, PlacementError
from ..util.log import warn
from ..util.parsing import (as_text, axes_spec, default_axis_names, int_list, named_parts,
                            positive_int)
from ..util.units import format_bytes
from .contexts import context_of
from .executor import Executor, capped_workers, check_scheduler, make_executor, scheduler_from_file
from .jobsize import DEFAULT_BYTES_HELP, Limits, plural

__all__ = ["Job", "Rules", "Settings", "DEFAULT_SYSTEM", "EVERY_PROGRAM", "DEFAULT_ORDER", "DEFAULT_SETTINGS", "SearchOptions", "RunOptions", "algorithms", "default_bytes", "optional_int",
           "topology_of", "whole_groups", "layout_of", "axis_names_of", "reduces_something", "warn_memory", "job_size_text",
           "limits_of", "DEFAULT_BYTES_HELP"]


# each default written once, beside its type (as httpx's Timeout and DEFAULT_TIMEOUT_CONFIG): p2sim.options, the
# command line's --help and the API's signatures read them from here
DEFAULT_SYSTEM = "a100"  # the system of every command that simulates one (placements, synth and validate need none)
EVERY_PROGRAM = "all"  # --program's default (simulate, whatif): every synthesized program, not one given
DEFAULT_ORDER = Order.ALIGNED  # the synthesis hierarchy's levels stay hardware levels


def optional_int(value: Any, field: str) -> int | None:
    """A positive integer, or ``None`` when not given."""
    return None if value is None else positive_int(as_text(value, field), field)


def topology_of(system: str | SystemSpec, nodes: Any = None) -> Topology:
    """The system (name, path or spec) built for ``nodes`` (default: the file's)."""
    return load_system(system, optional_int(nodes, "nodes"))


def whole_groups(topo: Topology) -> None:
    """Refuse a search over placements on a node count with a partial last fabric group (a scalable unit,
    a rack row): a placement puts axes on the groups a level counts, and the last would be short.
    ``sweep``, ``simulate`` and ``check`` with ``--matrix`` run on any node count."""
    why = topo.spec.partial_group(topo.nodes)
    if why is not None:
        raise InputError(f"nodes: {why}: placements put axes on whole groups; give a whole number of them "
                         f"(sweep, simulate, and check with --matrix, run on any node count)")


def default_bytes(topo: Topology) -> int:
    """P2's buffer: 2^29 x nodes float32 per GPU."""
    return 2**29 * topo.node_count * 4


def axis_names_of(axes: Any, count: int) -> tuple[str, ...]:
    """The names of ``data=8,tensor=4`` (``axis0, axis1, ..`` for sizes only)."""
    names = None if axes is None else named_parts(as_text(axes, "axes"), "axes")[1]
    return names if names is not None else default_axis_names(count)


def sizes_of(axes: Any, hierarchy: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The hierarchy and the axis sizes, checked against each other (default: one axis over every device)."""
    p = (math.prod(hierarchy),) if axes is None else axes_spec(as_text(axes, "axes"))[0]
    return check_sizes(hierarchy, p)


def layout_of(hierarchy: Any = None, system: str | SystemSpec | None = None, nodes: Any = None, axes: Any = None
              ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...], int | None]:
    """Hierarchy, axes, level names and node level, from ``hierarchy`` or from a system (``placements``, ``synth``)."""
    if system is not None:
        if hierarchy is not None:
            raise InputError("hierarchy: give either --hierarchy or --system, not both")
        topo = topology_of(system, nodes)
        whole_groups(topo)
        h, p = sizes_of(axes, topo.hierarchy)
        return h, p, topo.level_names, topo.spec.node_level
    if nodes is not None:
        raise InputError("nodes: --nodes needs --system")
    h = int_list(as_text(hierarchy, "hierarchy") or "2,16", "hierarchy", minimum=1)
    h, p = sizes_of(axes, h)
    return h, p, generic_levels(len(h)), None


def reduces_something(p: tuple[int, ...], red: tuple[int, ...]) -> tuple[int, ...]:
    """Validated reduction axes (sorted) that hold more than one device, before any work is announced."""
    red = reduce_axes_of(p, red)
    if math.prod(p[i] for i in red) < 2:
        raise PlacementError("reduce: the reduction axes have size 1, so there is nothing to reduce")
    return red


def algorithms(text: str, topo: Topology | None = None, proto: str = "auto") -> tuple[str, ...]:
    """``both`` is P2's pair of forced algorithms; anything else one setting (``auto`` = NCCL's choice).

    Given the topology, each forced algorithm that cannot run on it at all (CollNet without SHARP, NVLS on
    an A100) is refused before any work is announced."""
    t = check_algo(text, STUDY_CHOICES)
    algos = BOTH if t == "both" else (t,)
    if topo is not None:
        for a in algos:
            check_forced(topo, a, proto)
    return algos


def warn_memory(spec: SystemSpec, nbytes: float, default: bool, nodes: int, hint: str = "give --bytes") -> str | None:
    """The warning (logged, and returned for the result) when the buffer per GPU exceeds ``[gpu] memory_gib``.

    Called after every input check, so that a warning never precedes an error message.
    """
    memory = spec.nccl.memory_gib
    if memory is None or nbytes <= memory * 2**30:
        return None
    what = (f"the default buffer (P2's 2^29 x {nodes} nodes float32) of {format_bytes(nbytes)} per GPU" if default
            else f"the buffer of {format_bytes(nbytes)} per GPU")
    text = (f"{what} exceeds the {memory:g} GiB of GPU memory of {spec.name} ([gpu] memory_gib): no real GPU holds "
            f"it; {hint}")
    warn(text)
    return text


@dataclass(frozen=True)
class Job:
    """A system at a node count, and the job's axes (sizes and names); what it reduces is its request's
    :class:`~p2sim.studies.demand.Demand`."""

    context: SimulationContext  # the system built for the node count, and what its simulations keep
    axes: tuple[int, ...]
    axis_names: tuple[str, ...]

    @classmethod
    def build(cls, system: str | SystemSpec = DEFAULT_SYSTEM, nodes: Any = None, axes: Any = None) -> Job:
        spec = system if isinstance(system, SystemSpec) else find_spec(system)
        ctx = context_of(spec, optional_int(nodes, "nodes"))  # the one its tasks find again in this process
        _, p = sizes_of(axes, ctx.topo.hierarchy)
        return cls(ctx, p, axis_names_of(axes, len(p)))

    @property
    def topology(self) -> Topology:
        return self.context.topo

    @property
    def hierarchy(self) -> tuple[int, ...]:
        return self.topology.hierarchy

    @property
    def axes_text(self) -> str:
        """The axes as ``--axes`` writes them: ``data=4,tensor=8``."""
        return ",".join(f"{n}={p}" for n, p in zip(self.axis_names, self.axes))

    @property
    def spec(self) -> SystemSpec:
        return self.topology.spec


@dataclass(frozen=True)
class Rules:
    """The synthesis rule profile and the longest program."""

    profile: Profile = Profile.PAPER  # P2's rule profile (its program counts)
    max_size: int = DEFAULT_MAX_SIZE  # longest program, P2's

    @classmethod
    def of(cls, profile: Any = Profile.PAPER.value, max_size: Any = DEFAULT_MAX_SIZE) -> Rules:
        return cls(Profile.parse(profile), positive_int(as_text(max_size, "max-size"), "max-size"))


@dataclass(frozen=True)
class Settings:
    """What a study's simulations are asked, checked once and handed down whole: the algorithm setting,
    protocol, engine, rates (:class:`~p2sim.sim.sim_settings.SimSettings`, the simulator's part), the synthesis
    rules and the device order.

    A request holds the algorithm as asked (``both`` runs P2's pair); each of its tasks one algorithm
    (:meth:`each`).

    >>> s = Settings.of(algo="both", max_size=4, order="p2")
    >>> [t.algo for t in s.each()], s.rules.max_size, s.order
    (['ring', 'tree'], 4, <Order.P2: 'p2'>)
    """

    algo: str = SimSettings.algo  # as asked: auto, one algorithm, or both
    proto: str = SimSettings.proto
    engine: str = SimSettings.engine
    rules: Rules = field(default_factory=Rules)
    order: Order = DEFAULT_ORDER  # the device order of reduction groups
    config: ModelConfig | None = None  # the rates; None: the system file's [model] settings

    @classmethod
    def of(cls, algo: Any = SimSettings.algo, proto: Any = SimSettings.proto, engine: Any = SimSettings.engine,
           profile: Any = Rules.profile.value, max_size: Any = Rules.max_size, order: Any = DEFAULT_ORDER.value
           ) -> Settings:
        """The settings from a user's values (text or typed), each refused with its field and value."""
        engine = check_engine(engine)
        algorithms(algo)
        rules, chosen = Rules.of(profile, max_size), Order.parse(order)
        return cls(algo, check_proto(proto), engine, rules, chosen)

    @property
    def sim(self) -> SimSettings:
        """The simulator's part."""
        return SimSettings(self.algo, self.proto, self.engine, self.config)

    def each(self, topo: Topology | None = None) -> list[Settings]:
        """One settings value per algorithm the setting runs (each refused here if it cannot run on ``topo``)."""
        return [replace(self, algo=a) for a in algorithms(self.algo, topo, self.proto)]

    def options(self) -> dict[str, Any]:
        """The settings as the command line's options give them (``algo``, ``proto``, ``engine``, ``profile``,
        ``max_size``, ``order``): what a request's ``build`` takes, checked there as any other value.

        >>> Settings().options()
        {'algo': 'auto', 'proto': 'auto', 'engine': 'des', 'profile': 'paper', 'max_size': 5, 'order': 'aligned'}
        """
        return {"algo": self.algo, "proto": self.proto, "engine": self.engine, "profile": self.rules.profile.value,
                "max_size": self.rules.max_size, "order": self.order.value}


DEFAULT_SETTINGS = Settings()  # NCCL's own choice (NCCL_ALGO, NCCL_PROTO unset), the des engine, P2's rules, aligned


@dataclass(frozen=True)
class SearchOptions:
    """``exhaustive`` simulates every program; ``budget`` (seconds) and ``top_matrices`` trade exactness for time."""

    exhaustive: bool = False
    budget: float | None = None
    top_matrices: int | None = None

    @classmethod
    def of(cls, exhaustive: bool = False, budget: Any = None, top_matrices: Any = None) -> SearchOptions:
        if budget is not None:
            text = as_text(budget, "budget")
            try:
                seconds = float(text)
            except ValueError:
                raise InputError(f"budget: {text!r} is not a number of seconds") from None
            if not (0 < seconds < float("inf")):
                raise InputError(f"budget: {text!r} must be a positive number of seconds")
            budget = seconds
        return cls(bool(exhaustive), budget, optional_int(top_matrices, "top-matrices"))

    def bounded(self, engine: str) -> bool:
        """Whether the job bounds its programs first (the des engine, not exhaustive)."""
        return engine == "des" and not self.exhaustive

    def kwargs(self) -> dict[str, Any]:
        """The options of :func:`~p2sim.studies.search.run_search`."""
        return {"exhaustive": self.exhaustive, "budget": self.budget, "top_matrices": self.top_matrices}


def job_size_text(limits: Limits, search: SearchOptions, engine: str, total: int, what: str) -> str:
    """The job-size check, and how the job's simulations are announced.

    With the bounds, every program is bounded (a bound costs a lookup where steps repeat, and
    far less than a simulation) and only those that can still win are simulated: the job's
    estimated cost (:meth:`~.jobsize.Limits.check_cost`, which every command checks) limits it,
    and the simulation count only when ``--max-simulations`` is given.  A ``budget`` caps the time
    itself, so the simulation limit then does not apply.
    """
    if search.budget is None and (limits.simulations_given or not search.bounded(engine)):
        limits.check_simulations(total, what)
    if search.bounded(engine):
        return f"up to {plural(total, 'simulation')} (each program bounded first, simulated only if it can still win)"
    return plural(total, "simulation")


@dataclass(frozen=True)
class RunOptions:
    """Where the simulations run: ``workers`` local processes (``None``: every core; 1: in-process) or Dask.

    ``scheduler`` is ``local:N`` or a scheduler address with its scheme and port
    (``node12`` is ``tcp://node12:8786``); with ``scheduler_file`` (the JSON file
    ``dask scheduler --scheduler-file`` writes) it is the address read from that file when the
    request was built.  Reaching the scheduler, and waiting for its workers, happens when the
    executor starts (:func:`~p2sim.studies.executor.dask_executor`).
    """

    workers: int | None = None
    scheduler: str | None = None
    scheduler_file: str | None = None

    @classmethod
    def of(cls, workers: Any = None, scheduler: Any = None, scheduler_file: Any = None) -> RunOptions:
        n = optional_int(workers, "workers")
        if scheduler is not None and scheduler_file is not None:
            raise InputError("scheduler-file: give either --scheduler or --scheduler-file, not both")
        if scheduler_file is not None:
            path = os.fspath(scheduler_file) if isinstance(scheduler_file, os.PathLike) else \
                as_text(scheduler_file, "scheduler-file")
            if n is not None:
                raise InputError("workers: --workers sizes the local process pool; with --scheduler-file the "
                                 "scheduler's workers run the simulations")
            return cls(None, scheduler_from_file(path), path)
        if scheduler is None:
            return cls(n, None)
        address = check_scheduler(as_text(scheduler, "scheduler"))
        if n is not None:
            raise InputError("workers: --workers sizes the local process pool; with --scheduler give local:N instead")
        return cls(None, address)

    def executor(self, tasks: int | None = None) -> AbstractContextManager[Executor]:
        """The executor, with at most ``tasks`` local workers."""
        return make_executor(self.workers, self.scheduler, tasks, self.scheduler_file)

    def processes(self, tasks: int | None) -> int:
        """Processes of this machine that build the job's structures (a Dask cluster's workers are not)."""
        if self.scheduler is not None:
            return 1
        return capped_workers(self.workers, tasks)

    def where(self, tasks: int | None) -> str:
        """Where ``tasks`` tasks run, for the job-size line."""
        if self.scheduler_file is not None:
            return f"on Dask ({self.scheduler}, from {self.scheduler_file})"
        if self.scheduler is not None:
            return f"on Dask ({self.scheduler})"
        n = capped_workers(self.workers, tasks)
        return "in this process" if n == 1 else f"on {n} worker processes"


def limits_of(yes: bool = False, max_matrices: Any = None, max_simulations: Any = None) -> Limits:
    """The job-size limits: ``yes`` lifts them, ``max_matrices`` / ``max_simulations`` raise (or lower) one."""
    return Limits.of(bool(yes), optional_int(max_matrices, "max-matrices"),
                     optional_int(max_simulations, "max-simulations"))

