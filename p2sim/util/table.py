"""A result's main table as rows of the JSON's field names: a pandas DataFrame or CSV text.

Every result of the API has ``to_json()``; those with a table (the ranking's entries, a
sweep's sizes, a what-if's points...) also have ``table()``, the list of records that
their JSON holds under that table's key, with the same field names.  :class:`Tabular`
turns it into ``to_frame()`` (pandas, when installed) and ``to_csv()`` (nested values as
JSON text, so that a cell reads back with ``json.loads``).  Every result is a :class:`Result`:
its ``repr`` is one line (what was asked, of which system, and the answer) and a notebook shows
it as a small HTML table of its first rows (``_repr_html_``), not the dataclass's repr of the
whole request and topology (tens of kB).

Examples
--------
>>> print(records_csv([{"size": 8, "seconds": 1.5e-05, "matrix": [[1, 2], [2, 1]]}, {"size": 16, "note": "x"}]),
...       end="")
size,seconds,matrix,note
8,1.5e-05,"[[1, 2], [2, 1]]",
16,,,x
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Sequence
from typing import Any

from .errors import InputError

__all__ = ["Result", "Tabular", "records_csv", "records_frame", "columns_of", "HEAD_ROWS"]

HEAD_ROWS = 5  # rows a notebook shows of a result's table (the rest: to_frame())


def columns_of(records: Sequence[dict[str, Any]]) -> list[str]:
    """Every field, in order of first appearance."""
    out: dict[str, None] = {}
    for r in records:
        out.update(dict.fromkeys(r))
    return list(out)


def _cell(v: Any) -> Any:
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, separators=(", ", ": "))
    if v is None:
        return ""
    return v


def records_csv(records: Sequence[dict[str, Any]]) -> str:
    """CSV text with a header of :func:`columns_of`; floats as Python writes them (round-trip exact)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = columns_of(records)
    w.writerow(cols)
    for r in records:
        w.writerow([_cell(r.get(c)) for c in cols])
    return buf.getvalue()


def records_frame(records: Sequence[dict[str, Any]]) -> Any:
    """A pandas DataFrame of the records (nested values kept as Python lists and dicts)."""
    try:
        import pandas as pd
    except ImportError:
        raise InputError("to_frame: needs pandas; install it with pip install pandas (or use to_csv / to_json)") from None
    return pd.DataFrame.from_records(list(records), columns=columns_of(records))


def _html_cell(v: Any, width: int = 60) -> str:
    """A cell as a notebook shows it: floats to four digits, nested values (a program's steps) cut short."""
    text = f"{v:.4g}" if isinstance(v, float) else str(_cell(v))
    return html.escape(text if len(text) <= width else text[:width - 3] + "...")


class Result:
    """Mixin of the API's results: a short ``repr`` and a notebook's HTML table.

    Each result says :meth:`summary` (one line) and may give :meth:`head_records`, the first rows
    to show; result classes are dataclasses declared with ``repr=False`` so that this ``repr`` stays.
    """

    def summary(self) -> str:  # pragma: no cover - each result defines it
        raise NotImplementedError

    def head_records(self) -> tuple[list[dict[str, Any]], int]:
        """The first :data:`HEAD_ROWS` rows to show and how many there are in all."""
        return [], 0

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.summary()}>"

    def _repr_html_(self) -> str:
        rows, total = self.head_records()
        out = [f"<div><p><b>{type(self).__name__}</b>: {html.escape(self.summary())}</p>"]
        if rows:
            cols = columns_of(rows)
            out.append("<table><thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr></thead>"
                       "<tbody>")
            out += ["<tr>" + "".join(f"<td>{_html_cell(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows]
            out.append("</tbody></table>")
            if total > len(rows):
                out.append(f"<p>{len(rows)} of {total} rows; all of them: <code>to_frame()</code></p>")
        out.append("</div>")
        return "".join(out)


class Tabular(Result):
    """Mixin for results with a main table: ``table()`` gives its records."""

    def head_records(self) -> tuple[list[dict[str, Any]], int]:
        rows = self.table()
        return rows[:HEAD_ROWS], len(rows)

    def table(self) -> list[dict[str, Any]]:  # pragma: no cover - each result defines it
        raise NotImplementedError

    def to_frame(self) -> Any:
        """The table as a pandas DataFrame, columns named as in the JSON."""
        return records_frame(self.table())

    def to_csv(self) -> str:
        """The table as CSV text, columns named as in the JSON."""
        return records_csv(self.table())
