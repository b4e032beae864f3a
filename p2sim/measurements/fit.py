"""Calibration's fit: effective link-class bandwidths and per-channel rates fitted to measurements.

The fit is a least-squares problem on log times (:func:`scipy.optimize.least_squares`):
for every measured row the residuals are ``log(predicted / measured)`` of its
AllReduce and of its fastest program (of every measured program, for bench_nccl
logs).  The parameters are the log of a multiplier on each link class's bandwidth and,
per measured algorithm, the log of its per-channel rates: the network rate of one
channel (``*_net_rate``: NCCL moves a channel's network traffic through one proxy
connection, so one communicator with few channels cannot fill a NIC that several
concurrent ones fill) and the GPU-side rate of one channel (``*_channel_rate``: binds
on fast links only, which is how a tree can be slower than a ring inside a node yet as
fast across a slow NIC).  A weak prior pulls each bandwidth towards the file's figure,
so a class the measurements cannot see keeps it.

Where the measurements reach small sizes (a single-collective row of 1 MiB or less), the
second stage also fits latencies (``[model]`` ``launch``: a per-collective cost NCCL's model
leaves out; ``step_cost``: a per-chunk cost pipelining does not hide, which shapes the
medium-size ramp; and, for groups that cross nodes, ``step_latency``: one network step, see
:mod:`p2sim.collectives.transports`).  Without them a full-range log's latency floor would
be absorbed into an absurdly slow per-channel rate; fitted rates and latencies that are
implausible are flagged (:meth:`Calibration.warnings`).

The fit runs in two stages: links first, then links, rates and latencies with the rates
starting just below where they bind -- a cap far above what flows through it has no gradient.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..util.errors import MeasurementError
from ..topology import find_spec
from ..collectives.algorithms import REGISTRY
from ..collectives.expand import TCP_TRANSPORTS
from ..collectives.transports import network_step_us
from ..topology.settings import LATENCY_FIELDS, ModelRates
from ..util.log import announce
from ..topology.spec import SystemSpec
from ..studies.executor import Executor
from .collective_predict import predict_collectives
from .collective_rows import CollectiveRow
from .program_rows import MeasuredRow
from .program_predict import groups_of, predict_groups
from ..studies.config_task import ALLREDUCE_TEXT

__all__ = ["Calibration", "calibrate", "calibrated_specs", "PRIOR_WEIGHT", "PLAUSIBLE", "PLAUSIBLE_LATENCY_US",
           "LATENCY_FIT_BELOW"]

PRIOR_WEIGHT = 0.1  # per parameter, in units of log residuals
PROGRESS_EVERY_S = 10.0  # how often a running fit says how far it got
BOUNDS = (-7.0, 3.0)  # multipliers between e^-7 (1/1100) and e^3 (20) of the file figure
CAP_BOUNDS = (math.log(0.01), math.log(1e5))  # rate ceilings between 10 MB/s and 100 TB/s
# Fitted rates outside (0.1, 2) x the file's figure are flagged (issue 16's bounds): NCCL's
# measured bus bandwidth reaches 70-90% of a link's rate (nccl-tests' PERFORMANCE.md), so a
# fit below a tenth says the model misplaces a bottleneck rather than that the link is slow,
# and a fit above twice the data sheet's figure is physically impossible for that link.
PLAUSIBLE = (0.1, 2.0)
# Latencies (us) are fitted in units of 10 us between 0 and 1 ms, where a row of at most this many
# bytes shows them.  Flagged beyond: a launch cost above 50 us (a whole 8-byte AllReduce on 8 GPUs
# of one node takes about 12.5 us, deepseek-ai/DeepEP#303) or a network step outside 1-200 us
# (NCCL's own figures are 2.7-31 us; AWS's EFA step 20 us; early EFA about 75, aws-ofi-nccl) or a
# per-chunk cost above 20 us (NCCL's slowest per-step figure inside a node is 5.7 us, PCIe Simple).
LATENCY_UNIT_US, LATENCY_BOUNDS = 10.0, (0.0, 100.0)
LATENCY_FIT_BELOW = 2**20
PLAUSIBLE_LATENCY_US = {"launch": (0.0, 50.0), "step_latency": (1.0, 200.0), "step_cost": (0.0, 20.0)}
# a per-channel rate below this (GB/s) is flagged, except a network rate over TCP: NCCL's topology
# search gives a channel inside a node at least 3 GB/s (speedArrayIntra's slowest, search.cc), and an
# RDMA channel carries a good part of its NIC
PLAUSIBLE_RATE_GBPS = 1.0
# the rates' starting grid: factors of sqrt(2) from the link's rate down to 1/22.6 of it
SCAN_STEP, SCAN_STEPS = 0.5 * math.log(2.0), 10


@dataclass(frozen=True)
class Calibration:
    system: str
    engine: str
    before: SystemSpec
    after: SystemSpec
    rms_log_before: float
    rms_log_after: float
    residuals: int
    evaluations: int
    rows: int

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "model": self.engine,
            "rows": self.rows,
            "residuals": self.residuals,
            "evaluations": self.evaluations,
            "rms_log_error_before": self.rms_log_before,
            "rms_log_error_after": self.rms_log_after,
            "classes": {
                c: {"file_GBps": self.before.classes[c].bandwidth, "fitted_GBps": self.after.classes[c].bandwidth,
                    "ratio": self.ratio(c)}
                for c in sorted(self.before.classes)
            },
            "rates_GBps": {k: (None if math.isinf(v) else v) for k, v in self.after.rates.to_dict().items()
                           if k not in LATENCY_FIELDS},
            "latencies_us": {k: v for k, v in self.after.rates.to_dict().items() if k in LATENCY_FIELDS},
            "warnings": self.warnings(),
        }

    def ratio(self, cls: str) -> float:
        """The fitted bandwidth of a link class over the file's figure."""
        return self.after.classes[cls].bandwidth / self.before.classes[cls].bandwidth

    def warnings(self) -> list[str]:
        """Fitted link rates implausibly far from the file's figures (see :data:`PLAUSIBLE`), per-channel
        rates below :data:`PLAUSIBLE_RATE_GBPS` and latencies outside :data:`PLAUSIBLE_LATENCY_US`."""
        out = []
        fitted = self.after.rates.to_dict()
        for k, v in sorted(fitted.items()):
            if k in LATENCY_FIELDS:
                lo, hi = PLAUSIBLE_LATENCY_US[k]
                if not lo <= v <= hi:
                    out.append(f"{self.system} ({self.engine}): {k} fitted to {v:.3g} us, outside the plausible "
                               f"{lo:g}-{hi:g} us: the model likely misses a cost elsewhere")
            elif (v < PLAUSIBLE_RATE_GBPS and v != self.before.rates.to_dict().get(k)
                  and (k.endswith("channel_rate") or self.before.nccl.transport not in TCP_TRANSPORTS)):
                # a TCP connection's few streams may well carry under 1 GB/s; a GPU's channel may not
                out.append(f"{self.system} ({self.engine}): {k} fitted to {v:.3g} GB/s per channel, below "
                           f"{PLAUSIBLE_RATE_GBPS:g} GB/s: implausible, likely a latency the model lacks absorbed "
                           "into a rate")
        for c in sorted(self.before.classes):
            r = self.ratio(c)
            if not PLAUSIBLE[0] <= r <= PLAUSIBLE[1]:
                what = "below a tenth of" if r < PLAUSIBLE[0] else "above twice"
                out.append(f"{self.system} ({self.engine}): {c} fitted to {self.after.classes[c].bandwidth:.3g} GB/s, "
                           f"{what} the file's {self.before.classes[c].bandwidth:g} GB/s ({r:.2g}x): implausible, "
                           "the model likely misplaces a bottleneck")
        return out


@dataclass(frozen=True)
class _Layout:
    """Which parameters the vector holds: class log-multipliers, then log rates (GB/s)."""

    classes: tuple[str, ...]
    rates: tuple[str, ...]  # ModelRates rate fields fitted (log GB/s)
    latencies: tuple[str, ...] = ()  # ModelRates latency fields fitted (units of LATENCY_UNIT_US)

    def prior(self, x: np.ndarray) -> np.ndarray:
        return PRIOR_WEIGHT * x[: len(self.classes)]

    def apply(self, spec: SystemSpec, x: np.ndarray) -> SystemSpec:
        out = spec
        for c, v in zip(self.classes, x):
            out = out.with_class(c, bandwidth=spec.classes[c].bandwidth * math.exp(v))
        values = spec.rates.to_dict()
        k0 = len(self.classes)
        for k, v in zip(self.rates, x[k0:]):
            values[k] = math.exp(v)
        for k, v in zip(self.latencies, x[k0 + len(self.rates):]):
            values[k] = float(v) * LATENCY_UNIT_US
        return replace(out, rates=ModelRates(**values))


def _residuals(rows_by_group, results) -> np.ndarray:
    res = []
    for key, rows in rows_by_group.items():
        cr = results[key]
        for r in rows:
            progs = {p.text: p.seconds for p in cr.of(r.matrix)}
            if r.programs:
                res += [math.log(progs[t] / s) for t, s in r.programs if t in progs]
            else:
                res.append(math.log(min(progs.values()) / r.optimal_s))
                if r.allreduce_s is not None:
                    res.append(math.log(progs[ALLREDUCE_TEXT] / r.allreduce_s))
    return np.asarray(res)


def _collective_residuals(rows: Sequence[CollectiveRow], system: str, trial: SystemSpec, engine: str) -> np.ndarray:
    if not rows:
        return np.zeros(0)
    # keyed as the rows name the system (a file outside the catalogues by its path), not by its name:
    # keyed by name, a file's rows would be predicted on the file as read, never on the trial
    preds = predict_collectives(rows, {system: trial}, "des" if engine == "baseline" else engine)
    return np.asarray([math.log((p.baseline_seconds if engine == "baseline" else p.seconds) / p.row.seconds)
                       for p in preds])


def calibrate(rows: Sequence[MeasuredRow], system: str, executor: Executor, engine: str = "des",
              base: SystemSpec | None = None, max_evaluations: int = 60,
              collectives: Sequence[CollectiveRow] = ()) -> Calibration:
    """Fit one system's link classes and per-channel rates to its measured rows.

    ``rows`` are programs' measurements (P2's table, bench_nccl logs); ``collectives``
    single-collective ones (nccl-tests and bench_nccl sweeps): both may be given.
    """
    from scipy.optimize import least_squares  # here, not at import: 0.3 s of every start

    mine = [r for r in rows if r.system == system]
    singles = [r for r in collectives if r.system == system]
    if not mine and not singles:
        raise MeasurementError(f"calibrate: no measurements of system {system!r}")
    spec = base if base is not None else find_spec(system)
    algos = sorted({_rates_read(r.algo) for r in mine} | {_rates_read(r.algo, auto="tree") for r in singles}
                   | ({"ring"} if singles else set()))
    groups = groups_of(mine)
    evaluations = 0

    heard = [time.monotonic(), math.inf]  # when progress was last said, the best error so far

    def fitter(layout: _Layout):
        def fun(x: np.ndarray) -> np.ndarray:
            nonlocal evaluations
            evaluations += 1
            trial = layout.apply(spec, x)
            res = [_collective_residuals(singles, system, trial, engine)]
            if mine:
                results = predict_groups(groups, {system: trial}, engine, executor, all_matrices=False)
                res.insert(0, _residuals(groups, results))
            out = np.concatenate(res + [layout.prior(x)])
            data = out[: len(out) - len(layout.classes)]
            heard[1] = min(heard[1], float(np.sqrt(np.mean(data ** 2))) if len(data) else 0.0)
            if time.monotonic() - heard[0] >= PROGRESS_EVERY_S:  # a fit runs minutes: say it is alive
                heard[0] = time.monotonic()
                announce(f"{system}: {evaluations} evaluations, best rms log error so far {heard[1]:.3f}")
            return out
        return fun

    links = _Layout(tuple(sorted(spec.classes)), ())
    n = len(links.classes)
    fun = fitter(links)
    r0 = fun(np.zeros(n))
    data = len(r0) - n
    first = least_squares(fun, np.zeros(n), bounds=BOUNDS, diff_step=0.05, max_nfev=max_evaluations)
    crosses = any(r.nodes > 1 for r in (*mine, *singles))
    # the baseline model has no channels: only its links can be fitted
    tcp = crosses and spec.nccl.transport in TCP_TRANSPORTS  # a NIC over TCP fills stream by stream
    rates = () if engine == "baseline" else tuple(
        f"{a}_{kind}" for a in algos for kind in (("net_rate",) if crosses else ()) + ("channel_rate",)
    ) + (("stream_rate",) if tcp else ())
    small = engine != "baseline" and any(r.size_bytes <= LATENCY_FIT_BELOW for r in singles)
    lats = (("launch", "step_cost") + (("step_latency",) if any(r.nodes > 1 for r in singles) else ())) if small else ()
    full = _Layout(links.classes, rates, lats)
    fitted = links.apply(spec, first.x)
    lower = np.concatenate([np.full(n, BOUNDS[0]), np.full(len(rates), CAP_BOUNDS[0]),
                            np.full(len(lats), LATENCY_BOUNDS[0])])
    upper = np.concatenate([np.full(n, BOUNDS[1]), np.full(len(rates), CAP_BOUNDS[1]),
                            np.full(len(lats), LATENCY_BOUNDS[1])])
    what = [*mine, *singles]
    if not rates:
        after, final = links.apply(spec, first.x), fun(first.x)[:data]
        return _result(system, engine, spec, after, what, r0[:data], final, data, evaluations)
    fun_full = fitter(full)
    net_class = _network_class(fitted) if crosses else None
    start = np.array([_latency_start(spec, k) for k in lats])
    x0 = _scan_rates(lambda x: fun_full(np.concatenate([x, start])), first.x, rates, fitted, crosses,
                     links.classes.index(net_class) if net_class in links.classes else None)
    x0 = _scan_latencies(fun_full, np.concatenate([x0, start]), len(x0), len(lats))
    second = least_squares(fun_full, x0, bounds=(lower, upper), diff_step=0.05, max_nfev=max_evaluations)
    if second.cost <= first.cost:
        x = second.x.copy()
        cost = float(np.sum(fun_full(x) ** 2))
        unbound = []
        for i, r in enumerate(rates):  # a cap that binds nothing is no cap: report it as unset
            trial = x.copy()
            trial[n + i] = CAP_BOUNDS[1]
            if float(np.sum(fun_full(trial) ** 2)) <= cost:
                x, unbound = trial, unbound + [r]
        after = full.apply(spec, x)
        after = replace(after, rates=ModelRates(**{k: v for k, v in after.rates.to_dict().items()
                                                    if k not in unbound}))
        final = fun_full(x)[:data]
    else:  # the rates did not help: keep the links-only fit
        after, final = links.apply(spec, first.x), fun(first.x)[:data]
    return _result(system, engine, spec, after, what, r0[:data], final, data, evaluations)


def calibrated_specs(systems: Sequence[str], executor: Executor, engine: str, rows: Sequence[MeasuredRow] = (),
                     collectives: Sequence[CollectiveRow] = (), what: str = "measurements",
                     ) -> tuple[dict[str, SystemSpec], list[Calibration]]:
    """Each system fitted to its calibration rows (``validate --calibrate-on``), and the fits.

    A system with no calibration rows among ``rows`` and ``collectives`` is an error naming
    ``what`` was looked for.
    """
    specs: dict[str, SystemSpec] = {}
    fits: list[Calibration] = []
    for s in systems:
        if not any(r.system == s for r in (*rows, *collectives)):
            raise MeasurementError(f"calibrate-on: no {what} of system {s!r} to calibrate it on")
        fit = calibrate(rows, s, executor, engine, collectives=collectives)
        fits.append(fit)
        specs[s] = fit.after
    return specs, fits


def _scan_rates(fun, x_links: np.ndarray, rates: Sequence[str], fitted: SystemSpec, crosses: bool,
                net_index: int | None) -> np.ndarray:
    """Starting values for the rates: one at a time, the best of a few binding levels.

    A cap far above the traffic it limits has no gradient, and one far below it has the
    same slope everywhere, so the local fit needs a start near where it matters: each rate
    tries uncapped and 1, 1/sqrt(2), 1/2, ..., 1/22.6 of the fastest link in a node (a channel's GPU
    side) or of the NIC's link (a channel's network connection), keeping the best cost so
    far.  A network rate is also tried with the NIC back at the file's figure: the links-only
    fit explains a slow single communicator by a slow NIC, and only the two moving together
    (NIC up, cap down) show that concurrent communicators fill the NIC where one cannot.
    """
    k = len(x_links)
    fast = max(fitted.classes[ln.cls].capacity for ln in fitted.node_links)  # inside a node
    nic = fitted.classes[_network_class(fitted)].capacity if crosses else fast
    x = np.concatenate([x_links, np.full(len(rates), CAP_BOUNDS[1])])
    best = float(np.sum(fun(x) ** 2))
    for i, r in enumerate(rates):
        is_net = r.endswith("net_rate") or r == "stream_rate"
        base = nic / (fitted.nccl.socket_streams if r == "stream_rate" else 1) if is_net else fast
        keep = x.copy()
        nic_starts = [x[net_index]] + ([0.0] if is_net and net_index is not None and x[net_index] != 0.0 else [])
        for nic_x in nic_starts:
            for j in range(SCAN_STEPS):
                trial = x.copy()
                if is_net and net_index is not None:
                    trial[net_index] = nic_x
                    base = nic * math.exp(nic_x - x[net_index]) / (
                        fitted.nccl.socket_streams if r == "stream_rate" else 1)
                trial[k + i] = math.log(base) - j * SCAN_STEP
                cost = float(np.sum(fun(trial) ** 2))
                if cost < best:
                    best, keep = cost, trial
        x = keep
    return x


# the latencies' starting grid (us): a latency the rates have compensated for has no gradient either
LATENCY_SCAN_US = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)


def _scan_latencies(fun, x: np.ndarray, first: int, count: int) -> np.ndarray:
    """Starting values for the latencies, one at a time: the best of a grid and the current value."""
    best = float(np.sum(fun(x) ** 2))
    for i in range(first, first + count):
        keep = x
        for us in LATENCY_SCAN_US:
            trial = x.copy()
            trial[i] = us / LATENCY_UNIT_US
            cost = float(np.sum(fun(trial) ** 2))
            if cost < best:
                best, keep = cost, trial
        x = keep
    return x


def _rates_read(algo: str, auto: str = "ring") -> str:
    """Whose calibrated rates (``tree_*`` or ``ring_*``) runs of setting ``algo`` read: the forced algorithm's
    (:attr:`Algorithm.tree_rates <p2sim.collectives.algorithms.base.Algorithm.tree_rates>`), ``auto``'s for
    NCCL's own choice, the ring's for anything else (``collnet``)."""
    if algo in REGISTRY:
        return "tree" if REGISTRY[algo].tree_rates else "ring"
    return auto if algo == "auto" else "ring"


def _latency_start(spec: SystemSpec, field: str) -> float:
    """A latency's starting value (units of LATENCY_UNIT_US): the file's, else the model's default."""
    v = getattr(spec.rates, field)
    if v is None and field == "step_latency":
        v = spec.nccl.step_latency if spec.nccl.step_latency is not None else network_step_us(
            spec.nccl.transport, "ring", "LL")
    return min(max((v or 0.0) / LATENCY_UNIT_US, LATENCY_BOUNDS[0]), LATENCY_BOUNDS[1])


def _result(system: str, engine: str, spec: SystemSpec, after: SystemSpec, mine: Sequence[Any],
            before: np.ndarray, final: np.ndarray, data: int, evaluations: int) -> Calibration:
    return Calibration(
        system=spec.name, engine=engine, before=spec,  # the name a person reads, not the rows' reference
        after=replace(after, notes=f"calibrated ({engine} engine) on {len(mine)} measured rows of {mine[0].source}"),
        rms_log_before=float(np.sqrt(np.mean(before ** 2))),
        rms_log_after=float(np.sqrt(np.mean(final**2))),
        residuals=data, evaluations=evaluations, rows=len(mine),
    )


def _network_class(spec: SystemSpec) -> str:
    """The link class of the NICs' links (where a channel's network rate would bind)."""
    nics = {c for c, k in spec.components if k == "nic"}
    for ln in spec.network_links:
        if any(a in nics or b in nics for a, b in ln.pairs):
            return ln.cls
    return min(spec.classes, key=lambda c: spec.classes[c].capacity)
