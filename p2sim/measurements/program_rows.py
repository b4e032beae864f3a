"""Measured programs' rows (:class:`MeasuredRow`): read from P2's appendix CSV and bench_nccl's JSON-lines logs.

Both become :class:`MeasuredRow` values, one per (system, nodes, axes, reduction
axes, matrix, algorithm, device order).  Every problem is reported with the file,
the line and the field.

Each row carries the device order its programs were run with, so that they are
predicted with the same groups: P2's CSV is P2's (``p2``: P2 lowered through XLA,
whose replica groups list a group's devices row-major over the reduction axes),
unless the file has an ``order`` column; a bench_nccl log records its ``order``,
and a log written before bench_nccl had orders ran the ``aligned`` one.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..util.algorithms import BOTH
from ..util.errors import MeasurementError, P2SimError
from ..formalism.hierarchy import Lowering, Order, reduce_axes_of
from ..util.fileio import json_loads, read_text
from ..util.log import warn
from .collective_rows import check_measured
from ..formalism.placement import Matrix, Placement, parse_matrix
from ..formalism.program import parse_program
from ..formalism.synthesis import validate_program
from ..topology import find_spec
from ..studies.config_task import ALLREDUCE_TEXT

__all__ = ["MeasuredRow", "load_measurements", "GroupKey", "CSV_COLUMNS", "CSV_ORDER", "LOG_ORDER", "EMULATED_GPU",
           "is_emulated_record"]

CSV_COLUMNS = ("gpu", "nodes", "gpus_per_node", "axes", "reduce_axes", "matrix", "algo", "allreduce_s",
               "optimal_s", "speedup", "programs_better", "programs_total", "floats_per_gpu")

# (system, nodes, axes, reduction axes, algorithm, bytes, device order): the order parsed once, where the row is read
GroupKey = tuple[str, int, tuple[int, ...], tuple[int, ...], str, float, Order]

CSV_ORDER = Order.P2  # P2's measurements: programs lowered through XLA's replica groups
LOG_ORDER = Order.ALIGNED  # a bench_nccl log without an order field: run before orders, with the aligned one


@dataclass(frozen=True)
class MeasuredRow:
    source: str
    line: int
    system: str
    gpu: str
    nodes: int
    axes: tuple[int, ...]
    reduce_axes: tuple[int, ...]
    matrix: Matrix
    algo: str
    bytes_per_gpu: float
    allreduce_s: float | None
    optimal_s: float
    speedup: float | None
    programs_better: int | None
    programs: tuple[tuple[str, float], ...] = ()  # per-program medians (logs only)
    emulated: bool = False
    order: Order = Order.ALIGNED  # the device order the programs were run with (parsed once, by the reader)
    order_from: str = ""  # where the order came from, for reports

    def __post_init__(self) -> None:
        check_measured(self.source, self.line, "bytes", self.bytes_per_gpu, "bytes")
        times = [("optimal_s", self.optimal_s)] + ([("allreduce_s", self.allreduce_s)] if self.allreduce_s else [])
        for field, v in times + [("seconds", s) for _, s in self.programs]:
            check_measured(self.source, self.line, field, v, "seconds")

    @property
    def group(self) -> GroupKey:
        return (self.system, self.nodes, self.axes, self.reduce_axes, self.algo, self.bytes_per_gpu, self.order)

    def ident(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "nodes": self.nodes, "axes": list(self.axes), "reduce_axes": list(self.reduce_axes),
                "matrix": [list(r) for r in self.matrix], "algo": self.algo, "order": self.order.value}


def _fail(src: str, line: int, field: str, msg: str) -> MeasurementError:
    return MeasurementError(f"{src}:{line}: {field}: {msg}")


def _number(src: str, line: int, field: str, raw: Any, kind: type = float, positive: bool = True) -> Any:
    try:
        v = kind(raw)
    except (TypeError, ValueError):
        raise _fail(src, line, field, f"{raw!r} is not a {'number' if kind is float else 'whole number'}") from None
    if kind is float and v != v:
        raise _fail(src, line, field, f"{raw!r} is not a number")
    if positive and not v > 0:
        raise _fail(src, line, field, f"{raw!r} must be positive")
    return v


def _ints(src: str, line: int, field: str, raw: Any) -> tuple[int, ...]:
    parts = raw if isinstance(raw, list) else str(raw).replace(",", " ").split()
    if not parts:
        raise _fail(src, line, field, "is empty")
    return tuple(_number(src, line, field, p, int, positive=False) for p in parts)


def _check_layout(src: str, line: int, system: str, nodes: int, axes: tuple[int, ...], red: tuple[int, ...],
                  matrix_raw: Any, gpus_per_node: int | None) -> tuple[Matrix, tuple[int, ...], str]:
    try:
        spec = find_spec(system)
    except P2SimError:
        raise _fail(src, line, "gpu" if gpus_per_node is not None else "system",
                    f"unknown system {system!r}") from None
    hier = spec.hierarchy(nodes)
    if gpus_per_node is not None and len(spec.gpus) != gpus_per_node:
        raise _fail(src, line, "gpus_per_node", f"{gpus_per_node} does not match system {spec.name} "
                    f"({len(spec.gpus)} GPUs per node)")
    try:
        matrix = parse_matrix(matrix_raw) if isinstance(matrix_raw, str) else tuple(tuple(int(v) for v in r) for r in matrix_raw)
        Placement.of(hier, axes, matrix)
    except (P2SimError, TypeError, ValueError) as e:
        raise _fail(src, line, "matrix", f"{matrix_raw!r} does not fit axes {list(axes)} on {spec.name} "
                    f"with {nodes} nodes ({e})") from None
    try:
        red = reduce_axes_of(axes, red)
    except P2SimError as e:
        raise _fail(src, line, "reduce_axes", str(e)) from None
    return matrix, red, spec.name


def _algo(src: str, line: int, raw: Any) -> str:
    if raw not in BOTH:  # P2 forced one of its pair of algorithms
        raise _fail(src, line, "algo", f"{raw!r} is not {' or '.join(BOTH)}")
    return raw


def _order(src: str, line: int, raw: Any) -> Order:
    try:
        return Order.parse(raw)
    except P2SimError:
        raise _fail(src, line, "order", f"{raw!r} is not one of {', '.join(o.value for o in Order)}") from None


EMULATED_GPU = "cpu (numpy emulation)"  # bench_nccl's gpu_name for its numpy backend


def is_emulated_record(rec: Mapping[str, Any]) -> bool:
    """Whether a bench_nccl record timed the CPU emulation (``--backend numpy``), not NCCL on GPUs."""
    return bool(rec.get("emulated", False)) or rec.get("gpu_name") == EMULATED_GPU or rec.get("backend") == "numpy"


def _program(src: str, line: int, raw: Any, key: tuple, seen: dict[tuple, dict[str, str]]) -> str:
    """A log's program text, parsed and checked on the row's matrix; its canonical text."""
    known = seen.setdefault(key, {})
    if isinstance(raw, str) and raw in known:
        return known[raw]
    if not isinstance(raw, str) or not raw.strip():
        raise _fail(src, line, "program", f"{raw!r} is not a program text")
    name, nodes, axes, red, matrix, _, _, order = key
    try:
        prog = parse_program(raw)
        lowering = Lowering.of(Placement.of(find_spec(name).hierarchy(nodes), axes, matrix), red, order)
        validate_program(lowering.synthesis, prog)
    except P2SimError as e:
        detail = str(e).removeprefix("program: ")
        raise _fail(src, line, "program", f"{raw!r}: {detail}") from None
    known[raw] = prog.text
    return prog.text


def _load_csv(path: Path) -> list[MeasuredRow]:
    src = str(path)
    with io.StringIO(read_text(path, "measurement file", MeasurementError), newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise _fail(src, 1, missing[0], "missing column")
        width = len(reader.fieldnames or [])
        rows = []
        for rec in reader:
            line = reader.line_num
            short = next((c for c in CSV_COLUMNS if rec[c] is None), None)
            if short is not None:
                raise _fail(src, line, short, f"missing value (the line has fewer fields than the header's {width})")
            if None in rec:
                raise _fail(src, line, "line", f"more fields than the header's {width}")
            nodes = _number(src, line, "nodes", rec["nodes"], int)
            gpn = _number(src, line, "gpus_per_node", rec["gpus_per_node"], int)
            axes = _ints(src, line, "axes", rec["axes"])
            red = _ints(src, line, "reduce_axes", rec["reduce_axes"])
            system = rec["gpu"].strip().lower()
            matrix, red, name = _check_layout(src, line, system, nodes, axes, red, rec["matrix"], gpn)
            allreduce_s = _number(src, line, "allreduce_s", rec["allreduce_s"])
            optimal_s = _number(src, line, "optimal_s", rec["optimal_s"])
            if optimal_s > allreduce_s:
                # the AllReduce is one of the programs, so the best one is never slower
                raise _fail(src, line, "optimal_s", f"{rec['optimal_s']} s is slower than allreduce_s "
                            f"{rec['allreduce_s']} s: the fastest program cannot be slower than the AllReduce, "
                            "which is one of the programs")
            speedup = _number(src, line, "speedup", rec["speedup"])
            if speedup < 1:
                raise _fail(src, line, "speedup", f"{rec['speedup']} is below 1: it is allreduce_s / optimal_s, "
                            "and the fastest program is never slower than the AllReduce")
            derived = allreduce_s / optimal_s
            if abs(speedup - derived) > SPEEDUP_SLACK * derived:
                raise _fail(src, line, "speedup", f"{rec['speedup']} is not allreduce_s / optimal_s = "
                            f"{rec['allreduce_s']} / {rec['optimal_s']} = {derived:.3g}: a derived column contradicts "
                            "the columns it derives from")
            better = _number(src, line, "programs_better", rec["programs_better"], int, positive=False)
            if better < 0:
                raise _fail(src, line, "programs_better", f"{better} is negative")
            total_text = (rec.get("programs_total") or "").strip()  # optional: P2's table has it, logs do not
            if total_text:
                total = _number(src, line, "programs_total", total_text, int, positive=False)
                if total < 1:
                    raise _fail(src, line, "programs_total", f"{total} is below 1: the AllReduce is always one of "
                                "the programs")
                if better > total:
                    raise _fail(src, line, "programs_better", f"{better} is more than programs_total {total}")
            rows.append(MeasuredRow(
                source=src, line=line, system=name, gpu=rec["gpu"].strip(), nodes=nodes, axes=axes, reduce_axes=red,
                matrix=matrix, algo=_algo(src, line, rec["algo"].strip()),
                bytes_per_gpu=4.0 * _number(src, line, "floats_per_gpu", rec["floats_per_gpu"], int),
                allreduce_s=allreduce_s,
                optimal_s=optimal_s,
                speedup=speedup,
                programs_better=better,
                order=_order(src, line, rec["order"]) if rec.get("order") else CSV_ORDER,
                order_from="the file's order column" if rec.get("order") else "P2's CSV: P2 lowered through XLA",
            ))
    return rows


# speedup is printed rounded (P2: two decimals) from times printed rounded too: 3% covers both
SPEEDUP_SLACK = 0.03

LOG_FIELDS = ("system", "nodes", "axes", "reduce_axes", "matrix", "program", "algo", "bytes", "seconds")


def _load_jsonl(path: Path) -> list[MeasuredRow]:
    src = str(path)
    groups: dict[tuple, dict[str, Any]] = {}
    programs_seen: dict[tuple, dict[str, str]] = {}  # per group: raw text -> canonical text
    iterations: dict[tuple, tuple[int, float]] = {}
    with io.StringIO(read_text(path, "measurement file", MeasurementError)) as f:
        for line, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                rec = json_loads(text)
            except json.JSONDecodeError as e:
                raise _fail(src, line, "record", f"not valid JSON ({e.msg})") from None
            if not isinstance(rec, Mapping):
                raise _fail(src, line, "record", "is not a JSON object")
            for field in LOG_FIELDS:
                if field not in rec:
                    raise _fail(src, line, field, "missing")
            if rec.get("pass") is False:
                continue  # a run whose results were wrong measures nothing
            nodes = _number(src, line, "nodes", rec["nodes"], int)
            axes = _ints(src, line, "axes", rec["axes"])
            red = _ints(src, line, "reduce_axes", rec["reduce_axes"])
            matrix, red, name = _check_layout(src, line, str(rec["system"]), nodes, axes, red, rec["matrix"], None)
            key = (name, nodes, axes, red, matrix, _algo(src, line, rec["algo"]),
                   _number(src, line, "bytes", rec["bytes"]), _order(src, line, rec.get("order", LOG_ORDER)))
            g = groups.setdefault(key, {"line": line, "times": {}, "emulated": False, "recorded": "order" in rec})
            text = _program(src, line, rec["program"], key, programs_seen)
            seconds = _number(src, line, "seconds", rec["seconds"])
            if "iteration" in rec:
                # the same iteration of the same program and run twice: a log concatenated with itself
                # (counted once), or two different records of one iteration (refused)
                ident = (key, text, rec.get("run_id"), rec["iteration"])
                if ident in iterations:
                    at, was = iterations[ident]
                    if was != seconds:
                        raise _fail(src, line, "iteration", f"{rec['iteration']!r} of run {rec.get('run_id')!r} of "
                                    f"{text} is already on line {at} with {was} s, here {seconds} s: two different "
                                    "records of one iteration")
                    warn(f"{src}:{line}: repeats line {at} (iteration {rec['iteration']!r} of run "
                         f"{rec.get('run_id')!r} of {text}): counted once")
                    continue
                iterations[ident] = (line, seconds)
            g["times"].setdefault(text, []).append(seconds)
            g["emulated"] = g["emulated"] or is_emulated_record(rec)
    rows = []
    for (name, nodes, axes, red, matrix, algo, nbytes, order), g in groups.items():
        medians = tuple((t, statistics.median(v)) for t, v in g["times"].items())
        ar = dict(medians).get(ALLREDUCE_TEXT)
        best = min(s for _, s in medians)
        rows.append(MeasuredRow(
            source=src, line=g["line"], system=name, gpu=name, nodes=nodes, axes=axes, reduce_axes=red, matrix=matrix,
            algo=algo, bytes_per_gpu=nbytes, allreduce_s=ar, optimal_s=best,
            speedup=None if ar is None else ar / best,
            programs_better=None if ar is None else sum(1 for _, s in medians if s < ar),
            programs=medians, emulated=g["emulated"], order=order,
            order_from="recorded by bench_nccl" if g["recorded"] else "not recorded: bench_nccl before orders",
        ))
    # programs_better in P2's table counts over all matrices of a configuration
    totals: dict[tuple, int] = {}
    for r in rows:
        if r.programs_better is not None:
            totals[r.group] = totals.get(r.group, 0) + r.programs_better
    return [r if r.programs_better is None else replace(r, programs_better=totals[r.group]) for r in rows]


def load_measurements(paths: str | Path | Sequence[str | Path]) -> list[MeasuredRow]:
    """Read one or more CSV (P2's table) or JSON-lines (bench_nccl) files."""
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    rows: list[MeasuredRow] = []
    for p in files:
        path = Path(p)
        if path.is_dir():
            inner = sorted(list(path.glob("*.csv")) + list(path.glob("*.jsonl")))
            if not inner:
                raise MeasurementError(f"{path}: no .csv or .jsonl measurement files in this directory")
            rows += load_measurements(inner)
            continue
        if not path.is_file():
            raise MeasurementError(f"{path}: no such measurement file")
        rows += _load_jsonl(path) if path.suffix in (".jsonl", ".json") else _load_csv(path)
    if not rows:
        raise MeasurementError(f"{', '.join(map(str, files))}: no measurements")
    return rows
