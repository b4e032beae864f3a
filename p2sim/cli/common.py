"""What every handler shares: the request's keyword arguments from the options, JSON on stdout, and the check
(before any handler runs) that no output option names a file the command reads."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..util.errors import InputError
from ..util.fileio import check_not_input, check_output_file, replace_file

__all__ = ["emit", "options", "check_csv", "write_csv", "check_outputs_not_inputs", "OUTPUT_OPTIONS",
           "INPUT_OPTIONS"]

# the options (argparse destinations) that name files or directories a command writes, and those naming files
# it reads, with how the user wrote them; ``--csv -`` is stdout
OUTPUT_OPTIONS = ("csv", "out", "trace", "draw")
INPUT_OPTIONS = {"measurements": "--measurements", "calibrate_on": "--calibrate-on", "system": "--system",
                 "logs": "LOG", "scheduler_file": "--scheduler-file"}


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


def _system_file(system: str) -> Path | None:
    """The file a ``--system`` value reads: a path as given, a name its catalogue file (as
    :func:`p2sim.topology.find_spec` looks it up), None for an unknown name (refused later)."""
    if system.endswith(".toml") or os.sep in system:
        return Path(system)
    from ..topology import system_paths

    return system_paths().get(system)


def check_outputs_not_inputs(args: argparse.Namespace) -> None:
    """Before any work: no output option names a file that the same command reads (compared as files, so
    that links, ``./`` and relative or absolute spellings of it are found), unless ``--force``.

    Writing it would replace the user's measurements, logs or hand-written system file with a result
    table; ``--out DIR`` holds only report pages and pictures, which no command reads, so it is checked as
    a file: only ``calibrate --out`` can name one.
    """
    outputs = [(dest, value) for dest in OUTPUT_OPTIONS
               if isinstance(value := getattr(args, dest, None), str) and value != "-"]
    if not outputs:
        return
    inputs: list[tuple[str, str | Path]] = []
    for dest, label in INPUT_OPTIONS.items():
        value = getattr(args, dest, None)
        for given in [value] if isinstance(value, str) else value or ():
            path = _system_file(given) if dest == "system" else Path(given)
            if path is not None:
                inputs.append(("SYSTEM" if dest == "system" and args.command == "topo" else label, path))
    for dest, value in outputs:
        check_not_input(value, inputs, dest, getattr(args, "force", False))
