"""The suite's two tiers (tests/conftest.py): the tests that take a known slow path are marked ``slow``.

A plain ``pytest`` (``make test``) skips the tests marked ``slow``; ``--runslow`` (``make test-all``,
what .ci/run runs) runs them too.  Most marks follow the measured durations and can only be judged by
running; the paths below are slow whatever a test checks with them, so a new test that takes one must
be marked as well.  A test takes a path when its source, or that of a helper of its module it calls,
names the path's pattern (read from the source: no collection, no import of the modules).
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

from .conftest import SLOW_DOCTESTS

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# a slow path: the pattern that its tests' source names
SLOW_PATHS = {
    "a p2sim run signalled in a subprocess": r"\b(_start_long_rank|LONG_RANK)\b",
    "the emitted JAX or PyTorch program run for real": r"importorskip\(\"(jax|torch)\"\)",
    "the wheel installed into a fresh virtual environment": r"\bvenv\.create\(",
}
_SLOW = re.compile(r"\bmark\.slow\b")


@dataclass(frozen=True)
class _Function:
    source: str
    names: frozenset[str]  # the names it uses: the helpers it calls among them
    slow: bool


@functools.cache
def _modules() -> dict[str, dict[str, _Function]]:
    """Every test module's functions (a class's methods among them) by name, parsed once."""
    modules = {}
    for path in sorted(TESTS.glob("test_*.py")):
        if path.name == Path(__file__).name:  # names every pattern, in its own checks
            continue
        src = path.read_text(encoding="utf-8")
        lines = src.split("\n")
        tree = ast.parse(src)
        module_slow = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                          and _SLOW.search(ast.unparse(n.value)) for n in tree.body)
        funcs = {}
        for node in tree.body:
            for f in node.body if isinstance(node, ast.ClassDef) else [node]:
                if isinstance(f, ast.FunctionDef):
                    funcs[f.name] = _Function(
                        "\n".join(lines[f.lineno - 1:f.end_lineno]),
                        frozenset(n.id for n in ast.walk(f) if isinstance(n, ast.Name)),
                        module_slow or any(_SLOW.search(ast.unparse(d)) for d in f.decorator_list))
        modules[path.name] = funcs
    return modules


def _takers(pattern: str) -> dict[str, bool]:
    """``module::test`` of every test that takes the path, and whether it is marked slow."""
    out = {}
    for module, funcs in _modules().items():
        # the functions that take the path, through the module's own helpers too
        taking = {name for name, f in funcs.items() if re.search(pattern, f.source)}
        while called := {name for name, f in funcs.items() if name not in taking and f.names & taking}:
            taking |= called
        out.update({f"{module}::{name}": funcs[name].slow for name in sorted(taking) if name.startswith("test_")})
    return out


@pytest.mark.parametrize("path", sorted(SLOW_PATHS))
def test_every_test_that_takes_a_slow_path_is_marked_slow(path):
    takers = _takers(SLOW_PATHS[path])
    assert takers, f"no test takes {path!r} any more: its pattern in SLOW_PATHS is stale"
    assert [t for t, slow in takers.items() if not slow] == [], f"takes {path!r}: mark it @pytest.mark.slow"


def test_the_finder_sees_a_helper_and_the_mark():
    # the signal runs take the path through the helper _start_long_rank and carry the mark
    takers = _takers(SLOW_PATHS["a p2sim run signalled in a subprocess"])
    assert takers["test_signals.py::test_a_signal_ends_the_whole_run_with_one_line"] is True
    assert "test_signals.py::test_sigterm_raises_terminated_inside_the_block_only" not in takers


def test_slow_doctests_name_modules_with_doctests():
    for module in SLOW_DOCTESTS:
        spec = find_spec(module)
        assert spec and spec.origin, f"SLOW_DOCTESTS names {module}, which is no module"
        assert ">>>" in Path(spec.origin).read_text(encoding="utf-8"), f"{module} has no doctest"


def test_the_slow_marker_is_registered_and_markers_are_strict():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("slow:") for m in conf["markers"])
    assert "--strict-markers" in conf["addopts"].split()
