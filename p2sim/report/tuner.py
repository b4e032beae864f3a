"""``--emit nccl-tuner``: NCCL's example tuner plugin configuration for the ranges where NCCL's choice loses.

NCCL's example tuner (``plugins/tuner/example`` in NCCL's repository) reads a CSV file
named by ``NCCL_TUNER_CONFIG_FILE``, one line per rule::

    collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff

with lower-case names (``allreduce``; ``ring``, ``tree``, ``nvls``, ``nvls_tree``,
``collnet_direct``, ``collnet_chain``; ``ll``, ``ll128``, ``simple``), ``-1`` for "any" or
"NCCL's default", and ``#`` comment lines.  p2sim writes one rule per communicator and
size range where it predicts a faster pair (:mod:`p2sim.studies.tuner`), with the channel
count p2sim predicts NCCL runs that pair on (its times assume it), any pipelined-op count
and buffer registration; a comment line above each rule gives both predicted times.
Channels are never ``-1``: the example tuner sets ``*nChannels = 1`` before it matches
and keeps that 1 for ``-1`` or where no rule matches (``pluginGetCollInfo`` in
``plugin.c``), and NCCL runs the collective on whatever count the tuner returns
(``ncclGetAlgoInfo``, ``src/enqueue.cc``): ``-1`` means one channel.  So the other sizes
of the same communicators get rules too, with NCCL's own choice and count.  The tuner tells
communicators apart only by node and rank counts: where two steps share them but not their
ranges, the first step's rules are written and the conflict is said.

The plugin reads the file with ``fgets`` into a 256-byte buffer (``MAX_LINE_LENGTH``): a
longer line is read as two, and the second half of a long comment is no comment.  Comment
lines are therefore wrapped at :data:`MAX_LINE` characters.
"""

from __future__ import annotations

import textwrap
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

__all__ = ["tuner_text", "rank_tuner", "plan_tuner", "sweep_tuner", "COLUMNS", "MAX_LINE"]

COLUMNS = "collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff"

# the example plugin reads lines with fgets(line, 256, file) (MAX_LINE_LENGTH in plugin.c): 254
# characters and the newline are one read; a margin below that keeps every line whole
MAX_LINE = 200


def _line(r) -> str:
    return (f"{r.collective.lower()},{r.min_bytes},{r.max_bytes},{r.algo},{r.proto.lower()},{r.channels},{r.nodes},"
            f"{r.ranks},-1,-1")


def _comment(text: str, indent: str = "") -> list[str]:
    """``text`` as ``#`` lines of at most :data:`MAX_LINE` characters (continuations indented)."""
    return textwrap.wrap(text, MAX_LINE, initial_indent=f"# {indent}", subsequent_indent=f"# {indent}    ",
                         break_long_words=True, break_on_hyphens=False)


def tuner_text(context: Sequence[str], comms: Sequence[Communicator], min_gain: float) -> str:
    """The configuration file: ``context`` lines as comments, then each communicator's rules.

    Where any communicator has a faster pair, every communicator's other sizes get a rule
    for NCCL's own choice and channel count too: the plugin runs a size no rule matches on
    one channel.  Where none has, the file has no rules and says not to load the plugin.
    """
    out = ["# NCCL example tuner configuration (NCCL plugins/tuner/example): load the plugin with",
           "# NCCL_TUNER_PLUGIN=<path>/libnccl-tuner-example.so and NCCL_TUNER_CONFIG_FILE=<this file>"]
    for c in context:
        out += _comment(c)
    if not any(c.ranges for c in comms):
        out += _comment("no rules: NCCL's automatic choice is predicted best for every communicator and size; do not "
                        "load the plugin (it runs every collective that no rule matches on one channel)")
        return "\n".join(out) + "\n"
    out += [f"# rules: where p2sim predicts a choice at least {min_gain:.2f}x faster than NCCL's own, that choice; "
            "at the",
            "# other sizes of the same communicators, NCCL's own: the plugin runs every collective that no rule",
            "# matches on one channel (as it does other communicators' and sizes above the largest here)",
            "# channels: the count p2sim predicts NCCL runs the choice on"]
    out.append(f"# {COLUMNS}")
    written: dict[tuple[str, int, int], Communicator] = {}
    for c in comms:
        head = (f"{c.label}: {c.collective} on {len(c.members)} ranks of {c.nodes} node{'s' if c.nodes > 1 else ''} "
                f"(group {_members(c.members)})")
        key = (c.collective, len(c.members), c.nodes)
        first = written.get(key)
        if first is not None:
            if first.rules != c.rules:
                out += _comment(head + f"; same nodes and ranks as {first.label}, whose rules NCCL would apply here "
                                       "too (the tuner cannot tell the two apart): not written")
            continue
        written[key] = c
        out += _comment(head + ("" if c.ranges else ": NCCL's own choice is predicted best at every size"))
        for r in c.rules:
            low = "0 <=" if r.min_bytes == 0 else f"{format_bytes(r.min_bytes - 1)} <"
            on = f"on {r.channels} channel{'s' if r.channels > 1 else ''}"
            if r in c.ranges:
                text = (f"NCCL picks {r.default} ({format_seconds(r.default_seconds)} at {format_bytes(r.max_bytes)}), "
                        f"{r.algo}/{r.proto} {on} predicted {format_seconds(r.seconds)} ({r.gain:.2f}x)")
            else:
                text = (f"NCCL's own {r.algo}/{r.proto} {on} ({format_seconds(r.seconds)} at "
                        f"{format_bytes(r.max_bytes)})")
            out += _comment(f"{low} size <= {format_bytes(r.max_bytes)}: {text}", "  ")
            out.append(_line(r))
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
    comms = _program_comms(topo, placement, result.reduce_axes, best.timing.text, result.request.settings.order, "")
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
        comms += _program_comms(topo, placement, c.reduction.axes, c.program, result.request.settings.order,
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
