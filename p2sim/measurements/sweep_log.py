"""bench_nccl's size-sweep logs (``bench_nccl sweep``) as measurements: one :class:`CollectiveRow` per record.

``python -m bench_nccl sweep`` appends one JSON object per (collective, size, in/out of
place) to its log, marked ``"kind": "sweep"`` (program-mode records have no ``kind``).
Each carries nccl-tests' columns (``size count type redop root``, ``seconds`` -- the mean
over ranks, as nccl-tests reports -- ``algbw_GBps busbw_GBps wrong``) and the layout it
ran on (``ranks nodes gpus_per_node``, ``system`` when the run named one, ``algo``).

Examples
--------
>>> import json, tempfile, os
>>> rec = {"kind": "sweep", "collective": "AllGather", "size": 4096, "count": 512, "in_place": False,
...        "seconds": 1e-05, "wrong": 0, "ranks": 2, "nodes": 1, "gpus_per_node": 2, "system": None,
...        "algo": "auto", "gpu_name": "NVIDIA H200", "run_id": "ab12"}
>>> fd, name = tempfile.mkstemp(suffix=".jsonl"); os.close(fd)
>>> _ = open(name, "w").write(json.dumps(rec) + "\\n")
>>> is_sweep_log(name)
True
>>> [(r.collective, r.size_bytes, round(r.busbw / 1e6, 3), r.system) for r in read_sweep_log(name, system="h100")]
[('AllGather', 4096.0, 204.8, 'h100')]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..util.errors import MeasurementError
from ..util.fileio import json_loads, read_text
from .collective_rows import ALGO_NAMES, COLLECTIVES, PROTO_NAMES, CollectiveRow, busbw_of

__all__ = ["read_sweep_log", "is_sweep_log", "SWEEP_FIELDS"]

SWEEP_FIELDS = ("collective", "size", "in_place", "seconds", "nodes", "gpus_per_node")


def _fail(src: str, line: int, fld: str, msg: str) -> MeasurementError:
    return MeasurementError(f"{src}:{line}: {fld}: {msg}")


def _positive(src: str, line: int, fld: str, raw: Any, kind: type) -> Any:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or (kind is int and raw != int(raw)):
        raise _fail(src, line, fld, f"{raw!r} is not a {'whole ' if kind is int else ''}number")
    if not raw > 0:
        raise _fail(src, line, fld, f"{raw!r} must be positive")
    return kind(raw)


def _forced(raw: Any, names: tuple[str, ...]) -> str:
    """What an ``NCCL_ALGO`` / ``NCCL_PROTO`` value forced: one name, else NCCL's choice."""
    if not isinstance(raw, str):
        return "auto"
    match = [n for n in names if n.lower() == raw.lower()]
    return match[0] if match else "auto"


def read_sweep_log(path: str | Path, *, system: str | None = None, origin: str | None = None) -> list[CollectiveRow]:
    """The sweep records of a bench_nccl log, in file order.

    Parameters
    ----------
    path : str or Path
        A JSON-lines log written by ``python -m bench_nccl sweep``.  Records of other kinds
        (program mode) are skipped; a last line cut short by an interruption is dropped.
    system : str, optional
        The p2sim system, overriding the record's (required when the sweep named none).
    origin : str, optional
        Where the figures come from (default: the path).

    Returns
    -------
    list of CollectiveRow
        ``seconds`` is the record's (the mean over ranks), ``busbw`` recomputed from it
        with nccl-tests' bus factor; ``algo`` is the sweep's ``--algo`` (``auto``: NCCL
        chose); ``ident`` is ``file:run_id``; ``gpu`` the GPU's name.

    Raises
    ------
    MeasurementError
        One message naming file, line and field: invalid JSON, a missing or bad field, wrong
        results (``wrong`` > 0: the run measured nothing), no system, no sweep records.
    """
    p = Path(path)
    src = str(p)
    lines = read_text(p, "bench_nccl sweep log", MeasurementError).splitlines()
    out: list[CollectiveRow] = []
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            rec = json_loads(text)
        except json.JSONDecodeError as e:
            if n == len(lines):
                break  # the record an interruption cut short
            raise _fail(src, n, "record", f"not valid JSON ({e.msg})") from None
        if not isinstance(rec, Mapping):
            raise _fail(src, n, "record", "is not a JSON object")
        if rec.get("kind") != "sweep":
            continue
        for fld in SWEEP_FIELDS:
            if fld not in rec:
                raise _fail(src, n, fld, "missing")
        coll = rec["collective"]
        if coll not in COLLECTIVES:
            raise _fail(src, n, "collective", f"{coll!r} is not one of {', '.join(COLLECTIVES)}")
        wrong = rec.get("wrong")
        if wrong not in (None, 0):
            raise _fail(src, n, "wrong", f"{wrong} wrong elements: this size's results were wrong; its time "
                        "measures nothing")
        name = system if system is not None else rec.get("system")
        if not name:
            raise _fail(src, n, "system", "the sweep named no system: name the system it ran on "
                        "(bench_nccl sweep --system S when measuring, or p2sim validate/calibrate --system S)")
        nodes = _positive(src, n, "nodes", rec["nodes"], int)
        per_node = _positive(src, n, "gpus_per_node", rec["gpus_per_node"], int)
        if "ranks" in rec and rec["ranks"] != nodes * per_node:
            raise _fail(src, n, "ranks", f"{rec['ranks']!r}, but {nodes} nodes x {per_node} GPUs per node")
        size = _positive(src, n, "size", rec["size"], int)
        seconds = _positive(src, n, "seconds", rec["seconds"], float)
        algo = rec.get("algo", "auto")
        if algo not in ALGO_NAMES:
            raise _fail(src, n, "algo", f"{algo!r} is not one of {', '.join(ALGO_NAMES)}")
        out.append(CollectiveRow(
            source=src, line=n, ident=f"{p.name}:{rec.get('run_id', '')}", system=str(name), nodes=nodes,
            gpus_per_node=per_node, collective=coll, algo=algo,
            proto=_forced(rec.get("nccl_proto"), PROTO_NAMES), size_bytes=float(size), seconds=seconds,
            busbw=busbw_of(coll, nodes * per_node, size, seconds), in_place=bool(rec["in_place"]),
            origin=origin if origin is not None else src, gpu=str(rec.get("gpu_name") or "")))
    if not out:
        raise MeasurementError(f"{src}: no sweep records (lines with \"kind\": \"sweep\")")
    return out


def is_sweep_log(path: str | Path) -> bool:
    """Whether a file's first record is a bench_nccl sweep record (never raises)."""
    try:
        with open(path, encoding="utf-8") as f:
            for text in f:
                if text.strip():
                    rec = json_loads(text)
                    return isinstance(rec, Mapping) and rec.get("kind") == "sweep"
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return False
