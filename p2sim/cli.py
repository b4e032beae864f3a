"""The ``p2sim`` command line.

Every command validates its input and reports a bad value as one line on stderr
with exit status 2; results go to stdout (a table, or one JSON object with
``--json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__
from .errors import InputError, P2SimError
from .parsing import int_list, positive_int
from .placement import check_sizes, enumerate_matrices, parse_matrix
from .report.synth import placements_text, synthesis_json, synthesis_text
from .synthesis import DEFAULT_MAX_SIZE, Profile, synthesize_placements

EXIT_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, not a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _emit(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


def _add_layout(p: argparse.ArgumentParser, reduce: bool = True) -> None:
    p.add_argument("--hierarchy", default="2,16", metavar="H0,H1,..",
                   help="level cardinalities, outermost first (default: 2,16 -- two nodes of 16 GPUs)")
    p.add_argument("--axes", default=None, metavar="P0,P1,..",
                   help="parallelism axis sizes; their product must equal the device count "
                        "(default: one axis over all devices)")
    if reduce:
        p.add_argument("--reduce", default="0", metavar="R,..", help="indices of the reduction axes (default: 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def _layout(args: argparse.Namespace) -> tuple[tuple[int, ...], tuple[int, ...]]:
    h = int_list(args.hierarchy, "hierarchy", minimum=1)
    if args.axes is None:
        import math

        p: tuple[int, ...] = (math.prod(h),)
    else:
        p = int_list(args.axes, "axes", minimum=1)
    return check_sizes(h, p)


def cmd_placements(args: argparse.Namespace) -> int:
    h, p = _layout(args)
    mats = enumerate_matrices(h, p)
    if args.json:
        _emit({"hierarchy": list(h), "axes": list(p), "count": len(mats), "matrices": [[list(r) for r in m] for m in mats]})
    else:
        print(placements_text(h, p, mats))
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    h, p = _layout(args)
    red = int_list(args.reduce, "reduce")
    mats = None if args.matrix is None else [parse_matrix(args.matrix)]
    s = synthesize_placements(h, p, red, Profile.parse(args.profile), positive_int(args.max_size, "max-size"), mats)
    if args.json:
        _emit(synthesis_json(s, lowered=args.lower))
    else:
        limit = positive_int(args.limit, "limit") if args.limit != "0" else None
        print(synthesis_text(s, limit))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="p2sim", description=(
        "Synthesize parallelism placements and reduction programs for hierarchical GPU systems."))
    parser.add_argument("--version", action="version", version=f"p2sim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("placements", help="enumerate the parallelism matrices of axes over a hierarchy",
                       description="Enumerate every parallelism matrix of the axes over the hierarchy.")
    _add_layout(p, reduce=False)
    p.set_defaults(func=cmd_placements)

    p = sub.add_parser("synth", help="synthesize every reduction program for every matrix",
                       description="Synthesize every valid reduction program (shortest first) for every "
                                   "parallelism matrix, or for the one given with --matrix.")
    _add_layout(p)
    p.add_argument("--matrix", default=None, help='only this matrix, e.g. "[[2 2] [2 8]]"')
    p.add_argument("--profile", default="paper", help="rule profile: paper (P2's counts) or full (default: paper)")
    p.add_argument("--max-size", default=str(DEFAULT_MAX_SIZE), help=f"longest program (default: {DEFAULT_MAX_SIZE})")
    p.add_argument("--lower", action="store_true", help="with --json: include the global device groups of every step")
    p.add_argument("--limit", default="20", help="programs shown per matrix in the table (0 = all; default 20)")
    p.set_defaults(func=cmd_synth)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return EXIT_INPUT
    try:
        return func(args)
    except P2SimError as e:
        print(f"p2sim {args.command}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
