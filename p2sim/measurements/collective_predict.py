"""Predicting single-collective measurements: each row simulated as one collective on its system.

A row's GPUs are the first ``gpus_per_node`` GPUs of each of ``nodes`` nodes; NCCL uses
the row's NICs (``hca``) or all of them, under the settings of the environment its job set
(``env``: NVLS or CollNet off, protocols or algorithms restricted; :mod:`p2sim.topology.nccl_env`);
the algorithm is the row's (``auto``: what NCCL would pick) with NCCL's automatic protocol
unless the row forces one.  The event-driven
model's time and the link-bottleneck baseline's (:mod:`p2sim.collectives.baseline`) are
both kept.

A split run's row (``concurrent_groups``: nccl-tests' ``NCCL_TESTS_SPLIT``) is one step with
all its communicators at once, on the GPUs they ran on (rank ``k`` at ``rank_places[k]`` =
(node, CUDA device) is GPU ``node x gpus_per_node + device`` of the system, CUDA device ``d``
being the node's GPU ``d``), so they share the links and NICs they share in the run.  Its
time is the slowest communicator's; nccl-tests reports the mean over all processes (its
default ``-a 1``), the same for communicators of one shape on symmetric links.  Only the
event-driven model sees the sharing: the ``analytic`` model and the baseline time each
communicator alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..collectives import check_forced
from ..collectives.binding import Binding
from ..formalism.hierarchy import LoweredStep
from ..formalism.semantics import Op
from ..sim import ModelConfig, SimSettings, SimulationContext, Simulator
from ..topology import Topology, find_spec
from ..topology.nccl_env import with_env
from ..topology.spec import SystemSpec
from ..util.errors import InputError, MeasurementError, P2SimError
from .collective_rows import CollectiveRow, bus_factor

__all__ = ["CollectivePrediction", "predict_collectives", "collective_metrics", "predict_each", "ratio_summary", "size_class",
           "row_class"]


@dataclass(frozen=True)
class CollectivePrediction:
    """A row and its predicted times: the model's (``seconds``) and the baseline's."""

    row: CollectiveRow
    seconds: float
    baseline_seconds: float
    algo: str
    proto: str
    channels: int
    kind: str  # single-node, multi-node or pcie
    engine: str = "des"  # the engine behind ``seconds``: des or analytic
    bound: Binding | None = None  # what bounds the prediction (a link class, a per-channel limit, latency)

    def busbw(self, seconds: float) -> float:
        return self.row.size_bytes / seconds * bus_factor(self.row.collective, self.row.ranks)

    @property
    def ratio(self) -> float:
        """Measured over predicted bus bandwidth (> 1: the model is pessimistic)."""
        return self.row.busbw / self.busbw(self.seconds)

    @property
    def baseline_ratio(self) -> float:
        return self.row.busbw / self.busbw(self.baseline_seconds)

    def to_json(self) -> dict[str, Any]:
        r = self.row
        return {"id": r.ident, "system": r.system, "gpu": r.gpu, "nodes": r.nodes, "gpus_per_node": r.gpus_per_node,
                "collective": r.collective, "algo_asked": r.algo, "size_bytes": r.size_bytes,
                "class": self.kind, "size_class": size_class(r.size_bytes),
                "measured_seconds": r.seconds, "measured_busbw_GBps": r.busbw / 1e9,
                "predicted_seconds": self.seconds, "predicted_busbw_GBps": self.busbw(self.seconds) / 1e9,
                "baseline_seconds": self.baseline_seconds,
                "baseline_busbw_GBps": self.busbw(self.baseline_seconds) / 1e9,
                "ratio": self.ratio, "baseline_ratio": self.baseline_ratio,
                "algo": self.algo, "proto": self.proto, "channels": self.channels, "origin": r.origin,
                "source": f"{r.source}:{r.line}", "concurrent_groups": r.groups,
                "bound": None if self.bound is None else self.bound.text}


def size_class(nbytes: float) -> str:
    """``small`` up to 64 KiB (latency-bound), ``medium`` below 64 MiB, ``large`` from 64 MiB."""
    return "small" if nbytes <= 64 * 1024 else "medium" if nbytes < 64 * 2**20 else "large"


def row_class(topo: Topology, row: CollectiveRow) -> str:
    if row.nodes > 1:
        return "multi-node"
    return "single-node" if topo.router.intra_type(0, 1) == "NVL" else "pcie"


def _system(spec: SystemSpec, row: CollectiveRow) -> SystemSpec:
    """The row's system as its job ran NCCL: its NICs, and the settings of the environment it set."""
    spec = spec if not row.hca else replace(spec, nccl=replace(spec.nccl, hca=row.hca))
    return with_env(spec, row.env, f"{row.source}:{row.line}: env")


def _members(topo: Topology, row: CollectiveRow) -> tuple[int, ...]:
    return tuple(n * topo.gpus_per_node + g for n in range(row.nodes) for g in range(row.gpus_per_node))


def _world_nodes(row: CollectiveRow) -> int:
    """The nodes the whole run used: a split run's communicators may span more than one of them does."""
    return max(node for node, _ in row.rank_places) + 1 if row.concurrent_groups else row.nodes


def _groups(topo: Topology, row: CollectiveRow) -> tuple[tuple[int, ...], ...]:
    """The GPUs of every communicator that ran at once (one unless the run was split)."""
    if not row.concurrent_groups:
        return (_members(topo, row),)
    gpn = topo.gpus_per_node
    for rank, (node, device) in enumerate(row.rank_places):
        if device >= gpn:
            raise MeasurementError(f"{row.source}:{row.line}: rank_places: rank {rank} ran on CUDA device {device}, "
                                   f"but {row.system} has {gpn} GPUs per node: give the system it ran on")
    return tuple(tuple(row.rank_places[k][0] * gpn + row.rank_places[k][1] for k in g) for g in row.concurrent_groups)


def predict_collectives(rows: Iterable[CollectiveRow], specs: Mapping[str, SystemSpec] | None = None,
                        engine: str = "des") -> list[CollectivePrediction]:
    """Predict every row with ``engine`` (``des`` or ``analytic``) and the link-bottleneck baseline.

    ``specs`` replaces systems by name (calibrated files); others are the shipped ones.
    """
    specs = dict(specs or {})
    contexts: dict[tuple, SimulationContext] = {}  # per system: the simulators of its rows share one
    sims: dict[tuple, tuple[Simulator, Simulator]] = {}
    out = []
    for r in rows:
        spec = _system(specs.get(r.system) or find_spec(r.system), r)
        tkey = (r.system, _world_nodes(r), r.hca, r.env)
        ctx = contexts.get(tkey)
        if ctx is None:
            ctx = contexts[tkey] = SimulationContext(Topology(spec, tkey[1]))
        topo = ctx.topo
        skey = tkey + (r.algo, r.proto)
        pair = sims.get(skey)
        groups = _groups(topo, r)
        if r.algo != "auto":  # what NCCL was forced to run must be able to run it (NCCL refuses otherwise)
            try:
                check_forced(topo, r.algo, r.proto, r.collective, groups[0])
            except InputError as e:
                raise MeasurementError(f"{r.source}:{r.line}: {e} (an NCCL before 2.24 ran a ring instead: give the "
                                       f"algorithm it ran in the mapping file)") from None
        if pair is None:
            cfg = ModelConfig.of(spec)
            asked = SimSettings(r.algo, proto=r.proto, engine=engine, config=cfg)
            pair = sims[skey] = (Simulator(topo, asked, context=ctx),
                                 Simulator(topo, replace(asked, engine="baseline"), context=ctx))
        step = LoweredStep(Op(r.collective), groups)
        pred = pair[0].step(step, (r.size_bytes,) * len(groups))
        base = pair[1].step(step, (r.size_bytes,) * len(groups))
        algo, proto, channels = pred.choices[0]
        out.append(CollectivePrediction(r, pred.seconds, base.seconds, algo, proto, channels, row_class(topo, r),
                                        engine, pair[0].binding(step, (r.size_bytes,) * len(groups))))
    return out


def predict_each(rows: Sequence[CollectiveRow], specs: Mapping[str, SystemSpec] | None = None, engine: str = "des"
                 ) -> tuple[list[CollectivePrediction], list[tuple[CollectiveRow, str]]]:
    """:func:`predict_collectives`, keeping going past rows it refuses: the predictions, and each refused row
    with the reason (an algorithm that cannot run the collective there, a system too small).

    Rows of one system and node count are predicted together (they share a topology); where that
    fails, the rows are halved until each refused row stands alone.
    """
    by: dict[tuple[str, int], list[CollectiveRow]] = {}
    for r in rows:
        by.setdefault((r.system, r.nodes), []).append(r)
    preds: list[CollectivePrediction] = []
    failed: list[tuple[CollectiveRow, str]] = []

    def run(part: Sequence[CollectiveRow]) -> None:
        try:
            preds.extend(predict_collectives(part, specs, engine))
        except P2SimError as e:
            if len(part) == 1:
                failed.append((part[0], str(e)))
                return
            run(part[: len(part) // 2])
            run(part[len(part) // 2:])

    for group in by.values():
        run(group)
    order = {id(r): k for k, r in enumerate(rows)}
    return sorted(preds, key=lambda p: order[id(p.row)]), failed


def ratio_summary(ratios: Sequence[float]) -> dict[str, Any]:
    """Rows, the median ratio and the geometric standard deviation (``gsd``) of measured / predicted."""
    logs = np.log(np.asarray(ratios, dtype=float))
    return {"rows": len(ratios), "median_ratio": float(np.exp(np.median(logs))) if len(logs) else None,
            "gsd": float(np.exp(np.std(logs))) if len(logs) else None}


def collective_metrics(preds: Sequence[CollectivePrediction]) -> dict[str, Any]:
    """Per engine: the ratio's median and geometric standard deviation per class and size, Spearman, spread.

    Keyed by the predictions' engine (``des`` or ``analytic``) and ``baseline``.
    ``within_1_5`` is the share of multi-node rows whose ratio is within a factor 1.5 of
    the median ratio of all rows.
    """
    from scipy.stats import spearmanr  # here, not at import: scipy.stats costs 0.3 s of every start

    out: dict[str, Any] = {}
    name = preds[0].engine if preds else "des"
    for engine, ratio, seconds in ((name, lambda p: p.ratio, lambda p: p.seconds),
                                  ("baseline", lambda p: p.baseline_ratio, lambda p: p.baseline_seconds)):
        ratios = [ratio(p) for p in preds]
        doc: dict[str, Any] = {"all": ratio_summary(ratios)}
        for key in ("single-node", "multi-node", "pcie"):
            sel = [ratio(p) for p in preds if p.kind == key]
            if sel:
                doc[key] = ratio_summary(sel)
        for key in ("small", "medium", "large"):
            sel = [ratio(p) for p in preds if size_class(p.row.size_bytes) == key]
            if sel:
                doc[key] = ratio_summary(sel)
        if len(preds) >= 3:
            rho = spearmanr([p.row.busbw for p in preds], [p.busbw(seconds(p)) for p in preds]).statistic
            doc["spearman"] = float(rho) if math.isfinite(rho) else None
        med = doc["all"]["median_ratio"]
        multi = [r for p, r in zip(preds, ratios) if p.kind == "multi-node"]
        if multi and med:
            doc["multi_node_within_1_5_of_median"] = sum(1 for r in multi if 1 / 1.5 <= r / med <= 1.5) / len(multi)
        out[engine] = doc
    return out
