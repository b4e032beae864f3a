"""Every kind of measurement file, recognised by its content, in two lists.

* programs' measurements (:class:`~p2sim.measurements.program_rows.MeasuredRow`): P2's CSV and
  bench_nccl program logs;
* single collectives (:class:`~p2sim.measurements.collective_rows.CollectiveRow`): CSVs in the
  dev-set columns (``collective``, ``size_bytes``; their system from a ``system`` column or
  ``<name>.systems.csv``), bench_nccl sweep logs, and nccl-tests' text output or its ``-J`` JSON files
  (``*.txt``, ``*.log``, ``*.out``, ``*.json``).

nccl-tests logs do not say which p2sim system they ran on: ``system`` names it for every
log, and a directory may hold ``systems.csv`` (``file, system, hca, algo, env``) naming it per
log, with the NICs NCCL used (``hca``, space separated), what ``NCCL_ALGO`` was
(``algo``) when the log does not print it, and the NCCL environment its job set (``env``,
:mod:`p2sim.topology.nccl_env`: the log is predicted under those settings).  Optional columns ``nodes, gpus_per_node`` give
the layout of a table published without nccl-tests' rank lines and closing lines, and
``collective`` the collective when nothing in the file names it.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..topology import find_spec, system_ref
from ..topology.nccl_env import parse_env
from ..topology.spec import SystemSpec
from ..util.errors import InputError, MeasurementError, TopologyError
from ..util.fileio import check_input_file
from .collective_csv import MAPPING_SUFFIX, is_collective_csv, load_collective_csv
from ..collectives.busbw import SIMULATED
from .collective_rows import CollectiveRow
from .duplicates import dedupe_collectives, dedupe_programs
from .program_rows import MeasuredRow, load_measurements
from .nccltests import is_nccltests_log, read_nccltests
from .sweep_log import is_sweep_log, read_sweep_log

__all__ = ["Measurements", "load_inputs", "LOG_SUFFIXES", "LOG_MAPPING"]

LOG_SUFFIXES = (".txt", ".log", ".out")
LOG_MAPPING = "systems.csv"  # per-directory mapping of nccl-tests logs to systems


@dataclass(frozen=True)
class Measurements:
    programs: tuple[MeasuredRow, ...]
    collectives: tuple[CollectiveRow, ...]

    def __bool__(self) -> bool:
        return bool(self.programs or self.collectives)


def _log_mapping(folder: Path) -> dict[str, dict[str, str]]:
    path = folder / LOG_MAPPING
    if not path.is_file():
        return {}
    out: dict[str, dict[str, str]] = {}
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            for rec in reader:
                name = (rec.get("file") or "").strip()
                if not name or not (rec.get("system") or "").strip():
                    raise MeasurementError(f"{path}:{reader.line_num}: file, system: both are needed")
                if not (folder / name).is_file():  # a typo would leave its log without a system
                    raise MeasurementError(f"{path}:{reader.line_num}: file: {name!r} is not a file in {folder}")
                out[name] = {k: (v or "").strip() for k, v in rec.items() if k}
                _check_layout(path, reader.line_num, out[name])
                try:
                    out[name]["env"] = parse_env(out[name].get("env", ""), f"{path}:{reader.line_num}: env")
                except InputError as e:
                    raise MeasurementError(str(e)) from None
    except UnicodeDecodeError:
        raise MeasurementError(f"{path}: not UTF-8 text") from None
    return out


def _check_layout(path: Path, line: int, rec: dict[str, str]) -> None:
    """A mapping row's optional layout (``nodes``, ``gpus_per_node``: both or neither) and ``collective``."""
    given = [k for k in ("nodes", "gpus_per_node") if rec.get(k)]
    if len(given) == 1:
        other = "gpus_per_node" if given == ["nodes"] else "nodes"
        raise MeasurementError(f"{path}:{line}: {other}: missing; {given[0]} is given, and a log's layout needs both")
    for k in given:
        if not (rec[k].isascii() and rec[k].isdigit()) or int(rec[k]) < 1:
            raise MeasurementError(f"{path}:{line}: {k}: {rec[k]!r} is not a whole number >= 1")
    if rec.get("collective") and rec["collective"] not in SIMULATED:
        raise MeasurementError(f"{path}:{line}: collective: {rec['collective']!r} is not one of "
                               f"{', '.join(SIMULATED)}")


def _nccltests(path: Path, system: str | None, mapping: dict[str, dict[str, str]]) -> list[CollectiveRow]:
    m = mapping.get(path.name, {})
    name = m.get("system") or system
    if not name:
        raise MeasurementError(f"{path}: system: nccl-tests logs do not name the p2sim system; give --system, or "
                               f"list the file in {path.parent / LOG_MAPPING} (file, system[, hca, algo, nodes, "
                               "gpus_per_node, collective])")
    layout = {k: int(m[k]) for k in ("nodes", "gpus_per_node") if m.get(k)}
    rows = read_nccltests(path, system=name, algo=m.get("algo") or None, collective=m.get("collective") or None,
                          **layout)
    hca, env = tuple(m.get("hca", "").split()), m.get("env", ())
    return [replace(r, hca=hca, env=env) for r in rows] if hca or env else rows


def _files(paths: Sequence[str | Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if isinstance(p, str) and not p.strip():  # Path("") is the current directory
            raise MeasurementError(f"measurements: {p!r} is empty: give a file's or a directory's path")
        path = Path(p)
        if path.is_dir():
            inner = sorted(f for f in path.iterdir() if f.is_file() and not f.name.endswith(MAPPING_SUFFIX)
                           and f.name != LOG_MAPPING and f.suffix in (".csv", ".jsonl", ".json") + LOG_SUFFIXES
                           and f.name != "README.md")
            if not inner:
                raise MeasurementError(f"{path}: no measurement files in this directory")
            out += inner
        else:
            # every reader opens a file more than once (to recognise it, then to read it): no pipes
            check_input_file(path, "measurement file", MeasurementError, pipes=False)
            out.append(path)
    return out


def _check_fits(rows: Sequence[CollectiveRow], given: SystemSpec | None = None) -> None:
    """Every row's ranks fit its system: no more ranks per host than the system has GPUs per node
    (fewer run on each node's first GPUs, as ``--gpus-per-node`` does).  ``given``: the system the
    caller holds (perhaps changed in memory), for the rows that name it."""
    per_node: dict[str, int] = {} if given is None else {system_ref(given): len(given.gpus)}
    for r in rows:
        if r.system not in per_node:
            try:
                per_node[r.system] = len(find_spec(r.system).gpus)
            except TopologyError as e:
                raise MeasurementError(f"{r.source}:{r.line}: {e}") from None
        if r.gpus_per_node > per_node[r.system]:
            raise MeasurementError(f"{r.source}:{r.line}: the measurement ran {r.gpus_per_node} ranks per host, but "
                                   f"{r.system} has {per_node[r.system]} GPUs per node: give the system it ran on")


def load_inputs(paths: str | Path | Sequence[str | Path], system: str | SystemSpec | None = None) -> Measurements:
    """Read measurement files and directories of them (see the module docstring).

    ``system``: what nccl-tests logs and sweep logs ran on (they cannot say), by name or path, or a
    system itself, which the rows name by :func:`~p2sim.topology.system_ref` (and which need not be
    as its file says: the caller predicts them with it).
    """
    given = system if isinstance(system, SystemSpec) else None
    if given is not None:
        system = system_ref(given)
    files = _files([paths] if isinstance(paths, (str, Path)) else list(paths))
    programs: list[MeasuredRow] = []
    singles: list[CollectiveRow] = []
    for f in files:
        if f.suffix == ".csv":
            if is_collective_csv(f):
                singles += load_collective_csv(f)
            else:
                programs += load_measurements(f)
        elif f.suffix in (".jsonl", ".json"):
            if is_sweep_log(f):
                singles += read_sweep_log(f, system=system)
            elif f.suffix == ".json" and is_nccltests_log(f):  # nccl-tests' -J output
                singles += _nccltests(f, system, _log_mapping(f.parent))
            else:
                programs += load_measurements(f)
        elif is_nccltests_log(f):
            singles += _nccltests(f, system, _log_mapping(f.parent))
        elif len(files) == 1:
            raise MeasurementError(f"{f}: neither a measurement CSV, a bench_nccl log nor nccl-tests output")
    if not programs and not singles:
        raise MeasurementError(f"{', '.join(map(str, files))}: no measurements")
    _check_fits(singles, given)
    # across files too: a copy of a log in the directory would count twice
    return Measurements(tuple(dedupe_programs(programs)), tuple(dedupe_collectives(singles)))
