"""``--emit nccl-tuner``: NCCL's example tuner plugin configuration for the ranges where NCCL's choice loses.

NCCL's example tuner (``plugins/tuner/example`` in NCCL's repository) reads a CSV file
named by ``NCCL_TUNER_CONFIG_FILE``, one line per rule::

    collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff

with lower-case names (``allreduce``; ``ring``, ``tree``, ``nvls``, ``nvls_tree``,
``collnet_direct``, ``collnet_chain``; ``ll``, ``ll128``, ``simple``), ``-1`` for "any" or
"NCCL's default", and ``#`` comment lines.  p2sim writes one rule per communicator and
size range where it predicts a faster pair (:mod:`p2sim.studies.tuner`), channels ``-1``
(p2sim's times assume NCCL's own channel count), any pipelined-op count and buffer
registration; a comment line above each rule gives both predicted times.  The tuner
tells communicators apart only by node and rank counts: where two steps share them but
not their ranges, the first step's rules are written and the conflict is said.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formalism.hierarchy import Lowering, LoweredStep
from ..formalism.placement import Placement, format_matrix
from ..formalism.program import parse_program
from ..formalism.semantics import Op
from ..studies.plan import PlanResult
from ..studies.rank import RankResult
from ..studies.size_sweep import SweepResult
from ..studies.tuner import MIN_GAIN, Communicator, communicators
from ..util.units import format_bytes, format_seconds

__all__ = ["tuner_text", "rank_tuner", "plan_tuner", "sweep_tuner", "COLUMNS"]

COLUMNS = "collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff"


def _line(r) -> str:
    return (f"{r.collective.lower()},{r.min_bytes},{r.max_bytes},{r.algo},{r.proto.lower()},-1,{r.nodes},{r.ranks},"
            "-1,-1")


def tuner_text(context: Sequence[str], comms: Sequence[Communicator], min_gain: float) -> str:
    """The configuration file: ``context`` lines as comments, then each communicator's rules."""
    out = ["# NCCL example tuner configuration (NCCL plugins/tuner/example): load the plugin with",
           "# NCCL_TUNER_PLUGIN=<path>/libnccl-tuner-example.so and NCCL_TUNER_CONFIG_FILE=<this file>"]
    out += [f"# {c}" for c in context]
    out += [f"# rules: where p2sim predicts a choice at least {min_gain:.2f}x faster than NCCL's own; channels -1 "
            "keeps NCCL's count", f"# {COLUMNS}"]
    written: dict[tuple[str, int, int], Communicator] = {}
    rules = 0
    for c in comms:
        head = (f"# {c.label}: {c.collective} on {len(c.members)} ranks of {c.nodes} node{'s' if c.nodes > 1 else ''} "
                f"(group {_members(c.members)})")
        key = (c.collective, len(c.members), c.nodes)
        first = written.get(key)
        if first is not None and c.ranges:
            if first.ranges != c.ranges:
                out.append(head + f"; same nodes and ranks as {first.label}, whose rules NCCL would apply here too "
                                  "(the tuner cannot tell the two apart): not written")
            continue
        if not c.ranges:
            out.append(head + ": NCCL's own choice is predicted best at every size")
            continue
        written[key] = c
        out.append(head)
        for r in c.ranges:
            low = "0" if r.min_bytes == 0 else f"{format_bytes(r.min_bytes - 1)} <"
            out.append(f"#   {low} size <= {format_bytes(r.max_bytes)}: NCCL picks {r.default} "
                       f"({format_seconds(r.default_seconds)} at {format_bytes(r.max_bytes)}), "
                       f"{r.algo}/{r.proto} predicted {format_seconds(r.seconds)} ({r.gain:.2f}x)")
            out.append(_line(r))
            rules += 1
    if not rules:
        out.append("# no rules: NCCL's automatic choice is predicted best for every communicator and size")
    return "\n".join(out) + "\n"


def _members(members: Sequence[int]) -> str:
    m = list(members)
    if m == list(range(m[0], m[0] + len(m))):
        return f"{m[0]}..{m[-1]}"
    return "[" + ", ".join(map(str, m[:8])) + (", ..]" if len(m) > 8 else "]")


def _program_comms(topo, placement, reduce_axes, program: str, order, label: str) -> list[Communicator]:
    prog = parse_program(program)
    steps = Lowering.of(placement, reduce_axes, order).lower(prog)
    return communicators(topo, steps, [f"{label}step {i} {ins.text}" for i, ins in enumerate(prog.instructions, 1)])


def rank_tuner(result: RankResult) -> str:
    """The tuner file for the best placement's program of a ranking."""
    job, best = result.request.job, result.best
    topo = job.topology
    placement = Placement.of(topo.hierarchy, job.axes, best.matrix)
    comms = _program_comms(topo, placement, result.reduce_axes, best.timing.text, result.request.order, "")
    context = [f"p2sim rank: {topo.spec.name}, {topo.node_count} nodes; placement {result.placement(best.matrix)}",
               f"program {best.timing.text} ({format_seconds(best.seconds)} predicted)"]
    return tuner_text(context, comms, MIN_GAIN)


def plan_tuner(result: PlanResult) -> str:
    """The tuner file for every reduction of the best plan."""
    job, best = result.request.job, result.best
    topo = job.topology
    placement = Placement.of(topo.hierarchy, job.axes, best.matrix)
    comms = []
    for c in best.choices:
        over = ", ".join(job.axis_names[a] for a in c.reduction.axes)
        comms += _program_comms(topo, placement, c.reduction.axes, c.program, result.request.order,
                                f"reduction over {over}, ")
    context = [f"p2sim plan: {topo.spec.name}, {topo.node_count} nodes; matrix {format_matrix(best.matrix)}"]
    return tuner_text(context, comms, MIN_GAIN)


def sweep_tuner(result: SweepResult) -> str:
    """The tuner file for the swept communicator over the sweep's sizes."""
    req = result.request
    topo = req.topology
    step = LoweredStep(Op(req.collective), (tuple(req.members),))
    comms = communicators(topo, [step], ["sweep"], req.sizes)
    context = [f"p2sim sweep: {topo.spec.name}, {topo.node_count} nodes x {req.gpus_per_node} GPUs, "
               f"{format_bytes(req.sizes[0])}..{format_bytes(req.sizes[-1])}"]
    return tuner_text(context, comms, MIN_GAIN)
