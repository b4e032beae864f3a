"""A collective over a range of sizes, as ``nccl-tests`` would run it: what NCCL picks and how long it takes.

Sizes go from ``first`` to ``last`` by a factor (nccl-tests' ``-b -e -f``); each point is
one collective on the given GPUs, simulated with the algorithm and protocol NCCL would
pick (or the forced ones).  ``count`` is nccl-tests' element count for 4-byte floats.

Examples
--------
>>> from p2sim.topology import load_system
>>> pts = sweep_sizes(load_system("dgx-h100", 1), "AllReduce", range(8), sizes(8, 2**30, 1024))
>>> [(p.size, p.algo, p.proto) for p in pts]
[(8, 'ring', 'LL'), (8192, 'ring', 'LL'), (8388608, 'nvls', 'Simple')]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..util.errors import InputError
from ..formalism.hierarchy import LoweredStep
from ..formalism.semantics import Op
from ..sim import Simulator
from ..topology import Topology
from ..collectives.busbw import COLLECTIVES, bus_factor

__all__ = ["SweepPoint", "sizes", "sweep_sizes"]


@dataclass(frozen=True)
class SweepPoint:
    size: int
    count: int
    seconds: float
    algbw: float  # bytes/s
    busbw: float
    algo: str
    proto: str
    channels: int

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "count": self.count, "seconds": self.seconds, "algbw_GBps": self.algbw / 1e9,
                "busbw_GBps": self.busbw / 1e9, "algo": self.algo, "proto": self.proto, "channels": self.channels}


def sizes(first: int, last: int, factor: int) -> list[int]:
    """nccl-tests' sizes: ``first``, ``first x factor``, ... up to ``last``."""
    if last < first:
        raise InputError(f"maxbytes: {last} is below minbytes {first}")
    if factor < 2:
        raise InputError(f"stepfactor: {factor} must be at least 2")
    out = [first]
    while out[-1] * factor <= last:
        out.append(out[-1] * factor)
    return out


def sweep_sizes(topo: Topology, collective: str, members: Iterable[int], points: Sequence[int], algo: str = "auto",
                proto: str = "auto", model: str = "des") -> list[SweepPoint]:
    """Simulate ``collective`` over ``members`` at every size."""
    if collective not in COLLECTIVES:
        raise InputError(f"collective: {collective!r} is not one of {', '.join(COLLECTIVES)}")
    group = tuple(members)
    if len(group) < 2:
        raise InputError("gpus: a collective needs at least two GPUs")
    sim = Simulator(topo, algo, model, proto=proto)
    step = LoweredStep(Op(collective), (group,))
    out = []
    for size in points:
        r = sim.step(step, (float(size),))
        a, p, c = r.choices[0]
        out.append(SweepPoint(size, size // 4, r.seconds, size / r.seconds,
                              size / r.seconds * bus_factor(collective, len(group)), a, p, c))
    return out
