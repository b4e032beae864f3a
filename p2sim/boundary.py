"""The public API's boundary: every keyword argument checked once, before a request is built.

:func:`boundary` wraps each function of :mod:`p2sim.api`: an unknown name, one given twice, a missing
required one or a value of the wrong type is one :class:`~p2sim.util.errors.InputError` naming the
parameter as the command line names its option; numpy's numbers and arrays become Python's
(:func:`checked_value`); and the function's docstring gains its Parameters section, from its signature and
:data:`p2sim.options.DESCRIPTIONS`.  Several forms of one input (a text, a mapping, a list, a path)
are told apart here, once; the requests read the values.

Examples
--------
>>> checked_value("axes", {"data": 4}, None), checked_value("nodes", "4", None)
({'data': 4}, '4')
>>> checked_value("system", 3, "a100")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: system: 3 is not a system name, a path to a .toml file or a SystemSpec
"""

from __future__ import annotations

import functools
import inspect
import numbers
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast, get_type_hints

from . import options as o
from .util.errors import InputError

__all__ = ["boundary", "checked_value"]

# parameters by what they take (the same name means the same thing in every function); any other takes a
# number, a text, a list or a mapping of them, as the command line's text would say it
_TEXT = frozenset({"algo", "proto", "engine", "profile", "order", "collective", "scheduler", "program"})
_PATHS = frozenset({"measurements", "calibrate_on", "logs"})  # a file or directory, or a list of them
_PATH = frozenset({"scheduler_file"})
_MODEL = frozenset({"model", "train"})  # a path, a text, a mapping or a workload value: the request reads it


def _plain(value: Any) -> Any:
    """``value`` with numpy's scalars and arrays as Python's numbers and lists (``np.int64(4)`` is 4), nested
    lists and mappings too; numpy is not imported: its types are known by their module."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value) if type(value) in (list, tuple) else [_plain(v) for v in value]
    return value


def _ours(value: Any) -> bool:
    """A value of p2sim's own types (a SystemSpec, a Reduction, a Profile): the request knows it."""
    return type(value).__module__.startswith("p2sim.")


def _is_value(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (str, numbers.Real)) or _ours(value):
        return True
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_value(v) for k, v in value.items())
    return isinstance(value, (list, tuple, set, frozenset, range)) and all(_is_value(v) for v in value)


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def checked_value(name: str, value: Any, default: Any) -> Any:
    """``value`` of parameter ``name`` in the form its request takes, or one InputError naming both."""
    field = name.replace("_", "-")  # as the command line's messages name it
    value = _plain(value)
    if value is None:
        if default is None:
            return None
        given = "it is required" if default is inspect.Parameter.empty else f"leave it out for {default!r}"
        raise InputError(f"{field}: None is not a value ({given})")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise InputError(f"{field}: {value!r} is not True or False")
        return value
    if name in _MODEL:
        if not (_is_path(value) or _ours(value) or (name == "train" and isinstance(value, Mapping))):
            raise InputError(f"{field}: {value!r} is not {'a model name, a path' if name == 'model' else 'a text, a mapping'} "
                             f"or a {'ModelSpec' if name == 'model' else 'TrainingSpec'}")
        return os.fspath(value) if isinstance(value, os.PathLike) else value
    if name == "system":
        if not (_is_path(value) or _ours(value)):
            raise InputError(f"{field}: {value!r} is not a system name, a path to a .toml file or a SystemSpec")
        return os.fspath(value) if isinstance(value, os.PathLike) else value
    if name in _TEXT:
        if not (isinstance(value, str) or _ours(value)):
            raise InputError(f"{field}: {value!r} is not a text (the command line's --{field} value)")
        return value
    if name in _PATH or name in _PATHS:
        many = name in _PATHS and isinstance(value, (list, tuple))
        if not (all(_is_path(v) for v in value) if many else _is_path(value)):
            raise InputError(f"{field}: {value!r} is not a path{' or a list of paths' if name in _PATHS else ''}")
        return [os.fspath(v) for v in value] if many else os.fspath(value)
    if not _is_value(value):
        raise InputError(f"{field}: {value!r} is not a number, a text, or a list or mapping of them")
    return value


_RAISES = """Raises
------
InputError
    A bad value, as one line naming the parameter as the command line's message names its option: a value of
    the wrong type or form, an unknown or missing parameter (its kinds: PlacementError, TopologyError,
    MeasurementError for a file that cannot be read)."""
# a parameter's other accepted name (the request's), and the parameter it is
_ALIASES = {"plan": {"reductions": "reduction"}}

_Function = TypeVar("_Function", bound=Callable[..., object])


def _type_text(hint: object) -> str:
    """``hint`` as the docs write a type: ``int | str | None``, without module paths."""
    return hint.__name__ if isinstance(hint, type) else re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", str(hint))


def _parameters_doc(function: Callable[..., object]) -> str:
    """numpydoc's Parameters section of ``function``, from its signature and :data:`p2sim.options.DESCRIPTIONS`."""
    hints = get_type_hints(function)
    lines = ["Parameters", "----------"]
    for p in inspect.signature(function).parameters.values():
        default = "" if p.default is inspect.Parameter.empty or p.default is None else f", default {p.default!r}"
        lines += [f"{p.name} : {_type_text(hints[p.name])}{default}", f"    {o.DESCRIPTIONS[p.name]}"]
    return "\n".join(lines)


def boundary(function: _Function) -> _Function:
    """``function``, with every keyword argument checked first: an unknown name, one given twice (as itself and
    as its alias), a missing required one or a value of the wrong type is one InputError naming the parameter
    as the command line does, never a TypeError or an AttributeError from deep inside.  Its docstring gains
    the Parameters section."""
    name = function.__name__
    params = inspect.signature(function).parameters
    spelled = {**_ALIASES.get(name, {}), **{p: p for p in params}}

    @functools.wraps(function)
    def checked(**options: object) -> object:
        given: dict[str, object] = {}
        for key, value in options.items():
            if key not in spelled:
                raise InputError(f"{key.replace('_', '-')}: not an option of p2sim.{name} (its options: "
                                 f"{', '.join(params)})")
            param = spelled[key]
            if param in given:
                raise InputError(f"{key.replace('_', '-')}: given twice (as {param} and as {key}); give one")
            given[param] = checked_value(param, value, params[param].default)
        missing = [p for p, v in params.items() if v.default is inspect.Parameter.empty and p not in given]
        if missing:
            raise InputError(f"{missing[0].replace('_', '-')}: required by p2sim.{name}")
        return function(**given)

    summary, _, rest = (function.__doc__ or "").partition("\n\n")
    returns, _, examples = inspect.cleandoc(rest).partition("\nExamples\n")
    checked.__doc__ = "\n\n".join([summary, _parameters_doc(function), returns.strip(), _RAISES]
                                   + ([f"Examples\n{examples}"] if examples else []))
    return cast(_Function, checked)
