"""A result's main table as rows of the JSON's field names: a pandas DataFrame or CSV text.

Every result of the API has ``to_json()``; those with a table (the ranking's entries, a
sweep's sizes, a what-if's points...) also have ``table()``, the list of records that
their JSON holds under that table's key, with the same field names.  :class:`Tabular`
turns it into ``to_frame()`` (pandas, when installed) and ``to_csv()`` (nested values as
JSON text, so that a cell reads back with ``json.loads``).

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
import io
import json
from collections.abc import Sequence
from typing import Any

from .errors import InputError

__all__ = ["Tabular", "records_csv", "records_frame", "columns_of"]


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


class Tabular:
    """Mixin for results with a main table: ``table()`` gives its records."""

    def table(self) -> list[dict[str, Any]]:  # pragma: no cover - each result defines it
        raise NotImplementedError

    def to_frame(self) -> Any:
        """The table as a pandas DataFrame, columns named as in the JSON."""
        return records_frame(self.table())

    def to_csv(self) -> str:
        """The table as CSV text, columns named as in the JSON."""
        return records_csv(self.table())
