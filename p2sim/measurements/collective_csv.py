"""Single-collective measurements read from CSV (the columns of the published-results dev set).

One row per (collective, size) point: ``id, source, gpu, gpus_per_node, nodes,
collective, algo, size_bytes, time_us, algbw_GBps, busbw_GBps, place`` (more columns are
kept as notes).  The p2sim system of a row comes from a ``system`` column or from a
mapping file beside the CSV, ``<name>.systems.csv`` (``id, system, hca, algo, env, note``),
which also says which NICs NCCL used (``hca``, space separated), what the measured
NCCL was told in p2sim's terms (``algo``: auto, ring, tree, nvls, nvls_tree) and the
NCCL environment the source's job set (``env``: ``NCCL_NVLS_ENABLE=0 NCCL_COLLNET_ENABLE=0``,
read by :mod:`p2sim.topology.nccl_env`; the row is predicted under those settings).  Rows need
a time or a bandwidth; the missing one is derived with nccl-tests' bus factors.
``gpus_per_node`` may carry a remark after the number, as published rows describe their
hardware (``72 (one NVL72 rack ...)``).  Every problem names the file, the line and the
field: :func:`load_collective_csv` stops at the first, :func:`read_collective_csv` lists the
rows it could not read and reads on.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..util.errors import InputError, MeasurementError, P2SimError
from ..topology import find_spec
from ..topology.nccl_env import parse_env
from ..collectives.busbw import SIMULATED
from .collective_rows import ALGO_NAMES, PROTO_NAMES, CollectiveRow, bus_factor

__all__ = ["REQUIRED", "SkippedRow", "is_collective_csv", "load_collective_csv", "mapping_path", "read_collective_csv"]

REQUIRED = ("id", "gpus_per_node", "nodes", "collective", "size_bytes")
MAPPING_SUFFIX = ".systems.csv"


def _fail(src: str, line: int, field: str, msg: str) -> MeasurementError:
    return MeasurementError(f"{src}:{line}: {field}: {msg}")


def _header(path: Path) -> list[str]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return next(csv.reader(f), [])
    except UnicodeDecodeError:
        raise MeasurementError(f"{path}: not UTF-8 text") from None


def is_collective_csv(path: Path) -> bool:
    """A CSV whose header holds the single-collective columns."""
    return path.suffix == ".csv" and not path.name.endswith(MAPPING_SUFFIX) and all(
        c in _header(path) for c in ("collective", "size_bytes"))


def mapping_path(path: Path) -> Path:
    return path.with_name(path.name[: -len(".csv")] + MAPPING_SUFFIX)


def _read(path: Path) -> list[tuple[int, dict[str, str]]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            out = []
            width = len(reader.fieldnames or [])
            for rec in reader:
                if None in rec:
                    raise _fail(str(path), reader.line_num, "line", f"more fields than the header's {width}")
                out.append((reader.line_num, rec))
            return out
    except UnicodeDecodeError:
        raise MeasurementError(f"{path}: not UTF-8 text") from None


def _mapping(path: Path) -> dict[str, dict[str, Any]]:
    m = mapping_path(path)
    if not m.is_file():
        return {}
    out: dict[str, dict[str, Any]] = {}
    for line, rec in _read(m):
        for field in ("id", "system"):
            if not (rec.get(field) or "").strip():
                raise _fail(str(m), line, field, "missing")
        rid = rec["id"].strip()
        if rid in out:
            raise _fail(str(m), line, "id", f"{rid!r} is listed twice")
        try:
            env = parse_env(rec.get("env") or "", f"{m}:{line}: env")
        except InputError as e:
            raise MeasurementError(str(e)) from None
        out[rid] = {"line": line, "system": rec["system"].strip(), "hca": tuple((rec.get("hca") or "").split()),
                    "algo": (rec.get("algo") or "").strip().lower(), "env": env,
                    "note": (rec.get("note") or "").strip(), "source": str(m)}
    return out


def _number(src: str, line: int, field: str, raw: Any, kind: type = float) -> Any:
    try:
        v = kind(str(raw).strip())
    except (TypeError, ValueError):
        raise _fail(src, line, field, f"{raw!r} is not a {'number' if kind is float else 'whole number'}") from None
    if not v > 0 or (kind is float and not math.isfinite(v)):
        raise _fail(src, line, field, f"{raw!r} must be a positive finite number")
    return v


# A count may carry a remark after it, as published rows describe their hardware: "72 (one NVL72
# rack = one MNNVL clique; ...)"; the whole number before the parenthesis is the count
_REMARKED = re.compile(r"\s*(\d+)\s*\(.*\)\s*", re.DOTALL)


def _count(src: str, line: int, field: str, raw: Any) -> int:
    """A whole number, bare or followed by a parenthesised remark."""
    m = _REMARKED.fullmatch(str(raw))
    return _number(src, line, field, m.group(1) if m else raw, int)


def _optional(src: str, line: int, field: str, raw: str | None) -> float | None:
    return None if raw is None or not raw.strip() else _number(src, line, field, raw)


def _algo(src: str, line: int, field: str, raw: str) -> str:
    a = raw.strip().lower().replace("-", "_")
    if a == "default":
        return "auto"
    if a not in ALGO_NAMES:
        raise _fail(src, line, field, f"{raw!r} is not one of {', '.join(ALGO_NAMES)} "
                    "(give it in the mapping file when the CSV's column says more)")
    return a


# nccl-tests prints bandwidths with two decimals and times with three or four digits: derived
# columns that agree with what they derive from to 2% (or 0.02 GB/s) are consistent
DERIVED_SLACK, DERIVED_FLOOR_GBPS = 0.02, 0.02


def _check_derived(src: str, line: int, coll: str, ranks: int, size: float, seconds: float, algbw: float | None,
                   busbw: float | None) -> None:
    """busbw = size / time x the bus factor, where the row gives both (nccl-tests' rule).  algbw is not
    checked: nccl-tests before 2.6 printed some collectives' algbw per rank (the dev set's 2019 rows)."""
    want_alg = size / seconds / 1e9
    for field, got, want in (("busbw_GBps", busbw, want_alg * bus_factor(coll, ranks)),):
        if got is not None and abs(got - want) > max(DERIVED_SLACK * want, DERIVED_FLOOR_GBPS):
            raise _fail(src, line, field, f"{got:g} GB/s, but the row's time and size give {want:.4g} GB/s: a derived "
                        "column contradicts the columns it derives from")


@dataclass(frozen=True)
class SkippedRow:
    """A row :func:`read_collective_csv` could not read, and why (the error ``load_collective_csv`` raises)."""

    ident: str
    source: str
    line: int
    reason: str


def _row(path: Path, line: int, rec: dict[str, str], rid: str, m: dict[str, Any]) -> CollectiveRow:
    """One CSV record as a row; a :class:`MeasurementError` naming the file, line and field otherwise."""
    src = str(path)
    system = (rec.get("system") or "").strip() or m.get("system", "")
    if not system:
        raise _fail(src, line, "system", f"row {rid!r} names no p2sim system (a system column, or "
                    f"{mapping_path(path).name} beside the file)")
    try:
        spec = find_spec(system)
    except P2SimError as e:
        raise _fail(m.get("source", src), m.get("line", line), "system", str(e)) from None
    nodes = _number(src, line, "nodes", rec["nodes"], int)
    gpn = _count(src, line, "gpus_per_node", rec["gpus_per_node"])
    if gpn > len(spec.gpus):
        raise _fail(src, line, "gpus_per_node", f"{gpn} is more than {spec.name}'s {len(spec.gpus)} GPUs per node")
    coll = (rec.get("collective") or "").strip()
    if coll not in SIMULATED:
        raise _fail(src, line, "collective", f"{coll!r} is not one of {', '.join(SIMULATED)}")
    algo = _algo(m.get("source", src), m.get("line", line), "algo", m.get("algo") or rec.get("algo") or "auto")
    proto = (rec.get("proto") or "auto").strip()
    if proto not in PROTO_NAMES:
        raise _fail(src, line, "proto", f"{proto!r} is not one of {', '.join(PROTO_NAMES)}")
    size = _number(src, line, "size_bytes", rec["size_bytes"])
    ranks = nodes * gpn
    if ranks < 2:
        raise _fail(src, line, "nodes", "a collective needs at least two GPUs")
    t = _optional(src, line, "time_us", rec.get("time_us"))
    busbw = _optional(src, line, "busbw_GBps", rec.get("busbw_GBps"))
    algbw = _optional(src, line, "algbw_GBps", rec.get("algbw_GBps"))
    if t is not None:
        seconds = t * 1e-6
    elif busbw is not None:
        seconds = size / (busbw * 1e9 / bus_factor(coll, ranks))
    elif algbw is not None:
        seconds = size / (algbw * 1e9)
    else:
        raise _fail(src, line, "time_us", "no time, algbw or busbw")
    _check_derived(src, line, coll, ranks, size, seconds, algbw, busbw)
    for h in m.get("hca", ()):
        if h not in {c for c, k in spec.components if k == "nic"}:
            raise _fail(m["source"], m["line"], "hca", f"{h!r} is not a NIC of {spec.name}")
    return CollectiveRow(
        source=src, line=line, ident=rid, system=spec.name, nodes=nodes, gpus_per_node=gpn, collective=coll,
        algo=algo, proto=proto, size_bytes=size, seconds=seconds,
        busbw=size / seconds * bus_factor(coll, ranks), in_place=(rec.get("place") or "").strip() == "in",
        origin=(rec.get("source") or "").strip(), gpu=(rec.get("gpu") or "").strip(), hca=m.get("hca", ()),
        env=m.get("env", ()), note=m.get("note", ""),
    )


def read_collective_csv(path: str | Path) -> tuple[list[CollectiveRow], list[SkippedRow]]:
    """Read one single-collective CSV (and its mapping file, if any), keeping going past bad rows.

    The rows it could read, and each row it could not with the reason (a system this p2sim does
    not ship, a value out of range): for a benchmark that scores what it can and says what it
    cannot.  A problem of the whole file (a missing column, a bad mapping file, a repeated id)
    still raises :class:`MeasurementError`.
    """
    path = Path(path)
    src = str(path)
    rows = _read(path)
    header = _header(path)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise _fail(src, 1, missing[0], "missing column")
    mapping = _mapping(path)
    out: list[CollectiveRow] = []
    skipped: list[SkippedRow] = []
    seen: dict[str, int] = {}
    for line, rec in rows:
        rid = (rec.get("id") or "").strip() or f"{path.name}:{line}"
        if rid in seen:
            raise _fail(src, line, "id", f"{rid!r} repeats line {seen[rid]}")
        seen[rid] = line
        try:
            out.append(_row(path, line, rec, rid, mapping.get(rid, {})))
        except MeasurementError as e:
            skipped.append(SkippedRow(rid, src, line, str(e)))
    if not out and not skipped:
        raise MeasurementError(f"{src}: no measurements")
    return out, skipped


def load_collective_csv(path: str | Path) -> list[CollectiveRow]:
    """Read one single-collective CSV (and its mapping file, if any); its first bad row is an error."""
    out, skipped = read_collective_csv(path)
    if skipped:
        raise MeasurementError(skipped[0].reason)
    return out
