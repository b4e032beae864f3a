"""What every handler shares: the request's keyword arguments from the options, and JSON on stdout."""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["emit", "options"]


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
