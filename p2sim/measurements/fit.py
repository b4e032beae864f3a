"""Calibration's fit: the parameters of :data:`~p2sim.measurements.fit_params.PARAMETERS`, fitted to measurements.

For every measured row the residuals are ``log(predicted / measured)`` of its time (of its
AllReduce and fastest program, or every measured program, for program rows).  The fit
minimises them with a robust loss (soft-L1 of :func:`scipy.optimize.least_squares`, scale
:data:`ROBUST_SCALE`, 1.3x): a row off by more than 1.3x pulls with a constant force, not one
growing with its error, so one noisy row (a 256-byte AllReduce measured at 4x its neighbours)
cannot drag a fit.  Each parameter stays within its physical bounds (the table gives them with
their sources), so no fit absorbs a mechanism the model lacks into an absurd figure.

The fit runs in stages, one per kind of mechanism (:data:`~p2sim.measurements.fit_params.STAGES`):

1. ``large``: link-class bandwidths (a factor on the file's figure, with a weak prior towards
   it, so a class the measurements cannot see keeps it), on the rows that measure rates
   (:func:`rate_rows`) and on program rows.  Where the file was right at large sizes, the fit
   keeps it: every step of a stage only lowers that stage's cost, from the file's values.
2. ``ramp``: the mechanisms of small and medium sizes (``[model]`` ``launch``, ``step_cost``,
   ``step_latency``, ``stream_rate`` and the per-channel caps ``*_net_rate``, ``*_channel_rate``),
   on the other rows, while the rate rows' predictions are held where the large stage put them
   (:data:`HOLD_WEIGHT`).  Runs only where rows below 64 MiB exist.  Without single-collective
   rows below 64 MiB (program rows only) the per-channel caps join the large stage instead.

3. ``joint``: every parameter of both stages refined together on every row, from the staged
   optimum (the stages fit each mechanism where it shows, but a link a little faster with a
   per-chunk cost a little higher bends medium sizes neither bends alone).  Kept only where it
   lowers the whole cost and the rate rows fit no worse than with the file's own figures.

In each stage every parameter first starts at the best of a grid between its bounds (a cap far
above what flows through it has no gradient, and a latency the other terms compensate for has
none either), then all are refined together.  The fit is deterministic: the same rows give the
same file.
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
from ..topology.settings import LATENCY_FIELDS, SHARE_FIELDS
from ..util.log import announce
from ..util.units import format_bytes
from ..topology.spec import SystemSpec
from ..studies.executor import Executor
from .collective_predict import predict_collectives
from .collective_rows import CollectiveRow
from .program_rows import MeasuredRow
from .program_predict import groups_of, predict_groups
from ..studies.config_task import ALLREDUCE_TEXT
from .fit_params import Param, applicable, apply

__all__ = ["Calibration", "calibrate", "calibrated_specs", "one_size", "robust_cost", "PRIOR_WEIGHT", "PLAUSIBLE",
           "PLAUSIBLE_LATENCY_US", "ROBUST_SCALE", "LARGE_FROM"]

PRIOR_WEIGHT = 0.1  # per parameter, in units of log residuals
PROGRESS_EVERY_S = 10.0  # how often a running fit says how far it got
# The soft-L1 loss's scale (log ratio): issue 33's target, every size within 1.3x.  Within it a row counts
# as in least squares (every size pulled towards the target); beyond it a row's pull no longer grows with
# its error, so one noisy row (nccl-tests' first size, a stray 4x) cannot drag the others out of it
ROBUST_SCALE = math.log(1.3)
# The ramp stage holds the rate rows where the large stage put them: moving one costs this many times a
# row's error (soft-L1 is quadratic within ROBUST_SCALE / HOLD_WEIGHT = 2.6% of a rate row's time, so a
# ramp term that shifts the large sizes by more pays for it ten times over)
HOLD_WEIGHT = 10.0
# where the large stage's rows start: validate's large class (collective_validation.LARGE), issue 33's split
LARGE_FROM = 64 * 2**20
# Doubling the size takes at least this times the time: the fixed costs are at most a fifth of it
# (T(2n) / T(n) = (a + 2bn) / (a + bn) >= 1.8 when a <= bn / 4), so the row measures a rate
PROPORTIONAL = 1.8
# Fitted rates outside (0.1, 2) x the file's figure are flagged (issue 16's bounds): NCCL's
# measured bus bandwidth reaches 70-90% of a link's rate (nccl-tests' PERFORMANCE.md), so a
# fit below a tenth says the model misplaces a bottleneck rather than that the link is slow,
# and a fit above twice the data sheet's figure is physically impossible for that link.
# The fit's own bounds (fit_params) are inside these: flags are for figures a file states.
PLAUSIBLE = (0.1, 2.0)
# Latencies (us) flagged beyond: a launch cost above 50 us (a whole 8-byte AllReduce on 8 GPUs
# of one node takes about 12.5 us, deepseek-ai/DeepEP#303) or a network step outside 1-200 us
# (NCCL's own figures are 2.7-31 us; AWS's EFA step 20 us; early EFA about 75, aws-ofi-nccl) or a
# per-chunk cost above 20 us (NCCL's slowest per-step figure inside a node is 5.7 us, PCIe Simple).
PLAUSIBLE_LATENCY_US = {"launch": (0.0, 50.0), "step_latency": (1.0, 200.0), "step_cost": (0.0, 20.0)}
# a per-channel rate below this (GB/s) is flagged, except a network rate over TCP: NCCL's topology
# search gives a channel inside a node at least 3 GB/s (speedArrayIntra's slowest, search.cc), and an
# RDMA channel carries a good part of its NIC
PLAUSIBLE_RATE_GBPS = 1.0


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
    fitted: tuple[tuple[Param, float | None], ...] = ()  # each fitted parameter and its value (None: unset)
    notes: tuple[str, ...] = ()  # what the measurements could not show the fit (warned with the figures)

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
                           if k not in LATENCY_FIELDS and k not in SHARE_FIELDS},
            "shares": {k: v for k, v in self.after.rates.to_dict().items() if k in SHARE_FIELDS},
            "latencies_us": {k: v for k, v in self.after.rates.to_dict().items() if k in LATENCY_FIELDS},
            "parameters": [{"name": p.name, "where": p.path, "stage": p.row.stage, "unit": p.row.unit,
                            "file": p.file, "fitted": v, "lower": p.lower, "upper": p.upper, "bounds_source": p.row.source}
                           for p, v in self.fitted],
            "warnings": self.warnings(),
        }

    def ratio(self, cls: str) -> float:
        """The fitted bandwidth of a link class over the file's figure."""
        return self.after.classes[cls].bandwidth / self.before.classes[cls].bandwidth

    def warnings(self) -> list[str]:
        """Fitted link rates implausibly far from the file's figures (see :data:`PLAUSIBLE`), per-channel
        rates below :data:`PLAUSIBLE_RATE_GBPS` and latencies outside :data:`PLAUSIBLE_LATENCY_US`, after
        what the measurements could not show (:attr:`notes`)."""
        out = list(self.notes)
        fitted = self.after.rates.to_dict()
        for k, v in sorted(fitted.items()):
            if k in LATENCY_FIELDS:
                lo, hi = PLAUSIBLE_LATENCY_US[k]
                if not lo <= v <= hi:
                    out.append(f"{self.system} ({self.engine}): {k} fitted to {v:.3g} us, outside the plausible "
                               f"{lo:g}-{hi:g} us: the model likely misses a cost elsewhere")
            elif k in SHARE_FIELDS:
                continue  # a share of a link's rate, bounded by the fit itself (fit_params)
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


def rate_rows(rows: Sequence[CollectiveRow]) -> list[CollectiveRow]:
    """The rows that measure rates: of :data:`LARGE_FROM` bytes and more and, where the same series (layout,
    collective, algorithm, protocol, in place or not) has the size half as large, taking at least
    :data:`PROPORTIONAL` times its time -- time nearly in proportion to size, so fixed costs are at most a
    fifth of it.  A series whose large sizes never grow so (a ramp reaching past 64 MiB, as over TCP) gives
    only its largest size; rows with no half-size neighbour count as they are."""
    series: dict[tuple, dict[float, float]] = {}
    for r in rows:
        series.setdefault(_series(r), {}).setdefault(r.size_bytes, r.seconds)
    out, fallback = [], {}
    for r in rows:
        if r.size_bytes < LARGE_FROM:
            continue
        times = series[_series(r)]
        half = times.get(r.size_bytes / 2)
        if half is None or r.seconds >= PROPORTIONAL * half:
            out.append(r)
        elif r.size_bytes == max(times):
            fallback[_series(r)] = r
    seen = {_series(r) for r in out}
    return out + [r for k, r in fallback.items() if k not in seen]


def _series(r: CollectiveRow) -> tuple:
    return (r.source, r.nodes, r.gpus_per_node, r.collective, r.algo, r.proto, r.in_place, r.hca, r.split)


def robust_cost(res: np.ndarray) -> float:
    """The soft-L1 cost :func:`scipy.optimize.least_squares` minimises (``loss="soft_l1"``, ``f_scale``
    :data:`ROBUST_SCALE`): quadratic within the scale, linear beyond, so one noisy row pulls no harder than
    its sign."""
    z = (np.asarray(res) / ROBUST_SCALE) ** 2
    return float(ROBUST_SCALE**2 * np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


def calibrate(rows: Sequence[MeasuredRow], system: str, executor: Executor, engine: str = "des",
              base: SystemSpec | None = None, max_evaluations: int = 60,
              collectives: Sequence[CollectiveRow] = ()) -> Calibration:
    """Fit one system's parameters (:data:`~p2sim.measurements.fit_params.PARAMETERS`) to its measured rows.

    ``rows`` are programs' measurements (P2's table, bench_nccl logs); ``collectives``
    single-collective ones (nccl-tests and bench_nccl sweeps): both may be given.  The
    ``large`` stage fits on the rows of :data:`LARGE_FROM` bytes and more and the program rows;
    the ``ramp`` stage, where rows below it exist, on every row with the large stage's values held.
    """
    mine = [r for r in rows if r.system == system]
    singles = [r for r in collectives if r.system == system]
    if not mine and not singles:
        raise MeasurementError(f"calibrate: no measurements of system {system!r}")
    spec = base if base is not None else find_spec(system)
    notes = one_size(singles, mine, spec.name)
    algos = sorted({_rates_read(r.algo) for r in mine} | {_rates_read(r.algo, auto="tree") for r in singles}
                   | ({"ring"} if singles else set()))
    crosses = any(r.nodes > 1 for r in (*mine, *singles))
    groups = groups_of(mine)
    count = [0]
    heard = [time.monotonic(), math.inf]  # when progress was last said, the best error so far

    def residuals(trial: SystemSpec, which: Sequence[CollectiveRow]) -> np.ndarray:
        count[0] += 1
        res = [_collective_residuals(which, system, trial, engine)]
        if mine:
            results = predict_groups(groups, {system: trial}, engine, executor, all_matrices=False)
            res.insert(0, _residuals(groups, results))
        out = np.concatenate(res)
        heard[1] = min(heard[1], float(np.sqrt(np.mean(out ** 2))) if len(out) else 0.0)
        if time.monotonic() - heard[0] >= PROGRESS_EVERY_S:  # a fit runs minutes: say it is alive
            heard[0] = time.monotonic()
            announce(f"{system}: {count[0]} evaluations, best rms log error so far {heard[1]:.3f}")
        return out

    rates = rate_rows(singles)
    ramps = engine != "baseline" and any(r.size_bytes < LARGE_FROM for r in singles)
    fitted: dict[str, float | None] = {}
    params = applicable(spec, algos, crosses, ("large",), links_only=engine == "baseline") if rates or mine else []
    if params and not ramps and engine != "baseline":  # no ramp stage: the caps are fitted with the links
        params += [p for p in applicable(spec, algos, crosses, ("ramp",)) if p.row.unset_above]
    fitted.update(_fit_stage(lambda t: residuals(t, rates), spec, params, max_evaluations))
    if ramps:
        held = apply(spec, fitted)
        anchor = residuals(held, rates)  # the large stage's predictions of the rate rows, held
        rest = [r for r in singles if r not in set(rates)]

        def ramp(trial: SystemSpec) -> np.ndarray:
            return np.concatenate([residuals(trial, rest), HOLD_WEIGHT * (residuals(trial, rates) - anchor)])
        ps = applicable(spec, algos, crosses, ("ramp",))
        fitted.update(_fit_stage(ramp, held, ps, max_evaluations))
        params += ps
        fitted.update(_joint(lambda t: residuals(t, singles), lambda t: residuals(t, rates), spec, params,
                             fitted, max_evaluations))
    before = residuals(spec, singles)
    after = apply(spec, fitted)
    final = residuals(after, singles)
    return Calibration(
        system=spec.name, engine=engine, before=spec,  # the name a person reads, not the rows' reference
        after=replace(after, notes=f"calibrated ({engine} engine) on {len(mine) + len(singles)} measured rows of "
                                   f"{(mine or singles)[0].source}"),
        rms_log_before=float(np.sqrt(np.mean(before ** 2))), rms_log_after=float(np.sqrt(np.mean(final ** 2))),
        residuals=len(final), evaluations=count[0], rows=len(mine) + len(singles),
        fitted=tuple((p, fitted.get(p.path, p.file)) for p in params), notes=notes)


def one_size(singles: Sequence[CollectiveRow], programs: Sequence[MeasuredRow], name: str) -> tuple[str, ...]:
    """What a fit on single-collective rows of one size (and no program rows) can be: below :data:`LARGE_FROM`
    nothing (refused: one size cannot tell a fixed cost from a rate, and the fit would set both); at or above
    it, a warning (the link rates are fitted; the small sizes' terms keep the file's figures)."""
    sizes = {r.size_bytes for r in singles}
    if programs or len(sizes) != 1:
        return ()
    size = format_bytes(next(iter(sizes)))
    where = f"{singles[0].source}: {name}"
    if next(iter(sizes)) < LARGE_FROM:
        raise MeasurementError(f"calibrate: {where}: every single-collective row measures one size ({size}): one "
                               "size cannot tell the fixed costs from the rates that a fit below 64 MiB sets; "
                               "measure a range of sizes (nccl-tests -b 8 -e 8G -f 2, or python -m bench_nccl sweep)")
    return (f"{where}: every single-collective row measures one size ({size}): the fit sets the link rates only; "
            "the terms of smaller sizes keep the system file's figures (measure a range of sizes to fit them)",)


def _fit_stage(residuals, spec: SystemSpec, params: Sequence[Param], max_evaluations: int,
               scan: bool = True, start: dict[str, float] | None = None) -> dict[str, float | None]:
    """One stage's parameters fitted on ``residuals(trial spec)`` (log ratios) with the soft-L1 loss, within
    their bounds: each started at the best of its grid (:meth:`Param.grid`), then jointly refined.  Every
    step only lowers the cost, so the stage never fits worse than the values it started from (the file's)."""
    from scipy.optimize import least_squares  # here, not at import: 0.3 s of every start

    if not params:
        return {}
    lo = np.array([p.to_x(p.lower) for p in params])
    hi = np.array([p.to_x(p.upper) for p in params])
    prior_x = np.array([p.to_x(p.start) for p in params])
    priors = np.array([p.row.prior for p in params])

    def values(x: np.ndarray) -> dict[str, float]:
        return {p.path: p.of_x(v) for p, v in zip(params, x)}

    def fun(x: np.ndarray) -> np.ndarray:
        return np.concatenate([residuals(apply(spec, values(x))), PRIOR_WEIGHT * (x - prior_x)[priors]])

    x = prior_x.copy() if start is None else np.array([p.to_x(min(max(start[p.path], p.lower), p.upper))
                                                       for p in params])
    best = robust_cost(fun(x))
    for i, p in enumerate(params if scan else ()):  # starting values, one parameter at a time
        keep = x
        for v in p.grid():
            trial = x.copy()
            trial[i] = p.to_x(v)
            c = robust_cost(fun(trial))
            if c < best:
                best, keep = c, trial
        x = keep
    fit = least_squares(fun, x, bounds=(lo, hi), loss="soft_l1", f_scale=ROBUST_SCALE, diff_step=0.05,
                        max_nfev=max_evaluations)
    if robust_cost(fit.fun) < best:
        x, best = np.clip(fit.x, lo, hi), robust_cost(fit.fun)
    out: dict[str, float | None] = values(x)
    for i, p in enumerate(params):  # a cap that binds nothing is no cap: report it as unset
        if p.row.unset_above:
            trial = x.copy()
            trial[i] = hi[i]
            if robust_cost(fun(trial)) <= best:
                x, out[p.path] = trial, None
    return out


def _joint(everything, large, spec: SystemSpec, params: Sequence[Param], staged: dict[str, float | None],
           max_evaluations: int) -> dict[str, float | None]:
    """The final stage: every parameter refined together on every row, from the staged optimum.

    The stages fit each kind of mechanism where it shows, but they interact (a link a little faster
    and a per-chunk cost a little higher bend the medium sizes where neither can alone), and only a
    joint step finds such pairs.  Guarded: the result is kept only where it lowers the whole cost and
    the rate rows (:func:`rate_rows`) fit no worse than with the file's own figures -- the joint step
    may trade nothing of the large sizes for the small ones beyond what the data sheet already gave."""
    if not params:
        return {}
    start = {p.path: (p.upper if staged.get(p.path, p.start) is None else staged.get(p.path, p.start))
             for p in params}
    held = apply(spec, staged)
    moved = _fit_stage(everything, spec, params, max_evaluations, scan=False, start=start)
    trial = apply(spec, moved)
    if robust_cost(everything(trial)) >= robust_cost(everything(held)):
        return staged
    if robust_cost(large(trial)) > max(robust_cost(large(spec)), robust_cost(large(held))):
        return staged
    return moved


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


def _rates_read(algo: str, auto: str = "ring") -> str:
    """Whose calibrated rates (``tree_*`` or ``ring_*``) runs of setting ``algo`` read: the forced algorithm's
    (:meth:`Algorithm.rate_family <p2sim.collectives.algorithms.costs.Costs.rate_family>`), ``auto``'s for
    NCCL's own choice, the ring's for anything else (``collnet``)."""
    if algo in REGISTRY:
        return REGISTRY[algo].rate_family()
    return auto if algo == "auto" else "ring"
