"""``p2sim validate`` and ``p2sim calibrate``."""

from __future__ import annotations

import argparse
import sys

from ..measurements.calibration import CalibrateRequest, run_calibrate
from ..measurements.check import CheckRequest, run_check
from ..report.check import check_text
from ..measurements.validation import ValidateRequest, run_validate
from ..report.collectives import collectives_report, collectives_text
from ..report.files import write_report
from ..report.validate import calibration_lines, validation_report, validation_text
from ..util.fileio import check_output_dir, check_output_file, replace_file
from .common import check_csv, emit, options, write_csv


def cmd_validate(args: argparse.Namespace) -> int:
    if args.out:
        check_output_dir(args.out, "out")
    check_csv(args)
    result = run_validate(ValidateRequest.build(**options(args, ValidateRequest.build)))
    doc = result.to_json()
    if write_csv(args, result):
        pass
    elif args.json:
        emit(doc)
    else:
        texts = ([validation_text(doc)] if result.programs else []) + (
            [collectives_text(doc["collectives"])] if result.collectives else [])
        print("\n\n".join(texts))
        for w in result.warnings:
            print(f"WARNING {w}")
    if args.out:
        sys.stdout.flush()  # the scores stand even if the report cannot be written
        files: dict[str, bytes] = {}
        if result.programs:
            files.update(validation_report(doc))
        if result.collectives:
            files.update(collectives_report(doc["collectives"]))
        written = write_report(args.out, files)
        if not args.json:
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    out = check_output_file(args.out, "out", (".toml",))
    result = run_calibrate(CalibrateRequest.build(**options(args, CalibrateRequest.build)))
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
    check_csv(args)
    result = run_check(CheckRequest.build(**options(args, CheckRequest.build)))
    if write_csv(args, result):
        pass
    elif args.json:
        emit(result.to_json())
    else:
        print(check_text(result))
    return 0
