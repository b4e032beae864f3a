"""The measurement log: JSON lines, one record per (program, iteration).

Rank 0 appends each record and flushes it as soon as it is measured, so an
interrupted run keeps everything measured so far; ``--resume`` reads the log back
and skips what is already there.  ``p2sim validate`` and ``p2sim calibrate`` read
the same files.
"""

from __future__ import annotations

import json
import os
import stat
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from p2sim.util.errors import MeasurementError
from p2sim.util.fileio import read_text
from p2sim.util.units import format_bytes, format_seconds

from .errors import BenchError

__all__ = ["LogWriter", "read_log", "record_key", "completed", "repeated_records", "summary_lines", "compare_lines"]

KEY_FIELDS = ("system", "nodes", "axes", "reduce_axes", "matrix", "program", "algo", "bytes", "backend", "order")
SUMMARY_FIELDS = KEY_FIELDS + ("iteration", "seconds")
SWEEP_FIELDS = ("collective", "size", "count", "in_place", "seconds", "busbw_GBps", "wrong", "checksum", "ranks")
LEGACY = {"order": "aligned"}  # logs written before bench_nccl had device orders ran the aligned one


def record_key(rec: dict[str, Any]) -> str:
    """What identifies a measured program (every field but the iteration and results)."""
    return json.dumps([rec[k] if k in rec else LEGACY[k] for k in KEY_FIELDS], separators=(",", ":"))


class LogWriter:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._drop_cut_record()
            self._file = self.path.open("a", encoding="utf-8")
        except OSError as e:  # a full disk, no permission
            raise BenchError(f"log: cannot append to {self.path} ({e.strerror})") from None

    def _drop_cut_record(self) -> None:
        """A record cut short by an interruption would glue onto the next one: remove it.

        Only the tail is read (back to the last newline), so appending costs nothing however
        long the log; a path that is not a regular file is refused (a device reads forever)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise BenchError(f"log: {self.path} is not a regular file (a device, pipe or socket): give a file path")
        with self.path.open("rb+") as f:
            end = f.seek(0, os.SEEK_END)
            if end == 0:
                return
            f.seek(end - 1)
            if f.read(1) == b"\n":
                return
            pos = end
            while pos > 0:
                start = max(0, pos - 65536)
                f.seek(start)
                cut = f.read(pos - start).rfind(b"\n")
                if cut >= 0:
                    f.truncate(start + cut + 1)
                    return
                pos = start
            f.truncate(0)

    def write(self, record: dict[str, Any]) -> None:
        try:
            self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as e:  # a disk filled meanwhile: the records before this one stand
            raise BenchError(f"log: cannot append to {self.path} ({e.strerror or e}); the records written before "
                             "are kept") from None

    def close(self) -> None:
        self._file.close()


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """Records of a log; a last line cut short by an interruption is dropped.

    A log that is not UTF-8 text, holds a line that is not a JSON object (but the last),
    or lacks a field that the summary needs is one :class:`~p2sim.util.errors.MeasurementError`
    naming the file, the line and the field.
    """
    return [rec for _, rec in numbered_records(path)]


def numbered_records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, record)`` of every record of a log (none when the file does not exist)."""
    p = Path(path)
    if not p.exists():
        return []
    lines = read_text(p, "bench_nccl log", MeasurementError).splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                break
            raise MeasurementError(f"{p}:{n}: record: not valid JSON") from None
        if not isinstance(rec, dict):
            raise MeasurementError(f"{p}:{n}: record: is not a JSON object (is this a bench_nccl log?)")
        needed = SWEEP_FIELDS if _is_sweep(rec) else SUMMARY_FIELDS
        missing = next((k for k in needed if k not in rec and k not in LEGACY), None)
        if missing is not None:
            raise MeasurementError(f"{p}:{n}: {missing}: missing (is this a bench_nccl log?)")
        out.append((n, rec))
    return out


def repeated_records(path: str | Path) -> list[str]:
    """What ``p2sim validate`` would say of a log's repeated records, before a run appends to it: a warning per
    record that repeats another exactly (the same iteration of the same program and run: a log pasted into
    itself; counted once), in validate's words; two different records of one iteration are refused
    (:class:`~p2sim.util.errors.MeasurementError`), as validate refuses them.  Failed records (``pass`` false)
    measure nothing and are skipped, as validate skips them."""
    seen: dict[tuple, tuple[int, Any]] = {}
    said = []
    for n, rec in numbered_records(path):
        if _is_sweep(rec) or "iteration" not in rec or rec.get("pass") is False:
            continue
        ident = (record_key(rec), rec.get("run_id"), rec["iteration"])
        where = f"iteration {rec['iteration']!r} of run {rec.get('run_id')!r} of {rec['program']}"
        if ident not in seen:
            seen[ident] = (n, rec["seconds"])
            continue
        at, was = seen[ident]
        if was != rec["seconds"]:
            raise MeasurementError(f"{path}:{n}: iteration: {where[len('iteration '):]} is already on line {at} with "
                                   f"{was} s, here {rec['seconds']} s: two different records of one iteration")
        said.append(f"{path}:{n}: repeats line {at} ({where}): counted once")
    return said


def completed(records: Iterable[dict[str, Any]]) -> dict[str, set[int]]:
    """Measured iterations per program key."""
    done: dict[str, set[int]] = {}
    for r in records:
        if all(k in r or k in LEGACY for k in KEY_FIELDS) and "iteration" in r:
            done.setdefault(record_key(r), set()).add(int(r["iteration"]))
    return done


def _is_sweep(r: dict[str, Any]) -> bool:
    return r.get("kind") == "sweep"


def summary_lines(records: list[dict[str, Any]]) -> list[str]:
    """One line per program: median, min and max seconds, and whether every check passed.

    Sweep records get one line per sweep (run and collective): its sizes, the busbw at
    the largest size, and the wrong elements.
    """
    sweeps: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        if _is_sweep(r):
            sweeps.setdefault((str(r.get("run_id")), str(r.get("collective"))), []).append(r)
    lines = []
    for (run, coll), recs in sweeps.items():
        big = max(recs, key=lambda r: (r["size"], not r["in_place"]))
        wrong = sum(r["wrong"] or 0 for r in recs)
        checked = all(r["wrong"] is not None for r in recs)
        tag = " (emulated)" if recs[0].get("emulated") else ""
        lines.append(f"sweep {coll:<13} {recs[0]['ranks']} ranks  {format_bytes(min(r['size'] for r in recs))}.."
                     f"{format_bytes(big['size'])}  {len(recs)} rows  busbw {big['busbw_GBps']:.2f} GB/s at "
                     f"{format_bytes(big['size'])}  "
                     f"{'wrong ' + str(wrong) if checked else 'unchecked'}{tag}  run {run}")
    programs = [r for r in records if not _is_sweep(r)]
    if not programs:
        return lines
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in programs:
        groups.setdefault(record_key(r), []).append(r)
    lines = []
    for recs in groups.values():
        first = recs[0]
        secs = [r["seconds"] for r in recs]
        ok = all(r.get("pass") is True for r in recs)
        tag = " (emulated)" if first.get("emulated") else ""
        tag += f" ({first['order']} order)" if first.get("order", "aligned") != "aligned" else ""
        lines.append(f"{format_seconds(statistics.median(secs)):>10} median  [{format_seconds(min(secs))} .. "
                     f"{format_seconds(max(secs))}]  "
                     f"{len(recs):3d} iters  {'PASS' if ok else 'FAIL'}{tag}  {first['algo']:<4} "
                     f"{first['matrix']}  {first['program']}")
    passed = sum(1 for r in programs if r.get("pass") is True)
    lines.append(f"records={len(programs)} programs={len(groups)} passed={passed} failed={len(programs) - passed}")
    return lines


def compare_lines(a: list[dict[str, Any]], b: list[dict[str, Any]], name_a: str = "a",
                  name_b: str = "b") -> tuple[list[str], bool]:
    """Two sweep logs row by row: #wrong and the results' checksums must agree.

    Rows match on (collective, size, count, in place); the last record of each wins.
    Returns the lines to print and whether every row is in both, right, and equal.
    """
    def rows(recs: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
        return {(r["collective"], r["size"], r["count"], r["in_place"]): r for r in recs if _is_sweep(r)}

    ra, rb = rows(a), rows(b)
    be_a, be_b = (next(iter(x.values()), {}).get("backend", "?") for x in (ra, rb))
    lines = [f"{'collective':<13} {'size':>12} {'place':<12} {'#wrong':>13} {'checksum ' + be_a:>20} "
             f"{'checksum ' + be_b:>20} {'time ' + be_a + ' (us)':>18} {'time ' + be_b + ' (us)':>18}  result"]
    same = bool(ra) and bool(rb)
    for key in sorted(set(ra) | set(rb), key=lambda k: (k[0], k[1], k[3])):
        x, y = ra.get(key), rb.get(key)
        if x is None or y is None:
            same = False
            lines.append(f"{key[0]:<13} {key[1]:>12} {'in-place' if key[3] else 'out-of-place':<12} only in "
                         f"{name_a if y is None else name_b}")
            continue
        ok = x["wrong"] == 0 and y["wrong"] == 0 and x["checksum"] == y["checksum"]
        same = same and ok
        lines.append(f"{key[0]:<13} {key[1]:>12} {'in-place' if key[3] else 'out-of-place':<12} "
                     f"{str(x['wrong']) + '/' + str(y['wrong']):>13} {x['checksum']!s:>20} {y['checksum']!s:>20} "
                     f"{x['seconds'] * 1e6:>18.2f} {y['seconds'] * 1e6:>18.2f}  {'same' if ok else 'DIFFERENT'}")
    lines.append(f"{len(set(ra) | set(rb))} rows: {'all present in both, right, and equal' if same else 'DIFFERENCES'}")
    return lines, same
