"""Chrome trace (chrome://tracing, Perfetto) of simulated programs.

Process 1 holds one counter per directed link with the bytes/s it carries over
time; each simulated program is a process of its own (2, 3, ...) with one named
track per (step, group) -- ``step 2: AllReduce group 3 [GPUs 0-7]`` -- holding the
collective's start-up latency and its transfer, and inside it one slice per flow
(channels that take the same links) when there are several.  Track ids are unique across the
whole trace, and steps follow each other on one time axis.  Only the contention
model (``des``) simulates flows; the analytic model has nothing to trace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..formalism.hierarchy import LoweredStep
from ..util.fileio import replace_file
from ..sim import ProgramResult
from ..topology import Topology

__all__ = ["chrome_trace", "write_trace", "device_ranges"]

LINKS_PID = 1


def device_ranges(devices: Sequence[int]) -> str:
    """Devices as comma-separated runs of consecutive indices.

    Examples
    --------
    >>> device_ranges([0, 1, 2, 3, 16, 17, 18, 19, 5])
    '0-3,16-19,5'
    >>> device_ranges([4])
    '4'
    """
    runs: list[list[int]] = []
    for d in devices:
        if runs and d == runs[-1][1] + 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _meta(pid: int, name: str, value: Any, tid: int | None = None) -> dict[str, Any]:
    key = "sort_index" if name.endswith("sort_index") else "name"
    ev: dict[str, Any] = {"ph": "M", "pid": pid, "name": name, "args": {key: value}}
    if tid is not None:
        ev["tid"] = tid
    return ev


def chrome_trace(topo: Topology, programs: Sequence[tuple[ProgramResult, Sequence[LoweredStep]]]) -> dict[str, Any]:
    """The trace of programs simulated with tracing on, each with its lowered steps."""
    events: list[dict[str, Any]] = [_meta(LINKS_PID, "process_name", "links (bytes/s)"),
                                    _meta(LINKS_PID, "process_sort_index", 0)]
    offset = 0.0
    edges = topo.edges
    tid = 0
    for k, (prog, lowered) in enumerate(programs, 1):
        pid = LINKS_PID + k
        events += [_meta(pid, "process_name", f"program {k}: {prog.text}"), _meta(pid, "process_sort_index", k)]
        for n, (step, low) in enumerate(zip(prog.steps, lowered), 1):
            records, samples, owners = step.trace if step.trace else ((), (), ())
            # a group's collective is one or more flows (its channels); owners[i] is flow i's group
            for g, devices in enumerate(low.groups, 1):
                flows = [r for r, o in zip(records, owners) if o == g - 1]
                if not flows:
                    continue
                tid += 1
                choice = next(iter(step.choices), ("", "", 0))
                name = f"step {n}: {step.op} group {g} [GPUs {device_ranges(devices)}]"
                events += [_meta(pid, "thread_name", name, tid), _meta(pid, "thread_sort_index", tid, tid)]
                args = {"program": prog.text, "step": n, "group": g, "devices": list(devices)}
                start, end = min(r.start for r in flows), max(r.end for r in flows)
                if start > 0:
                    events.append({"ph": "X", "pid": pid, "tid": tid, "cat": "latency", "name": "start-up latency",
                                   "ts": offset * 1e6, "dur": start * 1e6, "args": args})
                events.append({"ph": "X", "pid": pid, "tid": tid, "cat": step.op,
                               "name": f"{step.op} transfer ({choice[0]}/{choice[1]})",
                               "ts": (offset + start) * 1e6, "dur": (end - start) * 1e6, "args": args})
                if len(flows) > 1:  # channels finish at their own pace under contention
                    for k, r in enumerate(flows, 1):
                        events.append({"ph": "X", "pid": pid, "tid": tid, "cat": "channels",
                                       "name": f"channels {k}/{len(flows)}", "ts": (offset + r.start) * 1e6,
                                       "dur": (r.end - r.start) * 1e6, "args": dict(args, label=r.label)})
            seen: set[int] = set()
            for s in samples:
                for e, load in zip(s.edges.tolist(), s.load.tolist()):
                    if e >= len(edges):
                        continue  # a collective's private rate ceiling, not a link
                    seen.add(e)
                    u, v = edges[e]
                    events.append({"ph": "C", "pid": LINKS_PID, "name": f"{u}->{v} [{topo.edge_class[e]}]",
                                   "ts": (offset + s.time) * 1e6, "args": {"bytes_per_s": load}})
            for e in sorted(seen):  # links fall idle when the step ends
                u, v = edges[e]
                events.append({"ph": "C", "pid": LINKS_PID, "name": f"{u}->{v} [{topo.edge_class[e]}]",
                               "ts": (offset + step.seconds) * 1e6, "args": {"bytes_per_s": 0.0}})
            offset += step.seconds
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def write_trace(path: str | Path, topo: Topology,
                programs: Sequence[tuple[ProgramResult, Sequence[LoweredStep]]]) -> None:
    replace_file(path, json.dumps(chrome_trace(topo, programs)).encode(), "trace")
