"""Results as tables: CSV and DataFrame columns are the JSON's field names, for every command."""

from __future__ import annotations

import csv
import io
import json

import pytest

from p2sim.util.table import columns_of, records_csv, records_frame

from .test_cli import run

NAMED = ("--system", "a100", "--axes", "data=4,tensor=8")
COMMANDS = {
    "rank": ("rank", *NAMED, "--reduce", "data", "--workers", "1", "--top", "3"),
    "plan": ("plan", *NAMED, "--reduction", "data:1GiB", "--reduction", "tensor:64MiB x 4", "--workers", "1"),
    "simulate": ("simulate", *NAMED, "--reduce", "data", "--matrix", "[[1 4] [2 4]]"),
    "sweep": ("sweep", "--system", "dgx-h100", "-b", "1K", "-e", "1M", "-f", "4"),
    "whatif": ("whatif", *NAMED, "--reduce", "data", "--vary", "nic.bandwidth=12.5,25", "--workers", "1"),
    "validate": ("validate", "--measurements", "validation/collectives", "--workers", "1"),
    "check": ("check", "--system", "a100", "--axes", "data=32", "--reduce", "data", "--matrix", "[[2 16]]",
              "--program", "AllReduce(slice=0, Inside)"),
}
TABLE_KEY = {"rank": "top", "plan": "plans", "simulate": "programs", "sweep": "points", "whatif": "points",
             "check": "steps"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_csv_columns_are_the_json_fields(capsys, command):
    argv = COMMANDS[command]
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    records = doc["collectives"]["rows"] if command == "validate" else doc[TABLE_KEY[command]]
    rc, out, err = run(capsys, *argv, "--csv", "-")
    assert rc == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    fields = columns_of(records)
    if command == "validate":
        fields = ["part"] + fields
    assert list(rows[0]) == fields and len(rows) == len(records)
    for rec, row in zip(records, rows):  # numbers round-trip exactly, nested values as JSON text
        for k, v in rec.items():
            if isinstance(v, float):
                assert float(row[k]) == v
            elif isinstance(v, (list, dict)):
                assert json.loads(row[k]) == v


def test_csv_file_is_written_beside_the_table(capsys, tmp_path):
    target = tmp_path / "rank.csv"
    rc, out, err = run(capsys, *COMMANDS["rank"], "--csv", str(target))
    assert rc == 0 and "rank" in out and target.read_text().startswith("rank,matrix,")
    rc, out, err = run(capsys, *COMMANDS["rank"], "--csv", str(tmp_path / "rank.txt"))
    assert rc != 0 and "csv" in err and ".csv" in err and len(err.strip().splitlines()) == 1


def test_records_csv_and_frame():
    recs = [{"a": 1, "b": [1, 2]}, {"a": 2.5, "c": None}]
    assert records_csv(recs) == 'a,b,c\n1,"[1, 2]",\n2.5,,\n'
    pd = pytest.importorskip("pandas")
    frame = records_frame(recs)
    assert list(frame.columns) == ["a", "b", "c"] and frame["b"][0] == [1, 2]
    assert isinstance(frame, pd.DataFrame)
