"""Where NCCL's own choice loses: size ranges and the algorithm and protocol to set instead.

For each communicator (a collective on one group of GPUs) and each size of a sweep,
p2sim times NCCL's automatic choice and every (algorithm, protocol) pair NCCL could run
there (:meth:`~p2sim.collectives.choice.Choice.available`), each as NCCL would run it when
forced (``NCCL_ALGO`` / ``NCCL_PROTO``).  Where a pair is predicted faster than the
default by more than ``min_gain``, that size gets it; neighbouring sizes with the same
pair form one range.  The ranges are what NCCL's example tuner plugin reads
(``plugins/tuner/example`` in NCCL: one line per collective, size range, algorithm,
protocol, channels, nodes and ranks): :mod:`p2sim.report.tuner` writes them.

Each range carries the channel count NCCL is predicted to run the pair on (what the forced
run used, :attr:`~p2sim.sim.results.StepResult.choices`): the example tuner has no "keep NCCL's
count" -- it sets ``*nChannels = 1`` before matching and leaves it there for ``-1``, and
``ncclGetAlgoInfo`` keeps any count a tuner returns (``src/enqueue.cc``) -- so the count is
written out.  NCCL lowers the count of small sizes (fewer bytes than threads x threshold per
channel), so neighbouring sizes merge only when their counts agree too.  For the same
reason a size where NCCL's own choice is best needs a rule as well once the plugin is
loaded, or it runs on one channel: :func:`size_ranges` gives those ranges too (NCCL's own
pair and predicted count), and :class:`Communicator` keeps both.

A size ``s`` of a sweep by factor ``f`` stands for the sizes above the previous point up
to ``s`` (the first point covers 0..s); the last point's range is closed at ``s``.

Examples
--------
>>> from p2sim.topology import load_system
>>> topo = load_system("dgx-h100", 2)
>>> rows = tuner_ranges(topo, "AllReduce", tuple(range(16)), [2**k for k in range(19, 24)])
>>> [(r.min_bytes, r.max_bytes, r.default, r.algo, r.proto, r.channels) for r in rows]
[(4194305, 8388608, 'nvls_tree/Simple', 'tree', 'LL128', 16)]
>>> round(rows[0].gain, 2)
2.25
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..formalism.hierarchy import LoweredStep
from ..formalism.semantics import Op
from ..sim import SimSettings, SimulationContext, Simulator
from ..topology import Topology

__all__ = ["TunerRange", "Communicator", "tuner_ranges", "size_ranges", "communicators", "MIN_GAIN", "TUNER_SIZES"]

# below this predicted speedup a change is not worth writing: p2sim's spread against
# published nccl-tests runs is larger than a few percent (README, validation)
MIN_GAIN = 1.05


@dataclass(frozen=True)
class TunerRange:
    """One size range of one communicator where another (algorithm, protocol) is predicted faster."""

    collective: str
    min_bytes: int
    max_bytes: int
    algo: str
    proto: str
    channels: int  # NCCL's channel count for the pair at the range's largest size, as p2sim predicts it
    nodes: int
    ranks: int
    default: str  # NCCL's own choice there, "algo/proto"
    default_seconds: float  # at the range's largest sampled size
    seconds: float
    members: tuple[int, ...]  # the group p2sim timed (the first of its shape)

    @property
    def gain(self) -> float:
        return self.default_seconds / self.seconds

    def to_json(self) -> dict[str, Any]:
        return {"collective": self.collective, "min_bytes": self.min_bytes, "max_bytes": self.max_bytes,
                "algo": self.algo, "proto": self.proto, "channels": self.channels, "nodes": self.nodes,
                "ranks": self.ranks,
                "default": self.default, "default_seconds": self.default_seconds, "seconds": self.seconds,
                "gain": self.gain, "members": list(self.members)}


def _time(ctx: SimulationContext, sims: dict, algo: str, proto: str, op: str, members: tuple[int, ...],
          size: int) -> tuple[float, str, str, int]:
    """The step's time and the (algorithm, protocol, channels) it ran (one group: one choice)."""
    sim = sims.get((algo, proto))
    if sim is None:
        sim = sims[(algo, proto)] = Simulator(ctx.topo, SimSettings(algo, proto=proto, engine="des"), context=ctx)
    r = sim.step(LoweredStep(Op(op), (members,)), (float(size),))
    a, p, c = r.choices[0]
    return r.seconds, a, p, c


def size_ranges(topo: Topology, collective: str, members: tuple[int, ...], sizes: Sequence[int],
                min_gain: float = MIN_GAIN) -> tuple[list[TunerRange], list[TunerRange]]:
    """Every size's range, split in two: where a forced (algorithm, protocol) beats NCCL's choice
    by ``min_gain`` (that pair), and where NCCL's own choice stays (its pair, gain 1).

    The second list is what a tuner file must also say for this communicator: the example
    plugin runs every size that no rule matches on one channel.
    """
    sims: dict = {}
    ctx = SimulationContext(topo)  # the simulators of every forced setting share its expansions
    auto = sims[("auto", "auto")] = Simulator(topo, SimSettings("auto", proto="auto", engine="des"), context=ctx)
    pairs = auto.expander.available(collective, members)
    nodes = len({topo.node_of(m) for m in members})
    # per size: (changed, algo, proto, channels, seconds, default text, default seconds)
    picks = []
    for size in sizes:
        base, da, dp, dc = _time(ctx, sims, "auto", "auto", collective, members, size)
        best = None
        for algo, proto in pairs:
            t, a, p, c = _time(ctx, sims, algo, proto, collective, members, size)
            if (a, p) != (da, dp) and t * min_gain < base and (best is None or t < best[3]):
                best = (a, p, c, t)
        picks.append((True,) + best + (f"{da}/{dp}", base) if best else (False, da, dp, dc, base, f"{da}/{dp}", base))
    changed: list[TunerRange] = []
    kept: list[TunerRange] = []
    for i, (size, pick) in enumerate(zip(sizes, picks)):
        out = changed if pick[0] else kept
        low = 0 if i == 0 else sizes[i - 1] + 1
        last = out[-1] if out else None
        _, algo, proto, channels, seconds, default, default_seconds = pick
        if last is not None and last.max_bytes == low - 1 and (last.algo, last.proto, last.channels) == pick[1:4]:
            low = last.min_bytes
            out.pop()
        out.append(TunerRange(collective, low, size, algo, proto, channels, nodes, len(members), default,
                              default_seconds, seconds, members))
    return changed, kept


def tuner_ranges(topo: Topology, collective: str, members: tuple[int, ...], sizes: Sequence[int],
                 min_gain: float = MIN_GAIN) -> list[TunerRange]:
    """The size ranges where a forced (algorithm, protocol) beats NCCL's choice by ``min_gain``."""
    return size_ranges(topo, collective, members, sizes, min_gain)[0]


# nccl-tests' default sweep bounds for a tuner file: 8 B to 4 GiB by factor 2 (the example
# tuner's own "every size" upper bound is 4294967295, just under 4 GiB)
TUNER_SIZES = tuple(2**k for k in range(3, 33))


@dataclass(frozen=True)
class Communicator:
    """One step of a chosen program as NCCL sees it: a collective on one group (the first of its step)."""

    label: str
    collective: str
    members: tuple[int, ...]
    nodes: int
    ranges: tuple[TunerRange, ...]  # where another pair is faster
    kept: tuple[TunerRange, ...] = ()  # the other sizes: NCCL's own pair and channels

    @property
    def rules(self) -> tuple[TunerRange, ...]:
        """Every range, in size order: what the tuner file says for this communicator."""
        return tuple(sorted(self.ranges + self.kept, key=lambda r: r.min_bytes))


def communicators(topo: Topology, steps: Sequence[LoweredStep], labels: Sequence[str],
                  sizes: Sequence[int] = TUNER_SIZES, min_gain: float = MIN_GAIN) -> list[Communicator]:
    """Each step's first group with its tuner ranges; steps of one collective on one group are timed once."""
    seen: dict[tuple[str, tuple[int, ...]], tuple[list[TunerRange], list[TunerRange]]] = {}
    out = []
    for step, label in zip(steps, labels):
        if not step.groups:
            continue
        key = (step.op.value, tuple(step.groups[0]))
        if key not in seen:
            seen[key] = size_ranges(topo, step.op.value, key[1], sizes, min_gain)
        nodes = len({topo.node_of(m) for m in key[1]})
        changed, kept = seen[key]
        out.append(Communicator(label, step.op.value, key[1], nodes, tuple(changed), tuple(kept)))
    return out
