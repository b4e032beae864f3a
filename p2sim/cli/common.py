"""What every handler shares: the API call, the answer printed, the ``--out`` report, the output check.

The API call with the options as its keyword arguments, the answer printed in
the form asked (table, CSV, JSON, emitted code) with the ``--out`` report after it (:func:`answer`), and the
check (before any handler runs) that no output option names a file the command reads."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..util.errors import InputError
from ..util.fileio import check_input_file, check_not_input, check_output_dir, check_output_file, replace_file

__all__ = ["emit", "options", "answer", "check_csv", "write_csv", "check_outputs_not_inputs", "check_inputs",
           "OUTPUT_OPTIONS", "INPUT_OPTIONS"]



class _Answer(Protocol):
    """What every command's result has: the document ``--json`` prints."""

    def to_json(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=_Answer)

# the options (argparse destinations) that name files or directories a command writes, and those naming files
# it reads, with how the user wrote them; ``--csv -`` is stdout
OUTPUT_OPTIONS = ("csv", "out", "trace", "draw")
# (every option that names a file read: a new one belongs here, or --csv can replace it)
INPUT_OPTIONS = {"measurements": "--measurements", "calibrate_on": "--calibrate-on", "system": "--system",
                 "logs": "LOG", "scheduler_file": "--scheduler-file", "model": "--model"}


def emit(obj: Any) -> None:
    """One JSON object on one line of stdout."""
    json.dump(obj, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


def options(args: argparse.Namespace, call: Callable[..., Any]) -> dict[str, Any]:
    """The keyword arguments of an API function that the command line has options for: every option's
    destination is the parameter's name (``--max-size`` is ``max_size``), so a handler never picks values out
    one by one."""
    return {name: getattr(args, name) for name in inspect.signature(call).parameters if hasattr(args, name)}


def answer(args: argparse.Namespace, call: Callable[..., R], text: Callable[[R], str], *,
           report: Callable[[R], dict[str, bytes]] | None = None,
           forms: Callable[[str | None, bool], str | None] | None = None, **given: Any) -> R:
    """A command: its outputs checked, the API function ``call`` run with the options (and ``given``, which
    replaces an option the API takes otherwise), and its result printed as asked -- ``--csv -``, ``--emit``
    (the form ``forms`` accepts, printed by :func:`p2sim.api.emit`), ``--json``, else ``text`` -- then
    ``report``'s files written into ``--out``; returns the result for what a command writes besides."""
    from ..api import emit as emitted  # imported when a command runs, not for --help or a parse error
    from ..report.files import write_report

    out = getattr(args, "out", None) if report is not None else None
    if out:
        check_output_dir(out, "out")
    form = forms(args.emit, args.json) if forms is not None else None
    check_csv(args)
    result = call(**{**options(args, call), **given})
    if write_csv(args, result):
        pass
    elif form:
        print(emitted(result, form), end="")
    elif args.json:
        emit(result.to_json())
    else:
        print(text(result))
    if out and report is not None:
        sys.stdout.flush()  # written after the answer is printed: a late write failure loses no result
        pages = report(result)
        for name in pages:  # a page's name is known now: none may replace an input (a --model named plan.md)
            check_not_input(Path(out) / name, _inputs(args), "out", getattr(args, "force", False))
        written = write_report(out, pages)
        if not (form or args.json or getattr(args, "csv", None) == "-"):
            print(f"\nreport: {', '.join(str(w) for w in written)}")
    return result


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


def _model_file(model: str) -> Path | None:
    """The file a ``--model`` value reads: a preset's shipped ``config.json``, else the path as given."""
    from ..workload.model_files import PRESETS, preset_path

    return preset_path(model) if model in PRESETS else Path(model) if model.strip() else None


def _input_file(dest: str, given: str) -> Path | None:
    """The file an input option's value reads (None: none, or not known yet: refused later)."""
    if dest == "system":
        return _system_file(given)
    if dest == "model":
        return _model_file(given)
    return Path(given)


# the input options that may name a directory of files (each of its files is checked as it is listed), and the
# one that may name a pipe (a system file, ``--system <(...)``, read once)
_DIRECTORIES = frozenset({"measurements", "calibrate_on", "logs"})
_PIPES = frozenset({"system"})
_WHAT = {"measurements": "measurement file", "calibrate_on": "measurement file", "logs": "measurement file",
         "system": "system file", "scheduler_file": "Dask scheduler file", "model": "model configuration"}


def _given(args: argparse.Namespace, dest: str) -> list[str]:
    value = getattr(args, dest, None)
    return [value] if isinstance(value, str) else list(value or ())


def check_inputs(args: argparse.Namespace) -> None:
    """Before any work: every file an input option names is there and is a regular file (a directory where one
    may be given, a pipe for ``--system``), looked at before anything opens it -- a named pipe nobody writes
    would block its reader for ever -- and no input option is empty (``Path("")`` is the current directory)."""
    for dest, label in INPUT_OPTIONS.items():
        for given in _given(args, dest):
            if not given.strip():
                label = "SYSTEM" if dest == "system" and args.command == "topo" else label  # topo's is positional
                raise InputError(f"{dest.replace('_', '-')}: {label} {given!r} is empty: give a file's path"
                                 + (" or a name" if dest in ("system", "model") else ""))
            if dest == "system" and not (given.endswith(".toml") or os.sep in given):
                continue  # a name: its catalogue file is read as any system file is (a pipe waited for)
            path = _input_file(dest, given)
            if path is None or (dest in ("system", "model") and not os.path.lexists(path)):
                continue  # a name, or a file that is not there: the command says which names it knows
            if dest in _DIRECTORIES and path.is_dir():
                continue
            try:
                check_input_file(path, _WHAT[dest], pipes=dest in _PIPES)
            except InputError as e:  # said as the reader would say it (the scheduler file's names its option)
                raise type(e)(f"scheduler-file: {e}" if dest == "scheduler_file" else str(e)) from None


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
    inputs = _inputs(args)
    for dest, value in outputs:
        check_not_input(value, inputs, dest, getattr(args, "force", False))


def _inputs(args: argparse.Namespace) -> list[tuple[str, str | Path]]:
    """The files the command reads, each with the option that names it: (label, path)."""
    inputs: list[tuple[str, str | Path]] = []
    for dest, label in INPUT_OPTIONS.items():
        for given in _given(args, dest):
            path = _input_file(dest, given)
            if path is not None:
                inputs.append(("SYSTEM" if dest == "system" and args.command == "topo" else label, path))
    return inputs
