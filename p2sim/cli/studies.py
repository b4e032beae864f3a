"""``p2sim rank``, ``plan`` and ``whatif``: the answers, as the API gives them, printed."""

from __future__ import annotations

import argparse
import sys

from ..report.files import write_report
from ..report.mesh import check_emit, emit_mesh, plan_mesh_choice, rank_mesh_choice
from ..report.plan import plan_report, plan_text
from ..report.rank import rank_report, rank_text
from ..report.tuner import plan_tuner, rank_tuner
from ..report.whatif import whatif_report, whatif_text
from ..studies.plan import PlanRequest, run_plan
from ..studies.rank import RankRequest, run_rank
from ..studies.whatif import WhatifRequest, run_whatif
from ..util.fileio import check_output_dir
from .common import check_csv, emit, options, write_csv


def cmd_rank(args: argparse.Namespace) -> int:
    if args.out:
        check_output_dir(args.out, "out")
    form = check_emit(args.emit, args.json)
    check_csv(args)
    result = run_rank(RankRequest.build(**options(args, RankRequest.build)))
    if write_csv(args, result):
        pass
    elif form == "nccl-tuner":
        print(rank_tuner(result), end="")
    elif form:
        print(emit_mesh(form, rank_mesh_choice(result, form)), end="")
    elif args.json:
        emit(result.to_json())
    else:
        print(rank_text(result))
    if args.out:
        sys.stdout.flush()  # written after the answer is printed: a late write failure loses no result
        written = write_report(args.out, rank_report(result))
        if not (form or args.json or args.csv == "-"):
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    if args.out:
        check_output_dir(args.out, "out")
    form = check_emit(args.emit, args.json)
    check_csv(args)
    result = run_plan(PlanRequest.build(**options(args, PlanRequest.build, reductions="reduction")))
    if write_csv(args, result):
        pass
    elif form == "nccl-tuner":
        print(plan_tuner(result), end="")
    elif form:
        print(emit_mesh(form, plan_mesh_choice(result, form)), end="")
    elif args.json:
        emit(result.to_json())
    else:
        print(plan_text(result))
    if args.out:
        sys.stdout.flush()  # the answer stands even if the page cannot be written
        written = write_report(args.out, plan_report(result))
        if not (form or args.json or args.csv == "-"):
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return 0


def cmd_whatif(args: argparse.Namespace) -> int:
    if args.out:
        check_output_dir(args.out, "out")
    check_csv(args)
    result = run_whatif(WhatifRequest.build(**options(args, WhatifRequest.build)))
    if write_csv(args, result):
        pass
    elif args.json:
        emit(result.to_json())
    else:
        print(whatif_text(result))
    if args.out:
        sys.stdout.flush()  # the answer stands even if the report cannot be written
        written = write_report(args.out, whatif_report(result))
        if not (args.json or args.csv == "-"):
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return 0
