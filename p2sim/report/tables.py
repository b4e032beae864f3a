"""Report tables as data: columns that carry their own definition.

A report table is a tuple of :class:`Column` values applied to a list of items, so
a column is added in one place and appears in the Markdown and the HTML page, with
its definition printed under the table.

Examples
--------
>>> cols = (Column("x", "the item"), Column("x squared", "the item times itself", lambda x: f"{x * x}"))
>>> t = Table.of("Squares", cols, [2, 3])
>>> t.headers, t.rows
(('x', 'x squared'), [['2', '4'], ['3', '9']])
>>> print(Table.of("Squares", (Column("x", "the item"), Column("x squared", "", lambda x: f"{x * x}", numeric=True)),
...                [2, 30]).markdown())
| x   | x squared |
| --- | --------: |
| 2   |         4 |
| 30  |       900 |
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Column", "Table"]


def _md_escape(value: Any) -> str:
    """A Markdown table cell's text: a ``|`` would end the cell, a newline the row."""
    return str(value).replace("|", "\\|").replace("\n", " ")


@dataclass(frozen=True)
class Column:
    """A table column: header, what its values mean, and how to show an item's value."""

    header: str
    definition: str
    cell: Callable[[Any], str] = str
    code: bool = False  # monospace (matrices, programs)
    numeric: bool = False  # right-aligned
    wrap: bool = True  # False: keep the value on one line (short code such as matrices)
    group: str = ""  # a heading spanning adjacent columns of the same group (HTML)


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[Column, ...]
    rows: list[list[str]]
    intro: str = ""
    notes: tuple[str, ...] = field(default=())

    @classmethod
    def of(cls, title: str, columns: Sequence[Column], items: Iterable[Any], intro: str = "",
           notes: Sequence[str] = ()) -> Table:
        cols = tuple(columns)
        return cls(title, cols, [[c.cell(x) for c in cols] for x in items], intro, tuple(notes))

    @property
    def headers(self) -> tuple[str, ...]:
        return tuple(c.header for c in self.columns)

    def markdown(self) -> str:
        """The table in Markdown, each column padded to its widest cell so that the columns line up in the
        source as they do on the page; numeric columns right-aligned in both (``---:``), code in backticks."""
        head = [_md_escape((c.group + ": " if c.group else "") + c.header) for c in self.columns]
        body = [[f"`{_md_escape(v)}`" if c.code else _md_escape(v) for c, v in zip(self.columns, row)]
                for row in self.rows]
        widths = [max(3, len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]

        def line(cells: list[str]) -> str:
            return "| " + " | ".join(v.rjust(w) if c.numeric else v.ljust(w)
                                     for c, v, w in zip(self.columns, cells, widths)) + " |"

        rule = "| " + " | ".join("-" * (w - 1) + ":" if c.numeric else "-" * w
                                 for c, w in zip(self.columns, widths)) + " |"
        return "\n".join([line(head), rule] + [line(r) for r in body])

    @property
    def groups(self) -> list[tuple[str, int]]:
        """Runs of adjacent columns sharing a group: (group heading, column count)."""
        out: list[tuple[str, int]] = []
        for c in self.columns:
            if out and out[-1][0] == c.group:
                out[-1] = (c.group, out[-1][1] + 1)
            else:
                out.append((c.group, 1))
        return out
