"""``p2sim rank``, ``plan`` and ``whatif``: the answers, as the API gives them, printed."""

from __future__ import annotations

import argparse

from .. import api
from ..report.mesh import check_emit
from ..report.config_search import search_text
from ..report.plan import plan_report, plan_text
from ..report.rank import rank_report, rank_text
from ..report.step_time import step_text
from ..report.whatif import whatif_report, whatif_text
from ..util.errors import InputError
from .common import answer


def _forms(args: argparse.Namespace):
    """``--emit`` checked before any work, ``megatron`` against ``--axes``' names too."""
    return lambda form, json_too: check_emit(form, json_too, getattr(args, "axes", None))


def cmd_rank(args: argparse.Namespace) -> int:
    answer(args, api.rank, rank_text, report=rank_report, forms=_forms(args))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    if args.model is not None and args.axes is None:
        # the configuration search: its answer is a table of configurations, no placement to emit or page to write
        for flag, value in (("--out", args.out), ("--emit", args.emit), ("--csv", args.csv)):
            if value is not None:
                raise InputError(f"{flag.lstrip('-')}: {flag} is for a plan of given --axes; the configuration "
                                 "search (--model without --axes) prints its table, or --json")
        answer(args, api.plan, search_text)
        return 0
    answer(args, api.plan, plan_text, report=plan_report, forms=_forms(args))
    return 0


def cmd_whatif(args: argparse.Namespace) -> int:
    if args.model is not None and args.out is not None:
        # the page's table and plot are one reduction's (its buffer, program, algorithm); a step has many
        raise InputError("out: whatif --model writes no page; leave --out out (the text and --json give every "
                         "point's step by axis)")
    answer(args, api.whatif, whatif_text, report=whatif_report)
    return 0


def cmd_step(args: argparse.Namespace) -> int:
    answer(args, api.step, step_text)
    return 0
