"""The measurement log: JSON lines, one record per (program, iteration).

Rank 0 appends each record and flushes it as soon as it is measured, so an
interrupted run keeps everything measured so far; ``--resume`` reads the log back
and skips what is already there.  ``p2sim validate`` and ``p2sim calibrate`` read
the same files.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import BenchError

__all__ = ["LogWriter", "read_log", "record_key", "completed", "summary_lines"]

KEY_FIELDS = ("system", "nodes", "axes", "reduce_axes", "matrix", "program", "algo", "bytes", "backend", "order")
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
        except OSError as e:
            raise BenchError(f"log: cannot append to {self.path} ({e.strerror})") from None

    def _drop_cut_record(self) -> None:
        """A record cut short by an interruption would glue onto the next one: remove it."""
        if not self.path.exists():
            return
        with self.path.open("rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """Records of a log; a last line cut short by an interruption is dropped."""
    p = Path(path)
    if not p.exists():
        return []
    lines = p.read_text(encoding="utf-8").splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if n == len(lines):
                break
            raise BenchError(f"{p}:{n}: record: not valid JSON") from None
    return out


def completed(records: Iterable[dict[str, Any]]) -> dict[str, set[int]]:
    """Measured iterations per program key."""
    done: dict[str, set[int]] = {}
    for r in records:
        if all(k in r or k in LEGACY for k in KEY_FIELDS) and "iteration" in r:
            done.setdefault(record_key(r), set()).add(int(r["iteration"]))
    return done


def summary_lines(records: list[dict[str, Any]]) -> list[str]:
    """One line per program: median, min and max seconds, and whether every check passed."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(record_key(r), []).append(r)
    lines = []
    for recs in groups.values():
        first = recs[0]
        secs = [r["seconds"] for r in recs]
        ok = all(r.get("pass") is True for r in recs)
        tag = " (emulated)" if first.get("emulated") else ""
        tag += f" ({first['order']} order)" if first.get("order", "aligned") != "aligned" else ""
        lines.append(f"{statistics.median(secs):10.6f} s median  [{min(secs):.6f} .. {max(secs):.6f}]  "
                     f"{len(recs):3d} iters  {'PASS' if ok else 'FAIL'}{tag}  {first['algo']:<4} "
                     f"{first['matrix']}  {first['program']}")
    passed = sum(1 for r in records if r.get("pass") is True)
    lines.append(f"records={len(records)} programs={len(groups)} passed={passed} failed={len(records) - passed}")
    return lines
