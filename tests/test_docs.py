"""The documentation's examples, checked: README.md and every page under docs/.

An example is a line of a fenced block that starts with ``$ p2sim`` (a trailing ``\\``
continues it on the next line); the lines after it, up to the next ``$`` line or the end of
the block, are what it prints.  What is checked, and why this much:

* **Every example parses** with the real option parser (:func:`p2sim.cli.parser.build_parser`,
  in this process: microseconds each), as do the ``p2sim`` lines of ``sh`` blocks and the
  ``python -m bench_nccl`` examples (with bench_nccl's parser).  A renamed or removed option, a
  choice that no longer exists or a command gone fails here, for slow examples too.
* **Every example runs for real and prints exactly what the page shows**, except the few in
  :data:`SLOW`.  Each runs as its own ``p2sim`` process from the top of the checkout, and its
  stdout -- or, for an example that shows an error, its stderr and exit status 2 -- must equal
  the page's lines (trailing spaces aside).  The whole output is compared, not its first line:
  a changed number is what makes a page stale, and only a whole comparison catches it.  Most
  examples take about a second (mostly the interpreter's start; 1.0-1.9 s each on the 2-core
  development machine, the module about 20 s in all), so checking them all costs less than
  guessing which matter.  A new example is run unless it is listed in :data:`SLOW`; one that
  takes longer than :data:`TIMEOUT_S` fails and says so.
* **The synopsis** on docs/usage.md lists every command the parser has, names only options
  those commands take, and every option of every command is named somewhere in the docs (the
  known gaps are :data:`UNDOCUMENTED`).

The ``>>>`` examples of docs/*.md are doctests that pytest collects itself (``docs`` in
``testpaths`` and ``--doctest-glob=*.md`` in pyproject.toml); README.md is not collected, so
:func:`test_readme_has_no_doctests` keeps ``>>>`` examples out of it.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench_nccl.cli import build_parser as bench_parser
from p2sim.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT_S = 60

# examples only parsed, never run: (command prefix, why)
SLOW = {
    "p2sim calibrate": "about a minute of fitting, and it writes a100-cal.toml",
    "p2sim whatif --system roce-h100": "10 s: 128 GPUs on a fabric at four points",
    "p2sim whatif --system gb200-nvl72-pod": "13 s: 576 GPUs at three points",
}

# examples whose output p2sim has changed since the page was written: expected to fail (strictly: one
# that passes again fails the test, so that it leaves this list when its page is brought up to date)
STALE: dict[str, str] = {}

# options no page names yet (remove one from here once a page describes it)
UNDOCUMENTED: set[str] = set()

FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.M | re.S)


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    command: str  # without the "$ "
    output: tuple[str, ...]  # what the page shows it printing, empty for sh-block lines

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command, comments=True)

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.command[:60]}"


def _examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            lang, body = m.group(1), m.group(2)
            first = text.count("\n", 0, m.start(2)) + 1
            lines = body.split("\n")
            i = 0
            while i < len(lines):
                ln = lines[i]
                bare = lang == "sh" and ln.startswith("p2sim ")
                if not (ln.startswith("$ ") or bare):
                    i += 1
                    continue
                start = i
                cmd = ln if bare else ln[2:]
                while cmd.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    cmd = cmd.rstrip()[:-1] + " " + lines[i].strip()
                i += 1
                out = []
                while i < len(lines) and not lines[i].startswith("$ ") and not bare:
                    out.append(lines[i].rstrip())
                    i += 1
                while out and not out[-1]:
                    out.pop()
                found.append(Example(page.relative_to(ROOT).as_posix(), first + start, cmd, tuple(out)))
    return found


EXAMPLES = _examples()
P2SIM = [e for e in EXAMPLES if e.argv[0] == "p2sim"]
BENCH = [e for e in EXAMPLES if e.argv[:3] == ["python", "-m", "bench_nccl"]]
RUN = [e for e in P2SIM if e.output and not any(e.command.startswith(s) for s in SLOW)]


def test_examples_found():
    """The extraction itself: the README's example and every kind of example are found."""
    assert any(e.page == "README.md" for e in RUN)
    assert {e.argv[1] for e in P2SIM} >= {"placements", "synth", "systems", "topo", "simulate", "sweep", "rank",
                                          "plan", "whatif", "calibrate", "validate"}
    assert BENCH
    assert all(e.argv[0] in ("p2sim", "python") for e in EXAMPLES), [str(e) for e in EXAMPLES]
    for prefix in SLOW:
        assert any(e.command.startswith(prefix) for e in P2SIM), f"SLOW names {prefix!r}, which no page shows"
    for command in STALE:
        assert any(e.command == command for e in RUN), f"STALE names {command!r}, which no page runs"


def _parse(parser: argparse.ArgumentParser, argv: list[str], what: str) -> argparse.Namespace:
    try:
        return parser.parse_args(argv)
    except SystemExit as e:  # argparse's error (printed on stderr, which pytest shows)
        pytest.fail(f"{what}: the parser refuses it (exit {e.code})")


@pytest.mark.parametrize("example", P2SIM, ids=str)
def test_example_parses(example):
    args = _parse(build_parser(), example.argv[1:], str(example))
    assert getattr(args, "func", None), f"{example}: no command"


@pytest.mark.parametrize("example", BENCH, ids=str)
def test_bench_nccl_example_parses(example):
    _parse(bench_parser(), example.argv[3:], str(example))


@pytest.mark.parametrize("example", [
    pytest.param(e, marks=pytest.mark.xfail(reason=STALE[e.command], strict=True)) if e.command in STALE else e
    for e in RUN], ids=str)
def test_example_output(example):
    env = {k: v for k, v in os.environ.items() if not k.startswith("P2SIM_")}
    argv = [sys.executable, "-m", "p2sim", *example.argv[1:]]
    try:
        r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{example}: still running after {TIMEOUT_S} s; list it in SLOW (tests/test_docs.py)")
    error = example.output[0].startswith(f"p2sim {example.argv[1]}: error:")
    got = r.stderr if error else r.stdout
    assert r.returncode == (2 if error else 0), f"{example}: exit {r.returncode}\n{r.stderr}"
    lines = [ln.rstrip() for ln in got.rstrip("\n").split("\n")]
    assert lines == list(example.output), f"{example}: the page shows other output than p2sim prints now"


def _synopsis() -> dict[str, set[str]]:
    """The options the synopsis block of docs/usage.md names, per command."""
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    block = text.split("## Synopsis", 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    named: dict[str, set[str]] = {}
    command = None
    for ln in block.split("\n"):
        m = re.match(r"p2sim (\w+)", ln)
        if m:
            command = m.group(1)
            named[command] = set()
            ln = ln[m.end():]
        elif not ln.startswith(" "):
            command = None
        if command:
            named[command] |= set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", ln))
    return named


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_synopsis_names_every_command_and_only_real_options():
    named, commands = _synopsis(), _commands()
    assert sorted(named) == sorted(commands)
    for command, options in named.items():
        unknown = options - set(commands[command]._option_string_actions)
        assert not unknown, f"docs/usage.md: the synopsis of p2sim {command} names {sorted(unknown)}, which it lacks"


def test_every_option_is_documented():
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    words = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))
    missing = set()
    for command, parser in _commands().items():
        for action in parser._actions:
            strings = set(action.option_strings)
            if strings and not strings & {"-h", "--help"} and not strings & (words | UNDOCUMENTED):
                missing.add(f"p2sim {command} {'/'.join(sorted(strings))}")
    assert not missing, f"options no page names: {sorted(missing)}"
    stale = {o for o in UNDOCUMENTED if o in words}
    assert not stale, f"UNDOCUMENTED lists {sorted(stale)}, which a page names now: remove them from it"


def test_readme_has_no_doctests():
    """pytest collects the >>> examples of docs/*.md only; the README keeps none that would go unchecked."""
    assert ">>> " not in (ROOT / "README.md").read_text(encoding="utf-8")
