"""The single-collective validation page and table: the answer first, one quantity per column, columns lined up."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import p2sim.report.collectives as report
from p2sim.measurements.validation import ValidateRequest, run_validate

from .html_tables import Page
from .test_cli import run
from .test_report_rank import assert_html_aligned, assert_markdown_aligned

DEV = Path(__file__).parents[1] / "validation" / "collectives"
LOG = Path(__file__).parent / "data" / "nccltests" / "all_reduce_perf_1node_h100.txt"


def _doc(capsys, *argv: str) -> dict:
    rc, out, err = run(capsys, "validate", "--json", "--workers", "1", *argv)
    assert rc == 0, err
    return json.loads(out)["collectives"]


@pytest.fixture(scope="module")
def doc():
    return run_validate(ValidateRequest.build(str(DEV), workers=1)).to_json()["collectives"]


@pytest.fixture(scope="module")
def files(doc):
    return report.collectives_report(doc)


def test_page_opens_with_the_answer(doc, files):
    answer = report.collectives_answer(doc)
    m = doc["metrics"]["all"]
    assert answer.text.startswith(f"On {len(doc['rows'])} measured rows, measured / predicted bus bandwidth has a "
                                  f"median of {m['des']['all']['median_ratio']:.2f} and a spread")
    assert f"{m['des']['spearman']:.3f} for des" in answer.text
    md, page = files["collectives.md"].decode(), Page(files["collectives.html"].decode())
    assert md.splitlines()[2] == f"**Answer.** {answer.text}"
    assert page.all_text.index(answer.text) < page.all_text.index("Ratio by class of rows")


def test_each_metric_column_holds_one_quantity(doc, files):
    """The metrics table put "median 0.949, gsd 1.228" under a header naming a model: a number per column now."""
    page = Page(files["collectives.html"].decode())
    table = page.table_with("count")
    assert [c[1] for c in table[0]] == ["", "median ratio", "gsd"]
    assert [c[1] for c in table[1]] == ["rows", "class", "count", "des", "baseline", "des", "baseline"]
    for row in table[2:]:
        for cell in row[3:]:
            assert re.fullmatch(r"\d+\.\d{3}|n/a", cell[1]), row
    first = doc["metrics"]["all"]
    assert [c[1] for c in table[2]] == ["every row", "all", str(first["des"]["all"]["rows"]),
                                        f"{first['des']['all']['median_ratio']:.3f}",
                                        f"{first['baseline']['all']['median_ratio']:.3f}",
                                        f"{first['des']['all']['gsd']:.3f}", f"{first['baseline']['all']['gsd']:.3f}"]
    metrics = page.table_with("what it measures")
    assert {r[1][1] for r in metrics[1:]} == {"spearman", "multi_node_within_1_5_of_median"}
    md = files["collectives.md"].decode()
    assert "| median ratio: des | median ratio: baseline | gsd: des | gsd: baseline |" in md


def test_tables_line_up_with_their_headers(files):
    page = Page(files["collectives.html"].decode())
    assert len(page.tables) == 3
    assert_html_aligned(page)
    assert_markdown_aligned(files["collectives.md"].decode())


def _columns_line_up(lines: list[str], right: set[str]) -> None:
    """Each row's values end under their right-aligned header's end, and start under a left-aligned one's start."""
    header, rows = lines[0], lines[1:]
    for m in re.finditer(r"\S+", header):
        for row in rows:
            if m.group() in right:
                assert row[m.end() - 1] != " " and (m.end() == len(row) or row[m.end()] == " "), (m.group(), row)
            else:
                assert row[m.start()] != " " and row[m.start() - 1] == " ", (m.group(), row)


@pytest.mark.parametrize("argv", [("--measurements", str(DEV)), ("--measurements", str(LOG), "--system", "h100")])
def test_text_table_columns_line_up(capsys, argv):
    """File names as row ids (nccl-tests logs) pushed every column right of its header."""
    doc = _doc(capsys, *argv)
    lines = report.collectives_text(doc).splitlines()
    table = lines[2:3 + len(doc["rows"])]
    _columns_line_up(table, right={"id", "GPUs", "size", "measured", "des", "ratio", "baseline"})


def test_page_is_deterministic(doc, files):
    again = report.collectives_report(doc)
    assert again.keys() == files.keys() and all(again[k] == files[k] for k in files)
