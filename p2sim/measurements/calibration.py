"""The calibrate study: one system fitted to measurements, as a system file.

Examples
--------
>>> req = CalibrateRequest.build(measurements="validation/collectives/", system="dgx-h100", workers=1)
>>> fit = run_calibrate(req)
>>> fit.calibration.system, fit.toml.startswith("# Calibrated by p2sim calibrate")
('dgx-h100', True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..studies.jobsize import Limits, plural, program_counts
from ..studies.requests import DEFAULT_SETTINGS, RunOptions
from ..topology import find_spec, system_ref
from ..topology.spec import SystemSpec
from ..topology.toml_out import spec_to_toml
from ..util.log import announce
from ..util.table import HEAD_ROWS, Result
from .fit import Calibration, calibrate, one_size
from .emulated import refuse_emulated
from .inputs import Measurements, load_inputs
from .program_predict import P2, groups_of
from .validation import fitted_engine

__all__ = ["CalibrateRequest", "CalibrateResult", "run_calibrate"]


@dataclass(frozen=True)
class CalibrateRequest:
    source: str
    spec: SystemSpec
    data: Measurements
    engine: str
    allow_emulated: bool
    run: RunOptions

    @classmethod
    def build(cls, measurements: Any, system: str | SystemSpec, engine: str = DEFAULT_SETTINGS.engine, allow_emulated: bool = False,
              workers: Any = None, scheduler: str | None = None, scheduler_file: Any = None
              ) -> CalibrateRequest:
        spec = system if isinstance(system, SystemSpec) else find_spec(system)
        # rows name the system so that find_spec finds this file again: a file whose name is in no
        # catalogue (or a catalogue name of another file) by its path
        data = load_inputs(measurements, spec)
        engine = fitted_engine(engine, "the baseline has no per-channel rates to fit")
        req = cls(str(measurements), spec, data, engine, bool(allow_emulated),
                  RunOptions.of(workers, scheduler, scheduler_file))
        if not allow_emulated:
            refuse_emulated(list(req.program_rows) + list(req.collective_rows), "calibrates on them")
        one_size(req.collective_rows, req.program_rows, spec.name)  # refused here, before any work
        return req

    @property
    def system(self) -> str:
        """What the rows of this system name it (:func:`~p2sim.topology.system_ref`)."""
        return system_ref(self.spec)

    @property
    def program_rows(self) -> tuple:
        """The program rows of this system: those naming it by its reference, or by its name (P2's CSV
        names systems by name), all relabelled with the reference the fit predicts them by."""
        return tuple(replace(r, system=self.system) for r in self.data.programs
                     if r.system in (self.system, self.spec.name))

    @property
    def collective_rows(self) -> tuple:
        return tuple(replace(r, system=self.system) for r in self.data.collectives
                     if r.system in (self.system, self.spec.name))


@dataclass(frozen=True, repr=False)
class CalibrateResult(Result):
    """The fit and the calibrated system file's text (:attr:`toml`)."""

    request: CalibrateRequest
    calibration: Calibration
    toml: str

    def summary(self) -> str:
        c = self.calibration
        return (f"calibrate {self.request.spec.name} on {self.request.source}: {c.rows} rows, RMS log error "
                f"{c.rms_log_before:.3g} -> {c.rms_log_after:.3g}")

    def head_records(self) -> tuple[list[dict[str, Any]], int]:
        rows = [dict(link_class=c, **v) for c, v in self.calibration.to_json()["classes"].items()]
        return rows[:HEAD_ROWS], len(rows)

    def to_json(self) -> dict[str, Any]:
        return self.calibration.to_json()


def run_calibrate(req: CalibrateRequest) -> CalibrateResult:
    mine, singles = list(req.program_rows), list(req.collective_rows)
    per_eval = sum(sum(program_counts(tuple(dict.fromkeys(r.matrix for r in g)), key[3], P2.profile, P2.max_size,
                                      Limits.of(True)))
                   for key, g in groups_of(mine).items())
    tasks = len(groups_of(mine)) if mine and not singles else None
    parts = ([f"{plural(len(mine), 'program row')}: each evaluation {plural(per_eval, 'simulation')}"] if mine else []
             ) + ([plural(len(singles), "single-collective row")] if singles else [])
    with req.run.executor(tasks) as ex:
        if parts:
            announce(f"{req.spec.name}: {'; '.join(parts)}; {req.run.where(tasks)} (a fit takes tens to a few "
                     "hundred evaluations)")
        fit = calibrate(mine, req.system, ex, req.engine, base=req.spec, collectives=singles)
    text = spec_to_toml(fit.after, f"Calibrated by p2sim calibrate from {req.spec.source}\n"
                                   f"on {req.source} ({fit.rows} rows, {req.engine} engine).")
    return CalibrateResult(req, fit, text)
