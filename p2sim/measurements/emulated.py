"""Measurements of bench_nccl's CPU emulation: refused by calibration, flagged by validation.

``python -m bench_nccl run|sweep --backend numpy`` runs the collectives on CPUs with
p2sim's numeric executor, so a machine without GPUs can check the runner end to end.
Its times measure numpy copies, not the system's links: calibrated on them, an
NVSwitch fits to 0.41 GB/s.  Program logs mark such records ``"emulated": true``, sweep
logs also name the GPU ``cpu (numpy emulation)``; rows read from them keep the mark
(:attr:`MeasuredRow.emulated`, :attr:`CollectiveRow.gpu`).  ``calibrate`` (and
``validate --calibrate-on``) refuse them and ``validate`` warns about them, unless
``--allow-emulated``.

Examples
--------
>>> from p2sim.measurements.collective_rows import CollectiveRow
>>> row = CollectiveRow("s.jsonl", 3, "s:1", "h100", 1, 2, "AllReduce", "auto", "auto", 4096.0, 1e-4, 1e7,
...                     gpu=EMULATED_GPU)
>>> is_emulated(row)
True
>>> refuse_emulated([row], "calibrates on them")
Traceback (most recent call last):
...
p2sim.util.errors.MeasurementError: s.jsonl:3: emulated: 1 row of this file timed bench_nccl's CPU emulation (--backend numpy): its times measure numpy, not the system's links; --allow-emulated calibrates on them anyway
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..util.errors import MeasurementError
from .program_rows import EMULATED_GPU

__all__ = ["EMULATED_GPU", "is_emulated", "emulated_files", "refuse_emulated", "emulated_warnings"]


def is_emulated(row: Any) -> bool:
    """Whether a measured row (program or single-collective) timed the CPU emulation."""
    return bool(getattr(row, "emulated", False)) or getattr(row, "gpu", "") == EMULATED_GPU


def emulated_files(rows: Iterable[Any]) -> list[tuple[str, int, int]]:
    """``(file, first line, rows)`` of each file with emulated rows, in first-seen order."""
    out: dict[str, list[int]] = {}
    for r in rows:
        if is_emulated(r):
            entry = out.setdefault(r.source, [r.line, 0])
            entry[0] = min(entry[0], r.line)
            entry[1] += 1
    return [(src, line, n) for src, (line, n) in out.items()]


def _what(n: int) -> str:
    return "1 row of this file timed" if n == 1 else f"{n} rows of this file timed"


def refuse_emulated(rows: Iterable[Any], anyway: str) -> None:
    """One error naming the first file with emulated rows; ``anyway`` completes "--allow-emulated ... anyway"."""
    for src, line, n in emulated_files(rows):
        its = "its times measure" if n == 1 else "their times measure"
        raise MeasurementError(f"{src}:{line}: emulated: {_what(n)} bench_nccl's CPU emulation (--backend numpy): "
                               f"{its} numpy, not the system's links; --allow-emulated {anyway} anyway")


def emulated_warnings(rows: Iterable[Any]) -> list[str]:
    """One warning per file with emulated rows, for ``validate``."""
    return [f"{src}:{line}: {_what(n)} bench_nccl's CPU emulation (--backend numpy): scored as measurements, but "
            f"{'it times' if n == 1 else 'they time'} numpy, not the system's links (--allow-emulated silences this)"
            for src, line, n in emulated_files(rows)]
