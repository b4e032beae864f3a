"""``p2sim sweep``: one collective over a range of sizes, in nccl-tests' layout."""

from __future__ import annotations

import argparse
import sys

from ..report.files import write_report
from ..report.size_sweep import sweep_report, sweep_text
from ..studies.size_sweep import SweepRequest, run_sweep
from ..report.tuner import sweep_tuner
from ..util.errors import InputError
from ..util.fileio import check_output_dir
from .common import check_csv, emit, options, write_csv


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.out:
        check_output_dir(args.out, "out")
    if args.emit not in (None, "nccl-tuner"):
        raise InputError(f"emit: {args.emit!r}: sweep emits nccl-tuner only")
    if args.emit and args.json:
        raise InputError("emit: --emit replaces the table and --json; give one of them")
    check_csv(args)
    result = run_sweep(SweepRequest.build(**options(args, SweepRequest.build)))
    if write_csv(args, result):
        pass
    elif args.emit:
        print(sweep_tuner(result), end="")
    elif args.json:
        emit(result.to_json())
    else:
        print(sweep_text(result))
    if args.out:
        sys.stdout.flush()  # the table stands even if the report cannot be written
        files = write_report(args.out, sweep_report(result))
        if not (args.json or args.emit or args.csv == "-"):
            print(f"\nreport: {', '.join(str(w) for w in files)}")
    return 0
