"""``p2sim validate``, ``p2sim calibrate`` and ``p2sim check``."""

from __future__ import annotations

import argparse
import sys

from .. import api
from ..measurements.validation import ValidateResult
from ..report.check import check_text
from ..report.collectives import collectives_report, collectives_text
from ..report.validate import calibration_lines, validation_report, validation_text
from ..util.fileio import check_output_file, replace_file
from .common import answer, emit, options


def _validate_text(result: ValidateResult) -> str:
    """The program scores and the collective scores, whichever were measured, then the warnings."""
    doc = result.to_json()
    texts = ([validation_text(doc)] if result.programs else []) + (
        [collectives_text(doc["collectives"])] if result.collectives else [])
    return "\n".join(["\n\n".join(texts), *(f"WARNING {w}" for w in result.warnings)])


def _validate_report(result: ValidateResult) -> dict[str, bytes]:
    doc = result.to_json()
    files: dict[str, bytes] = {}
    if result.programs:
        files.update(validation_report(doc))
    if result.collectives:
        files.update(collectives_report(doc["collectives"]))
    return files


def cmd_validate(args: argparse.Namespace) -> int:
    answer(args, api.validate, _validate_text, report=_validate_report)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    out = check_output_file(args.out, "out", (".toml",))
    result = api.calibrate(**options(args, api.calibrate))
    doc = dict(result.to_json(), out=str(out))
    if args.json:
        emit(doc)
    else:
        print(calibration_lines([doc])[0])
        for w in doc["warnings"]:
            print(f"WARNING {w}")
    sys.stdout.flush()  # the fit stands even if the file cannot be written
    replace_file(out, result.toml.encode(), "out")
    if not args.json:
        print(f"wrote {out}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    answer(args, api.check, check_text)
    return 0
