"""``p2sim sweep``: one collective over a range of sizes, in nccl-tests' layout."""

from __future__ import annotations

import argparse

from .. import api
from ..report.size_sweep import sweep_report, sweep_text
from ..util.errors import InputError
from .common import answer


def _tuner_only(form: str | None, json_too: bool) -> str | None:
    """A sweep emits NCCL tuner rules, not a placement's code."""
    if form not in (None, "nccl-tuner"):
        raise InputError(f"emit: {form!r}: sweep emits nccl-tuner only")
    if form and json_too:
        raise InputError("emit: --emit replaces the table and --json; give one of them")
    return form


def cmd_sweep(args: argparse.Namespace) -> int:
    answer(args, api.sweep, sweep_text, report=sweep_report, forms=_tuner_only)
    return 0
