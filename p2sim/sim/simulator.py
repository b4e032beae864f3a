"""Program-level simulation: lowered steps, buffer sizes, the engines that time a step, and reuse.

A program's steps run one after another (a collective needs every member, and every
member has finished the previous step); the groups of one step run concurrently and
share links.  The time of a step depends only on (algorithm, collective, groups,
buffers), and many programs share steps, so step results are cached in the simulator's
:class:`~p2sim.sim.context.SimulationContext` (shared by the simulators a study gives one context).

Three engines time a step (:mod:`p2sim.sim.engines`, ``--engine``):

``des``
    the contention-aware discrete-event fluid model (:mod:`p2sim.sim.engine`): every
    channel flow of every group of a step shares the links max-min fairly, each under
    its per-channel caps (private virtual links) and its collective's caps (a virtual
    link its flows share);
``analytic``
    NCCL's tuning model per group -- latency plus buffer over the collective's
    uncontended algorithm bandwidth -- with no contention between groups;
``baseline``
    the link-bottleneck formulas of one ring or tree per group
    (:mod:`p2sim.collectives.baseline`): the reference validation compares against.

Each group's algorithm and protocol are what NCCL would pick (``algo="auto"``, the
default) or what ``algo`` / ``proto`` force, like ``NCCL_ALGO`` / ``NCCL_PROTO``.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..collectives import Collective, Expander, check_algo, check_proto, step_fractions
from ..collectives.volumes import fractions_memo, next_fractions
from ..collectives.algorithms import FALLBACK, baseline_algorithm, forced_algorithms
from ..collectives.choice import serves
from ..collectives.p2p import P2P_OPS
from ..collectives.binding import Binding, collective_binding, tied_classes
from ..util.errors import InputError, ProgramError, SemanticsError
from ..formalism.hierarchy import LoweredStep, Lowering
from ..formalism.program import Instruction, Program
from ..formalism.semantics import State, apply
from ..topology import Topology
from .context import SimulationContext
from .engine import run_flow_arrays, run_flows
from .flows import flow_specs, moved_flow_arrays
from .engines import check_engine
from .model_config import ModelConfig
from .moved import StepGeometry, link_work, moved_classes
from .results import ProgramResult, StepResult
from .sim_settings import DEFAULT_SIM_SETTINGS, SimSettings

__all__ = ["Simulator", "check_program_completes", "BOUND_SLACK"]

# steps of up to this many groups expand group by group; larger ones once per class of groups
# moved between nodes, in array passes (measured on benchmarks/simulate_appendix.py, at most 16
# groups a step, and on benchmarks/rank_scale.py, up to 256)
_FEW_GROUPS = 16

# relative margin between Simulator.lower_bound and simulated times: the engine ends a flow
# with up to 1e-9 of it left (engine._DONE), and sums in other orders differ by ulps
BOUND_SLACK = 1e-6
# Simulator.lower_bound's partial sums (of some steps, in any order) against its full sum in step order:
# floats summing n >= 0 terms in two orders differ by at most about 2 n 2**-53 relative (1e-12 covers
# thousands of steps)
CUT_MARGIN = 1e-12


class _Prefix(NamedTuple):
    """A program prefix's last step, in :meth:`Simulator.lower_bounds`' tree of prefixes."""

    children: dict  # the prefixes one instruction longer, by that instruction
    step: LoweredStep
    fractions: tuple[float, ...]
    held: np.ndarray  # rows each device holds after the prefix (collectives.volumes.next_fractions)
    key: tuple  # the step's key in the simulator's step cache (Simulator._step_key)


def check_program_completes(lowering: Lowering, program: Program) -> None:
    """Raise :class:`ProgramError` unless the program is valid and reduces fully."""
    sh = lowering.synthesis
    state = State.initial(sh.size)
    for n, ins in enumerate(program.instructions, 1):
        try:
            state = apply(state, ins.op, sh.groups(ins))
        except SemanticsError as e:
            raise ProgramError(f"program: step {n} {ins.text} is invalid here: {e}") from None
    if not state.is_goal:
        raise ProgramError(f"program: {program.text!r} does not complete the reduction")


class Simulator:
    """Simulates programs on one topology with one :class:`~p2sim.sim.sim_settings.SimSettings` (algorithm
    setting, protocol, engine and rates; default: NCCL's choice with the des engine and the system file's rates).

    ``context`` holds what is cached (expansions, structures, step results): simulators of one
    topology given the same :class:`~p2sim.sim.context.SimulationContext` share it; without one a
    simulator has its own.  ``trace`` keeps every flow (for a Chrome trace).

    Examples
    --------
    >>> from p2sim.topology import load_system
    >>> from p2sim.formalism.placement import Placement
    >>> from p2sim.formalism.program import parse_program
    >>> topo = load_system("a100", nodes=2)
    >>> lw = Lowering.of(Placement.of(topo.hierarchy, [32], [[2, 16]]), [0])
    >>> r = Simulator(topo, SimSettings("ring")).simulate(lw, parse_program("AllReduce(slice=0, Inside)"), 2**32)
    >>> round(r.total_seconds, 2)   # 2*31/32 * 4 GiB over one 8 GB/s NIC
    1.04
    """

    def __init__(self, topo: Topology, settings: SimSettings = DEFAULT_SIM_SETTINGS,
                 context: SimulationContext | None = None, trace: bool = False) -> None:
        if context is not None and context.topo is not topo:
            raise ValueError("Simulator: the context belongs to another topology")
        if not isinstance(settings, SimSettings):  # the loose strings it once took: Simulator(topo, "ring")
            raise TypeError(f"Simulator: settings is a SimSettings (SimSettings(algo, proto, engine, config)), "
                            f"not {settings!r}")
        self.topo = topo
        self.context = SimulationContext(topo) if context is None else context
        self.settings = settings
        self.algo = check_algo(settings.algo)
        self.proto = check_proto(settings.proto)
        self.engine = check_engine(settings.engine)
        self.config = ModelConfig.of(topo.spec) if settings.config is None else settings.config
        self.trace = trace
        rates = self.config.resolve(topo.spec)
        self.expander = Expander(topo, rates, self.context)
        # a step's result depends on these and the step alone: simulators given one context share them
        # (a traced simulator keeps its own, with the traces)
        self._steps: dict[tuple, StepResult] = {} if trace else self.context.steps(self.proto, self.engine, rates)
        self._seen: dict[int, tuple[object, bytes]] = {}
        # a step's classes and moved links, for its bounds at other sizes (and the other simulators of contexts
        # that share them: what-if points searched together)
        self._geometry = StepGeometry(topo, store=self.context.geometry)
        why = self.expander.why_not(self.algo, proto=self.proto)
        if why is not None:  # NCCL refuses an NCCL_ALGO it cannot honour (enqueue.cc)
            raise InputError(f"algo: {self.algo} cannot run on {topo.spec.name}: {why}")
        self._refused: dict[bytes, str | None] = {}

    def simulate(self, lowering: Lowering, program: Program, bytes_per_gpu: float) -> ProgramResult:
        """Simulate one program (which must be valid for ``lowering``)."""
        if lowering.placement.devices != self.topo.devices:
            raise ProgramError(
                f"matrix: the placement has {lowering.placement.devices} devices, the system {self.topo.devices}"
            )
        steps = lowering.lower(program)
        self.check_forced(program, steps)
        fractions = step_fractions(lowering, program, self.context.row_counts)
        return ProgramResult(program.text, tuple(self._step(s, f, bytes_per_gpu) for s, f in zip(steps, fractions)))

    def check_forced(self, program: Program, steps: Sequence[LoweredStep]) -> None:
        """Refuse, before simulating, a forced algorithm that a step's collective has but one of its groups
        cannot run, naming the step: NCCL fails that communicator's collective ("no algorithm/protocol
        available", enqueue.cc).  A step whose collective the algorithm does not have at all runs as a ring
        (P2's NCCL_ALGO=Tree runs, docs/model.md); a command whose collectives it has none of is refused
        before (:func:`p2sim.collectives.choice.serves`)."""
        if all(a.any_group for a in forced_algorithms(self.algo)):  # rings and trees run any group they serve
            return
        for n, (ins, step) in enumerate(zip(program.instructions, steps), 1):
            op = step.op.value
            if not serves(self.algo, op):
                continue
            key = self._digest(step)
            if key not in self._refused:
                seen, why = set(), None
                for g in step.groups:
                    shape = self.expander.shape(g)
                    if shape not in seen:
                        seen.add(shape)
                        why = self.expander.why_not(self.algo, op, g, self.proto)
                        if why is not None:
                            break
                self._refused[key] = why
            if self._refused[key] is not None:
                raise InputError(f"algo: {self.algo} cannot run step {n} {ins.text} of {program.text!r}: "
                                 f"{self._refused[key]}")

    def _step_algo(self, op: str) -> str:
        """The setting a step's results are kept under: a forced algorithm that lacks the step's collective
        runs it as a ring (Expander.choose: NCCL's ring backup), so it shares the ring's results."""
        return self.algo if serves(self.algo, op) else FALLBACK.name

    def _digest(self, value: LoweredStep | tuple[float, ...]) -> bytes:
        """A 160-bit digest of a lowered step or of its groups' buffer fractions, computed once per
        object (the lowering hands out the same objects again and again): the shared step
        results are keyed by it rather than by groups of thousands of GPUs."""
        hit = self._seen.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        if isinstance(value, LoweredStep):
            arr = value.array
            if arr is not None:  # groups of one size: their shape and the array say it all
                data = value.op.value.encode() + b"|" + np.array(arr.shape, np.int64).tobytes() + b"|" + arr.tobytes()
            else:
                sizes = np.fromiter(map(len, value.groups), np.int64, len(value.groups))
                members = np.fromiter(itertools.chain.from_iterable(value.groups), np.int64, int(sizes.sum()))
                data = value.op.value.encode() + b"|" + sizes.tobytes() + b"|" + members.tobytes()
        else:
            data = np.asarray(value, dtype=float).tobytes()
        digest = hashlib.blake2b(data, digest_size=20).digest()
        self._seen[id(value)] = (value, digest)  # kept alive while this simulator is: its id stays its own
        return digest

    def _step_key(self, step: LoweredStep, fractions: tuple[float, ...], nbytes: float, bound: bool) -> tuple:
        return bound, self._step_algo(step.op.value), self._digest(step), self._digest(fractions), nbytes

    def _step(self, step: LoweredStep, fractions: tuple[float, ...], nbytes: float, bound: bool = False,
              key: tuple | None = None):
        """:meth:`step` (or :meth:`step_bound`) of a lowered step and its groups' buffer fractions (``key``:
        its :meth:`_step_key`, where known)."""
        key = self._step_key(step, fractions, nbytes, bound) if key is None else key
        hit = self._steps.get(key)
        if hit is None:
            volumes = tuple((np.asarray(fractions) * nbytes).tolist())  # as step_volumes computes them
            hit = self._steps[key] = self._step_bound(step, volumes) if bound else self._simulate_step(step, volumes)
        return hit

    def step(self, step: LoweredStep, volumes: Sequence[float]) -> StepResult:
        """One lowered step with each group's buffer in bytes (cached)."""
        algo = self._step_algo(step.op.value)
        key = (algo, step.op, step.groups, tuple(volumes))
        hit = self._steps.get(key)
        if hit is None:
            hit = self._simulate_step(step, volumes)
            self._steps[key] = hit
        return hit

    def lower_bound(self, lowering: Lowering, program: Program, bytes_per_gpu: float, cut: float = math.inf
                    ) -> float:
        """A lower bound of :meth:`simulate`'s total seconds with the ``des`` engine, without running it.

        Per step (see :meth:`step_bound`), summed in step order: microseconds where a simulation
        takes milliseconds, so a search can simulate only the programs whose bound can still win.

        ``cut``: a time that a search skips every program above (it skips a program whose bound
        less :data:`BOUND_SLACK` exceeds it).  Steps bounded before are summed first, and the others
        only while that sum is not yet surely past ``cut`` (by :data:`CUT_MARGIN`, which covers
        summing in another order): a program that cannot win stops at a partial sum -- still a
        lower bound, itself past ``cut`` -- and its other steps are never built.  A bound not
        past ``cut`` is the full sum in step order, the same number as without it.
        """
        return self.lower_bounds(lowering, [program], bytes_per_gpu, cut)[0]

    def lower_bounds(self, lowering: Lowering, programs: Sequence[Program], bytes_per_gpu: float,
                     cut: float = math.inf) -> list[float]:
        """:meth:`lower_bound` of each program (the same numbers), with the steps of the prefixes programs
        share (synthesis lists them as a tree) lowered, sized and keyed once."""
        memo = fractions_memo(lowering, self.context.row_counts)
        trie: dict[Instruction, _Prefix] = {}  # the programs' prefixes, as a tree of instructions
        out = []
        for program in programs:
            children, held, steps = trie, None, []
            for n, ins in enumerate(program.instructions):
                hit = children.get(ins)
                if hit is None:
                    step = lowering.lower_instruction(ins)
                    after, fractions = next_fractions(lowering, held, ins, memo, program.instructions[:n + 1])
                    hit = children[ins] = _Prefix({}, step, fractions, after,
                                                  self._step_key(step, fractions, bytes_per_gpu, True))
                children, held = hit.children, hit.held
                steps.append(hit)
            self.check_forced(program, [h.step for h in steps])
            out.append(self._bound_of(steps, bytes_per_gpu, cut))
        return out

    def _bound_of(self, steps: list[_Prefix], nbytes: float, cut: float) -> float:
        """A program's bound from its steps (its prefixes' last steps, in order; see :meth:`lower_bound`)."""
        if cut < math.inf:
            known, todo = 0.0, []
            for h in steps:
                v = self._steps.get(h.key)
                if v is None:
                    todo.append(h)
                else:
                    known += v
            for h in todo:
                if known * (1.0 - BOUND_SLACK) * (1.0 - CUT_MARGIN) > cut:
                    return known  # the steps left are never bounded: the program cannot win
                known += self._step(h.step, h.fractions, nbytes, True, h.key)
        return sum(self._step(h.step, h.fractions, nbytes, True, h.key) for h in steps)

    def step_bound(self, step: LoweredStep, volumes: Sequence[float]) -> float:
        """A lower bound of the step's event-driven time: the larger of two.

        * **Each group alone**: its start-up latency plus its buffer over its uncontended
          algorithm bandwidth -- the ``analytic`` engine's figure for the group.  In the
          event-driven run all of a group's flows start after that latency, and the link
          (or cap) that sets the algorithm bandwidth must carry ``buffer x its load per byte``
          at no more than its capacity, whatever the others do: so no group finishes earlier.
        * **Each link**: all groups' bytes over it (buffer x load per byte, summed over the
          groups) at its capacity, after the step's earliest start-up latency.

        Groups that are the same group moved between nodes (an exact symmetry of the
        system) are expanded once, and so are, once per step, classes of groups that are one group
        at other places of their nodes (the node's place symmetry, :mod:`p2sim.topology.places`).
        Floating-point sums may put the simulated time a few ulps (and the engine's completion
        slack, 1e-9 of a flow) below the bound; callers compare with a relative margin
        (:data:`BOUND_SLACK`).
        """
        algo = self._step_algo(step.op.value)
        key = ("bound", algo, step.op, step.groups, tuple(volumes))
        hit = self._steps.get(key)
        if hit is None:
            hit = self._steps[key] = self._step_bound(step, volumes)
        return hit

    def _step_bound(self, step: LoweredStep, volumes: Sequence[float]) -> float:
        op = step.op.value
        alone, start = 0.0, math.inf
        edges, loads = [], []  # per class: its collective's links, and its groups' bytes on them
        classes = self._geometry.classes(step, volumes)
        # classes that are one group at other places of its nodes (the node's place symmetry): its collective's
        # figures once, its links permuted for each (what the expander's placed collective would give: the same
        # classes in the same order, so the same sums)
        sym = None if op in P2P_OPS else self.topo.places
        same: dict[tuple, tuple] = {}
        forms = None
        if sym is not None and step.array is not None:  # every class's canonical group, in array passes
            forms = sym.canonical_rows(step.array[[int(m[0]) for _, _, _, m in classes]])
        for i, (g, v, shifts, _) in enumerate(classes):
            hit = None
            if sym is not None:
                if forms is None:
                    canon, perm = sym.canonical(g)
                    key = (canon, v)
                else:
                    canon, perm = forms[0][i], None if forms[2][i] else tuple(forms[1][i].tolist())
                    key = (canon.tobytes(), v)
                canon = tuple(canon.tolist()) if forms is not None else canon
                # a group's shape is made of what an automorphism keeps (node offsets, the GPUs' classes in the node
                # graph, their pairs' paths and NICs: places.py checks the NICs move with their GPUs), so every
                # class of a form should have its canonical group's; checked for every class all the same (where a
                # group's settings would differ it is bounded where it is, as the expander builds it), at no
                # measurable cost (shapes are kept per group: 61-62 against 56-63 CPU s checking only the first)
                if perm is None or self.expander.shape(canon) == self.expander.shape(g):
                    hit = same.get(key)
                    if hit is None:
                        hit = same[key] = self._class_bound(op, canon, v)
            if hit is None:
                hit, perm = self._class_bound(op, g, v), None
            a, latency, e, load = hit
            alone = max(alone, a)
            start = min(start, latency)
            edges.append(e if perm is None else sym.move_edges(e, perm))
            loads.append((load * v, len(shifts)))
        slots, used = self._geometry.slots(step, classes, edges)
        if not len(slots):
            return alone
        # every group's bytes in the links' order (each class's, once per group: np.tile's, without the copies)
        weights = np.empty(len(slots))
        at = 0
        for w, n in loads:
            weights[at:at + n * len(w)].reshape(n, len(w))[:] = w
            at += n * len(w)
        # summed per link used (its slot), in the order a count into every link would add them: the same sums
        work = np.bincount(slots, weights=weights, minlength=len(used))
        with np.errstate(divide="ignore"):
            links = float(np.max(work / self.topo.capacity[used]))
        return max(alone, start + links)

    def _class_bound(self, op: str, g: tuple[int, ...], v: float) -> tuple[float, float, np.ndarray, np.ndarray]:
        """A group's figures for :meth:`step_bound`: its analytic seconds, start-up latency and link load."""
        algo, proto = self.expander.choose(op, g, v, self.algo, self.proto)
        c = self.expander.collective(algo, proto, op, g, v)
        return (self.expander.analytic_seconds(c, v), c.latency, *c.link_load())

    def bindings(self, lowering: Lowering, program: Program, bytes_per_gpu: float) -> tuple[Binding, ...]:
        """What bounds each step of a program (:meth:`bound`), with the volumes :meth:`simulate` gives them."""
        steps = lowering.lower(program)
        fractions = step_fractions(lowering, program, self.context.row_counts)
        return tuple(self.binding(s, tuple(f * bytes_per_gpu for f in fr)) for s, fr in zip(steps, fractions))

    def binding(self, step: LoweredStep, volumes: Sequence[float]) -> Binding:
        """What bounds the step: its slowest group's own resource, or a link its groups share.

        The same two terms as :meth:`step_bound`: each group alone
        (:func:`~p2sim.collectives.binding.collective_binding`), and each link's bytes from every
        group at its capacity after the earliest start-up; the larger names the resource.
        """
        op = step.op.value
        gpn = self.topo.gpus_per_node
        alone: Binding | None = None
        start = math.inf
        moved, loads = [], []  # per class of moved groups: (groups, edges) link ids, and bytes on each
        for g, v, shifts, _ in moved_classes(self.topo, step, volumes):
            algo, proto = self.expander.choose(op, g, v, self.algo, self.proto)
            c = self.expander.collective(algo, proto, op, g, v)
            b = collective_binding(c, self.topo.capacity, self.topo.edge_class, v)
            alone = b if alone is None or b.seconds > alone.seconds else alone
            start = min(start, c.latency)
            e, load = c.link_load()
            moved.append(np.asarray(self.topo.move_edges(e, min(g) // gpn, shifts)).reshape(len(shifts), -1))
            loads.append(np.tile(load * v, len(shifts)))
        if alone is None:
            raise ProgramError("bound: the step has no groups")
        e = np.concatenate([m.ravel() for m in moved])
        if not len(e):
            return alone
        used, work = link_work(e, np.concatenate(loads), len(self.topo.capacity))
        per_link = work / self.topo.capacity[used]
        k = int(np.argmax(per_link))
        if start + float(per_link[k]) <= alone.seconds * (1 + 1e-9):
            return alone
        link = int(used[k])
        groups = sum(int(np.count_nonzero((m == link).any(axis=1))) for m in moved)
        return Binding(tied_classes(self.topo.edge_class, used, per_link, k), "link", start + float(per_link[k]), groups)

    def collectives(self, op: str, groups: Sequence[Sequence[int]], volumes: Sequence[float]) -> list[Collective]:
        """Each group's collective, with the algorithm and protocol NCCL would run (or the forced ones)."""
        out = []
        for g, v in zip(groups, volumes):
            algo, proto = self.expander.choose(op, g, v, self.algo, self.proto)
            out.append(self.expander.collective(algo, proto, op, g, v))
        return out

    def _simulate_step(self, step: LoweredStep, volumes: Sequence[float]) -> StepResult:
        op = step.op.value
        gpn = self.topo.gpus_per_node  # node_of(d) is d // gpus_per_node
        spanned = _spanned(step, gpn)
        if self.engine == "baseline":
            base = baseline_algorithm(self.algo)
            runs = [base.baseline(self.topo, op, g, v) for g, v in zip(step.groups, volumes)]
            seconds, used = max(r[0] for r in runs), runs[0][1]
            return StepResult(op, seconds, *step.shape, spanned, max(volumes),
                              ((used, "Simple", 1),))
        if self.trace or step.shape[0] <= _FEW_GROUPS:  # every group's collective (the trace's tracks)
            colls = self.collectives(op, step.groups, volumes)
            choices = tuple(sorted({(c.algo, c.proto, c.channels) for c in colls}))
            if self.engine == "analytic":
                seconds = max(self.expander.analytic_seconds(c, v) for c, v in zip(colls, volumes))
                return StepResult(op, seconds, *step.shape, spanned, max(volumes), choices)
            flows, extra = flow_specs(colls, volumes, len(self.topo.capacity))
            capacity = np.concatenate([self.topo.capacity, np.asarray(extra, dtype=float)])
            seconds, records, samples = run_flows(flows, capacity, record=self.trace)
            trace = ()
            if self.trace:  # records, rate samples, and each flow's group
                trace = (tuple(records), tuple(samples), tuple(g for g, c in enumerate(colls) for _ in c.flows))
            return StepResult(op, seconds, *step.shape, spanned, max(volumes), choices, trace)
        # one collective per class of groups that are the same group moved between nodes: the
        # others are it moved (an exact symmetry), their flows its flows shifted
        classes = []
        for g, v, shifts, members in self._geometry.classes(step, volumes):  # the bounds' (the same classes)
            algo, proto = self.expander.choose(op, g, v, self.algo, self.proto)
            classes.append((self.expander.collective(algo, proto, op, g, v), v, shifts, members))
        choices = tuple(sorted({(c.algo, c.proto, c.channels) for c, _, _, _ in classes}))
        if self.engine == "analytic":
            seconds = max(self.expander.analytic_seconds(c, v) for c, v, _, _ in classes)
        else:
            flows, capacity = moved_flow_arrays(self.topo, op, step, classes)
            seconds = run_flow_arrays(flows, capacity)[0]
        return StepResult(op, seconds, *step.shape, spanned, max(volumes), choices)


def _spanned(step: LoweredStep, gpn: int) -> int:
    """The most nodes one group of the step spans."""
    arr = step.array
    if arr is None:
        return max(len({d // gpn for d in g}) for g in step.groups)
    nodes = np.sort(arr // gpn, axis=1)
    return int(1 + np.max(np.count_nonzero(nodes[:, 1:] != nodes[:, :-1], axis=1), initial=0))

