"""Chrome trace (chrome://tracing, Perfetto) of simulated programs.

Process 1 holds one track per group with a slice per collective (its transfer,
after its start-up latency); process 2 holds one counter per directed link with the
bytes/s it carries over time.  Steps follow each other on one time axis.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..sim import ProgramResult
from ..topology import Topology

__all__ = ["chrome_trace", "write_trace"]


def chrome_trace(topo: Topology, results: Sequence[ProgramResult]) -> dict[str, Any]:
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "collectives"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "links (bytes/s)"}},
    ]
    offset = 0.0
    edges = topo.edges
    for prog in results:
        for n, step in enumerate(prog.steps):
            if step.trace:
                records, samples = step.trace
                for tid, rec in enumerate(records):
                    events.append({
                        "ph": "X", "pid": 1, "tid": tid, "cat": step.op,
                        "name": f"{prog.text} | step {n + 1}: {rec.label}",
                        "ts": (offset + rec.start) * 1e6, "dur": (rec.end - rec.start) * 1e6,
                    })
                seen: set[int] = set()
                for s in samples:
                    for e, load in zip(s.edges.tolist(), s.load.tolist()):
                        if e >= len(edges):
                            continue  # a collective's private rate ceiling, not a link
                        seen.add(e)
                        u, v = edges[e]
                        events.append({"ph": "C", "pid": 2, "name": f"{u}->{v} [{topo.edge_class[e]}]",
                                       "ts": (offset + s.time) * 1e6, "args": {"bytes_per_s": load}})
                for e in sorted(seen):  # links fall idle when the step ends
                    u, v = edges[e]
                    events.append({"ph": "C", "pid": 2, "name": f"{u}->{v} [{topo.edge_class[e]}]",
                                   "ts": (offset + step.seconds) * 1e6, "args": {"bytes_per_s": 0.0}})
            offset += step.seconds
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def write_trace(path: str | Path, topo: Topology, results: Sequence[ProgramResult]) -> None:
    Path(path).write_text(json.dumps(chrome_trace(topo, results)))
