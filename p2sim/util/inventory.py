"""Each room's inventory: the ``Modules`` section of its ``__init__`` docstring, generated from the modules.

A room (a package of p2sim, the package itself included) opens with a paragraph that says what it
holds, then a ``Modules`` section that names every module and sub-room with its summary line, the
first line of that module's docstring, as SimPy's ``__init__`` keeps its ``toc``.  The section is
generated here, never written by hand, so that it cannot leave a module out or describe it in other
words than the module does; ``tests/test_inventory.py`` fails when a room's section differs from
what :func:`section` generates.  ``python -m p2sim.util.inventory --write`` rewrites the sections,
without ``--write`` it lists the rooms that differ.  Read with :mod:`ast` only: nothing is imported.

Examples
--------
>>> print(section(Path(__file__).parent).splitlines()[:2])
['Modules', '-------']
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
HEADER = "Modules\n-------\n"
# the numpydoc section a room's docstring may close with, which stays after the inventory
EXAMPLES = "Examples\n--------\n"


def summary(path: Path) -> str:
    """The summary line of a module (a package: its ``__init__``): its docstring's first line.

    PEP 257's summary line stands alone, followed by a blank line or the docstring's end, so that it
    can be quoted as a whole; a module whose first line runs on into the next is refused.
    """
    source = path / "__init__.py" if path.is_dir() else path
    doc = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8")), clean=True)
    if not doc:
        raise ValueError(f"{source}: no docstring, so no summary line for its room's inventory")
    lines = doc.splitlines()
    if len(lines) > 1 and lines[1].strip():
        raise ValueError(f"{source}: the docstring's first line runs on into the second; "
                         "a summary line stands alone (PEP 257)")
    return lines[0].strip()


def members(room: Path) -> list[Path]:
    """A room's modules and sub-rooms (packages), by name; ``__init__`` itself aside."""
    found = [p for p in room.glob("*.py") if p.name != "__init__.py"]
    found += [d for d in room.iterdir() if d.is_dir() and (d / "__init__.py").exists()]
    return sorted(found, key=lambda p: p.stem)


def section(room: Path) -> str:
    """The ``Modules`` section of a room's docstring, as :func:`write` puts it there."""
    out = [HEADER]
    for p in members(room):
        out.append(f":mod:`.{p.stem}`\n    {summary(p)}\n")
    return "".join(out)


def rooms(package: Path | None = None) -> list[Path]:
    """Every room: the package (by default p2sim) and each package under it."""
    package = package or PACKAGE
    return sorted({package} | {i.parent for i in package.rglob("__init__.py")})


def _docstring_span(text: str, init: Path) -> tuple[int, int]:
    """Where the ``__init__``'s docstring body lies in its text: (after the opening quotes, the closing quotes)."""
    start = text.find('"""')
    end = text.find('"""', start + 3)
    if start < 0 or end < 0 or text[:start].strip():
        raise ValueError(f"{init}: the room's docstring must open the file in triple double quotes")
    return start + 3, end


def current(room: Path) -> str | None:
    """The ``Modules`` section a room's ``__init__`` holds now (None: none)."""
    init = room / "__init__.py"
    text = init.read_text(encoding="utf-8")
    lo, hi = _docstring_span(text, init)
    body = text[lo:hi]
    at = body.find("\n" + HEADER)
    if at < 0:
        return None
    rest = body[at + 1:]
    # the section runs to the first blank line, or to the docstring's end
    stop = rest.find("\n\n")
    return rest if stop < 0 else rest[:stop + 1]


def write(room: Path) -> bool:
    """Put the generated section into a room's docstring (replacing the old one); True if the file changed.

    A new section goes after the description, before a closing ``Examples`` section if there is one.
    """
    init = room / "__init__.py"
    text = init.read_text(encoding="utf-8")
    lo, hi = _docstring_span(text, init)
    body, new = text[lo:hi], section(room)
    old = current(room)
    if old is not None:
        at = body.find("\n" + HEADER) + 1
        body = body[:at] + new + body[at + len(old):]
    elif "\n" + EXAMPLES in body:
        at = body.find("\n" + EXAMPLES) + 1
        body = body[:at] + new + "\n" + body[at:]
    else:
        body = body.rstrip("\n") + "\n\n" + new
    changed = text[:lo] + body + text[hi:]
    if changed == text:
        return False
    init.write_text(changed, encoding="utf-8")
    return True


def stale(package: Path | None = None) -> list[Path]:
    """The rooms whose ``Modules`` section is missing or differs from the generated one."""
    return [r for r in rooms(package) if current(r) != section(r)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m p2sim.util.inventory", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite every room's Modules section")
    args = parser.parse_args(argv)
    if args.write:
        for r in rooms():
            if write(r):
                print(f"wrote {r / '__init__.py'}")
        return 0
    bad = stale()
    for r in bad:
        print(f"{r / '__init__.py'}: Modules section differs (python -m p2sim.util.inventory --write)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
