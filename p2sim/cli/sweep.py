"""``p2sim sweep``: one collective over a range of sizes, in nccl-tests' layout."""

from __future__ import annotations

import argparse
import sys

from ..report.files import write_report
from ..report.size_sweep import sweep_report, sweep_text
from ..studies.size_sweep import SweepRequest, run_sweep
from ..util.fileio import check_output_dir
from .common import emit, options


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.out:
        check_output_dir(args.out, "out")
    result = run_sweep(SweepRequest.build(**options(args, SweepRequest.build)))
    if args.json:
        emit(result.to_json())
    else:
        print(sweep_text(result))
    if args.out:
        sys.stdout.flush()  # the table stands even if the report cannot be written
        files = write_report(args.out, sweep_report(result))
        if not args.json:
            print(f"\nreport: {', '.join(str(w) for w in files)}")
    return 0
