"""A step's flows as the engine takes them: each collective's flows, its caps as virtual links of their own.

:func:`flow_specs` lays out the flows of a list of collectives one by one (what a trace shows, and a
step of few groups); :func:`moved_flow_arrays` the same layout, built per class of groups that are one
group moved between nodes, in array passes (:class:`~p2sim.sim.simulator.Simulator`'s large steps).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..collectives import Collective
from ..formalism.hierarchy import LoweredStep
from ..topology import Topology
from .engine import FlowArrays, FlowSpec

__all__ = ["flow_specs", "moved_flow_arrays"]

def flow_specs(colls: Sequence[Collective], volumes: Sequence[float], links: int) -> tuple[list[FlowSpec], list[float]]:
    """The engine's flows of a step, and the capacities of the virtual links appended after ``links``.

    A flow's private caps become virtual links of its own; a collective's shared caps
    one virtual link all its flows load.
    """
    flows: list[FlowSpec] = []
    extra: list[float] = []
    for c, v in zip(colls, volumes):
        shared = []
        for cap, _ in c.shared_caps:
            shared.append(links + len(extra))
            extra.append(cap)
        for k, f in enumerate(c.flows):
            ids: list[int] = []
            cos: list[float] = []
            for cap, co in f.caps:
                ids.append(links + len(extra))
                cos.append(co)
                extra.append(cap)
            for link, (_, per_flow) in zip(shared, c.shared_caps):
                ids.append(link)
                cos.append(per_flow[k])
            edges, coef = f.edges, f.coef
            if ids:
                edges = np.concatenate((edges, np.array(ids, dtype=np.int64)))
                coef = np.concatenate((coef, np.array(cos, dtype=float)))
            label = f"{c.op} {c.algo}/{c.proto} {list(c.members)} flow {k + 1}/{len(c.flows)}"
            flows.append(FlowSpec(edges, coef, v * f.share, c.latency, label))
    return flows, extra


def moved_flow_arrays(topo: Topology, op: str, step: LoweredStep, classes: list) -> tuple[FlowArrays, np.ndarray]:
    """The engine's flows of a step, as :func:`flow_specs` lays them out (groups in order, each
    group's flows in order, virtual links numbered alike), built per class of moved groups
    in array passes: ``classes`` holds (collective, volume, shifts, members) per class
    (:func:`~p2sim.sim.moved.moved_classes`)."""
    links = len(topo.capacity)
    gpn = topo.gpus_per_node
    ngroups = step.shape[0]
    # virtual links per group (shared caps, then each flow's private caps), numbered in group order
    sizes = np.zeros(ngroups, dtype=np.int64)
    for c, _, _, members in classes:
        sizes[members] = len(c.shared_caps) + sum(len(f.caps) for f in c.flows)
    base = links + np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    blocks, templates, caps = [], [], np.zeros(int(sizes.sum()))
    row_group, row_flow, row_start, row_len, row_coef, row_vol, row_lat = [], [], [], [], [], [], []
    at = coef_at = 0
    for c, v, shifts, members in classes:
        b = base[members]
        nshared = len(c.shared_caps)
        cap_row = np.array([cap for cap, _ in c.shared_caps] + [cap for f in c.flows for cap, _ in f.caps])
        if len(cap_row):
            caps[((b - links)[:, None] + np.arange(len(cap_row))[None, :]).ravel()] = np.tile(cap_row, len(b))
        shared = b[:, None] + np.arange(nshared, dtype=np.int64)[None, :]
        offset = nshared
        for k, f in enumerate(c.flows):
            own = b[:, None] + (offset + np.arange(len(f.caps), dtype=np.int64))[None, :]
            offset += len(f.caps)
            block = np.concatenate([topo.move_edges(f.edges, min(c.members) // gpn, shifts), own, shared],
                                   axis=1)
            width = block.shape[1]
            blocks.append(block.ravel())
            templates.append(np.concatenate([f.coef, np.array([co for _, co in f.caps], dtype=float),
                                             np.array([pf[k] for _, pf in c.shared_caps], dtype=float)]))
            row_group.append(members)
            row_flow.append(np.full(len(members), k, dtype=np.int64))
            row_start.append(at + width * np.arange(len(members), dtype=np.int64))
            row_len.append(np.full(len(members), width, dtype=np.int64))
            row_coef.append(np.full(len(members), coef_at, dtype=np.int64))
            row_vol.append(np.full(len(members), v * f.share))
            row_lat.append(np.full(len(members), c.latency))
            at += block.size
            coef_at += width
    group, flow = np.concatenate(row_group), np.concatenate(row_flow)
    order = np.lexsort((flow, group))  # groups in order, each group's flows in order
    start, length = np.concatenate(row_start)[order], np.concatenate(row_len)[order]
    coef_start = np.concatenate(row_coef)[order]
    indptr = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(length, out=indptr[1:])
    at = np.arange(int(indptr[-1]), dtype=np.int64)  # entry i of row r: i - indptr[r] of its block, template
    edges = np.concatenate(blocks)[at + np.repeat(start - indptr[:-1], length)]
    coef = np.concatenate(templates)[at + np.repeat(coef_start - indptr[:-1], length)]
    group, flow = group[order], flow[order]
    per_group = np.bincount(group, minlength=ngroups)
    cls = {}
    for c, _, _, members in classes:
        for i in members.tolist():
            cls[i] = c

    def label(f: int) -> str:
        i = int(group[f])
        c = cls[i]
        return f"{op} {c.algo}/{c.proto} {list(step.groups[i])} flow {int(flow[f]) + 1}/{int(per_group[i])}"

    flows = FlowArrays(indptr, edges, coef, np.concatenate(row_vol)[order], np.concatenate(row_lat)[order], label)
    return flows, np.concatenate([topo.capacity, caps])
