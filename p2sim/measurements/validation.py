"""The validate study: measurements in, the model's predictions and scores beside the baseline's out.

Programs (P2's CSV, bench_nccl program logs) and single collectives (published points,
nccl-tests and bench_nccl sweep logs) may come together; each part is scored with its own
metrics (:mod:`.program_validation`, :mod:`.collective_validation`).

Examples
--------
>>> req = ValidateRequest.build(measurements="validation/collectives/", workers=1)
>>> doc = run_validate(req).to_json()
>>> sorted(doc), doc["collectives"]["model"]
(['collectives', 'warnings'], 'des')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..formalism.placement import count_matrices, enumerate_matrices
from ..sim.engines import check_engine
from ..studies.jobsize import Limits, plural, program_counts
from ..studies.requests import DEFAULT_SETTINGS, RunOptions, limits_of
from ..topology import find_spec, system_ref
from ..util.table import Tabular
from ..util.errors import InputError
from ..util.log import announce, warn
from ..util.parsing import as_text, positive_int
from ..util.units import format_bytes
from .collective_validation import NO_SPLIT, SPLITS, validate_collectives
from .emulated import emulated_warnings, refuse_emulated
from .fit import one_size
from .inputs import Measurements, load_inputs
from .program_predict import P2, groups_of
from .program_rows import MeasuredRow
from .program_validation import BASELINE, validate

__all__ = ["ValidateRequest", "ValidateResult", "run_validate", "fitted_model"]


def fitted_engine(engine: str, why: str) -> str:
    """validate and calibrate run the event-driven or the analytic engine, never the baseline alone."""
    if check_engine(engine) == "baseline":
        raise InputError(f"engine: 'baseline' is not one of des, analytic here ({why})")
    return engine


def _program_size(rows: Sequence[MeasuredRow], cal: Sequence[MeasuredRow] | None, engine: str, folds: int,
                  lim: Limits) -> str:
    """What validate simulates for program rows, in words (its prediction passes checked against the limit)."""
    groups = groups_of(rows)
    per_pass = 0
    for (system, nodes, p, red, *_), _rows in groups.items():
        h = find_spec(system).hierarchy(nodes)
        lim.check_matrices(count_matrices(h, p), f"axes {','.join(map(str, p))} on {system} with {nodes} nodes")
        per_pass += sum(program_counts(enumerate_matrices(h, p), red, P2.profile, P2.max_size, lim))
    engines = len(dict.fromkeys((engine, BASELINE)))
    total = per_pass * engines
    what = (f"{plural(len(rows), 'row')} in {plural(len(groups), 'group')}: {plural(engines, 'engine')} x "
            f"{plural(per_pass, 'simulation')} to predict")
    lim.check_simulations(total, what)
    if cal is not None:
        per_eval = sum(sum(program_counts(tuple(dict.fromkeys(r.matrix for r in g)), key[3], P2.profile, P2.max_size,
                                          lim))
                       for key, g in groups_of(cal).items())
        fits = len({r.system for r in rows}) * engines * folds
        what += (f"; calibration: {plural(fits, 'fit')}, each evaluation {plural(per_eval, 'simulation')} (a fit "
                 "takes tens to a few hundred evaluations)")
    return what


@dataclass(frozen=True)
class ValidateRequest:
    source: str  # what was read, for reports
    data: Measurements
    calibrate_on: Measurements | None
    engine: str
    folds: int
    allow_emulated: bool
    split: str
    limits: Limits
    run: RunOptions

    @classmethod
    def build(cls, measurements: Any, calibrate_on: Any = None, system: str | None = None, folds: Any = None,
              split: Any = NO_SPLIT, engine: str = DEFAULT_SETTINGS.engine, allow_emulated: bool = False, workers: Any = None, scheduler: str | None = None,
              scheduler_file: Any = None, max_matrices: Any = None, max_simulations: Any = None,
              yes: bool = False) -> ValidateRequest:
        """``measurements`` and ``calibrate_on``: a file or directory (or several); ``system`` names the p2sim
        system of nccl-tests logs that a directory's ``systems.csv`` does not map."""
        # rows name the system as find_spec finds it again (a file by its absolute path: workers may
        # run elsewhere), and an unknown one is refused before any file is read
        system = None if system is None else system_ref(find_spec(as_text(system, "system")))
        data = load_inputs(measurements, system)
        cal = None if calibrate_on is None else load_inputs(calibrate_on, system)
        engine = fitted_engine(engine, "the baseline is scored beside the engine anyway")
        k = 1 if folds is None else positive_int(as_text(folds, "folds"), "folds")
        if folds is not None and k < 2:
            raise InputError(f"folds: {k} fold is no cross-validation (one fold calibrates on every row and scores "
                             "the same rows: leave --folds out for that, which says it is in sample); give 2 or more")
        if k > 1 and not data.programs:
            raise InputError(f"folds: cross-validation by folds deals program measurements into folds, and "
                             f"{measurements} has none (single-collective rows cross-validate by size: --split sizes)")
        split = as_text(split, "split")
        if split not in SPLITS:
            raise InputError(f"split: {split!r} is not one of {', '.join(SPLITS)}")
        if split == "sizes" and (cal is None or not cal.collectives or not data.collectives):
            raise InputError("split: 'sizes' cross-validates single-collective rows by size: it needs --calibrate-on "
                             "single-collective measurements, and such measurements to score")
        if split == "sizes":
            _check_split_sizes(cal.collectives)  # type: ignore[union-attr]
        if data.programs:
            if k > 1 and cal is None:
                raise InputError("folds: cross-validation needs --calibrate-on")
            configs = len({r.group[:4] for r in data.programs})
            if k > configs:
                raise InputError(f"folds: {k} folds but only {configs} measured configurations")
        if data.collectives and cal is not None and not cal.collectives:
            raise InputError("calibrate-on: no single-collective measurements to calibrate the collectives on")
        if cal is not None and not allow_emulated:
            refuse_emulated(cal.programs + cal.collectives, "calibrates on them")
        if cal is not None and split == NO_SPLIT:  # refused here, before any work (the fit itself would, later)
            for name in sorted({r.system for r in cal.collectives}):
                one_size([r for r in cal.collectives if r.system == name], [r for r in cal.programs if r.system == name],
                         name)
        return cls(str(measurements), data, cal, engine, k, bool(allow_emulated), split,
                   limits_of(yes, max_matrices, max_simulations), RunOptions.of(workers, scheduler, scheduler_file))


def _check_split_sizes(rows: Sequence[Any]) -> None:
    """``--split sizes`` fits on every other size and scores the sizes between: a system needs at least
    :data:`SPLIT_SIZES` sizes (two to fit, one between them to score)."""
    sizes: dict[str, set[float]] = {}
    for r in rows:
        sizes.setdefault(r.system, set()).add(r.size_bytes)
    for system, got in sorted(sizes.items()):
        if len(got) < SPLIT_SIZES:
            raise InputError(
                f"split: 'sizes' calibrates on every other size and scores the sizes between, and the calibration rows "
                f"of {system} measure {plural(len(got), 'size')} ({', '.join(format_bytes(b) for b in sorted(got))}): "
                f"it needs at least {SPLIT_SIZES} (two to fit, one between them to score)")


SPLIT_SIZES = 3  # validate --split sizes: the fewest sizes per system (two calibration sizes, one scored between)


@dataclass(frozen=True, repr=False)
class ValidateResult(Tabular):
    """The program part (``programs``) and the single-collective part (``collectives``) of a validation.

    ``table()``: the JSON's ``rows`` (programs) then ``collectives.rows``, each with ``part``
    saying which.
    """

    request: ValidateRequest
    programs: dict[str, Any] | None
    collectives: dict[str, Any] | None
    warnings: tuple[str, ...] = ()

    def table(self) -> list[dict[str, Any]]:
        rows = [dict(part="program", **r) for r in (self.programs or {}).get("rows", [])]
        return rows + [dict(part="collective", **r) for r in (self.collectives or {}).get("rows", [])]

    def summary(self) -> str:
        n_programs = len((self.programs or {}).get("rows", []))
        n_collectives = len((self.collectives or {}).get("rows", []))
        warned = f", {len(self.warnings)} warnings" if self.warnings else ""
        return (f"validate {self.request.source}: {n_programs} program rows, {n_collectives} single-collective "
                f"rows{warned}")

    def to_json(self) -> dict[str, Any]:
        doc = dict(self.programs or {})
        if self.collectives is not None:
            doc["collectives"] = self.collectives
        doc["warnings"] = list(self.warnings)
        return doc


def run_validate(req: ValidateRequest) -> ValidateResult:
    data, cal = req.data, req.calibrate_on
    warnings = [] if req.allow_emulated else emulated_warnings(data.programs + data.collectives)
    parts, tasks = [], None
    if data.programs:
        parts.append(_program_size(list(data.programs), None if cal is None else list(cal.programs), req.engine,
                                   req.folds, req.limits))
        tasks = None if data.collectives else len(groups_of(data.programs))
    if data.collectives:
        parts.append(plural(len(data.collectives), "single-collective row"))
    for w in warnings:
        warn(w)
    programs = collectives = None
    with req.run.executor(tasks) as ex:
        announce(f"{'; '.join(parts)}; {req.run.where(tasks)}")
        if data.programs:
            programs = validate(list(data.programs), ex, req.engine, None if cal is None else list(cal.programs),
                                req.folds).to_json()
        if data.collectives:
            collectives = validate_collectives(data.collectives, ex, req.engine,
                                               None if cal is None else cal.collectives, req.split)
    return ValidateResult(req, programs, collectives, tuple(warnings))
