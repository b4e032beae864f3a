"""What every handler shares: the request's keyword arguments from the options, and JSON on stdout."""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections.abc import Callable
from typing import Any

from ..util.errors import InputError
from ..util.fileio import check_output_file, replace_file

__all__ = ["emit", "options", "check_csv", "write_csv"]


def emit(obj: Any) -> None:
    """One JSON object on one line of stdout."""
    json.dump(obj, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


def options(args: argparse.Namespace, build: Callable[..., Any], **renamed: str) -> dict[str, Any]:
    """The keyword arguments of a request's ``build`` that the command line has options for.

    Every option's destination is the parameter's name (``--max-size`` is ``max_size``), except
    those in ``renamed`` (parameter name: option destination), so a handler never picks values
    out one by one.
    """
    out = {}
    for name in inspect.signature(build).parameters:
        dest = renamed.get(name, name)
        if hasattr(args, dest):
            out[name] = getattr(args, dest)
    return out


def check_csv(args: argparse.Namespace) -> None:
    """Before any work: ``--csv -`` replaces the printed table, so it excludes the other printed forms."""
    target = getattr(args, "csv", None)
    if target is None:
        return
    if target == "-":
        other = "--json" if getattr(args, "json", False) else "--emit" if getattr(args, "emit", None) else None
        if other:
            raise InputError(f"csv: --csv - prints the table as CSV, as {other} prints its own form; give one of them")
    else:
        check_output_file(target, "csv", (".csv",))


def write_csv(args: argparse.Namespace, result: Any) -> bool:
    """Write ``result.to_csv()`` where ``--csv`` says; True when it went to stdout (instead of the table)."""
    target = getattr(args, "csv", None)
    if target is None:
        return False
    text = result.to_csv()
    if target == "-":
        sys.stdout.write(text)
        return True
    replace_file(target, text.encode(), "csv")
    return False
