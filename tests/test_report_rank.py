"""The rank report: rendered from data, speedups with their basis, every column defined."""

from __future__ import annotations

import base64

import pytest

import p2sim.report.rank as rank_report
from p2sim.report.tables import Column

from .html_tables import Page
from .test_cli import run

ARGS = ("rank", "--system", "a100", "--axes", "4,8", "--reduce", "0", "--algo", "both", "--top", "6", "--workers", "1")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("rank")
    from p2sim.cli import main

    assert main([*ARGS, "--out", str(out)]) == 0
    return (out / "report.html").read_text(), (out / "report.md").read_text()


def _seconds(cell: str) -> float:
    """A time cell in adaptive units ("23.91 ms") in seconds."""
    value, unit = cell.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]


def test_every_speedup_is_shown_with_its_basis(report):
    html, md = report
    page = Page(html)
    table = page.table_with("speedup")
    headers = [c[1] for c in table[0]]
    assert headers == [c.header for c in rank_report.RANK_COLUMNS]
    rows = [[c[1] for c in r] for r in table[1:]]
    assert len(rows) == 6
    col = {h: i for i, h in enumerate(headers)}
    for r in rows:
        seconds, ar, speedup = _seconds(r[col["time"]]), _seconds(r[col["AllReduce"]]), float(r[col["speedup"]][:-1])
        assert speedup == pytest.approx(ar / seconds, abs=0.01)
    # the case: equal times, different speedups -- explained by different AllReduce times
    for a in rows:
        for b in rows:
            if a[col["time"]] == b[col["time"]] and a[col["speedup"]] != b[col["speedup"]]:
                assert a[col["AllReduce"]] != b[col["AllReduce"]] and a[col["algo"]] != b[col["algo"]]
    assert rank_report.SPEEDUP_BASIS in page.all_text and rank_report.SPEEDUP_BASIS in md


def test_every_column_is_defined_next_to_its_table(report):
    html, md = report
    page = Page(html)
    defined = dict(page.definitions)
    for c in (*rank_report.RANK_COLUMNS, *rank_report.MATRIX_COLUMNS):
        assert defined.get(c.header), c.header
        assert f"- **{c.header}**: {c.definition}" in md


def test_html_is_rendered_not_markdown(report):
    html, _ = report
    page = Page(html)
    assert "`" not in page.all_text and "**" not in page.all_text and "| ---" not in html
    for t in page.tables:  # every row has as many cells as the header
        assert len({sum(int(c[2].get("colspan", 1)) for c in row) for row in t}) == 1
    assert len(page.images) == 3
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:4] == b"\x89PNG"


def test_a_new_column_appears_in_both_reports(capsys, tmp_path, monkeypatch):
    # how a column is added (e.g. each step's algorithm and protocol): one more Column in RANK_COLUMNS
    extra = Column("steps", "number of steps of the program", lambda r: str(len(r[1].timing.steps)), numeric=True)
    monkeypatch.setattr(rank_report, "RANK_COLUMNS", (*rank_report.RANK_COLUMNS, extra))
    rc, _, err = run(capsys, *ARGS, "--out", str(tmp_path))
    assert rc == 0, err
    page = Page((tmp_path / "report.html").read_text())
    table = page.table_with("steps")
    assert [c[1] for c in table[0]][-1] == "steps"
    assert {r[-1][1] for r in table[1:]} <= {"1", "2", "3"}
    assert ("steps", "number of steps of the program") in page.definitions
    assert "| steps |" in (tmp_path / "report.md").read_text()


def test_programs_column_counts_synthesized_and_simulated(report):
    """The bounded search leaves programs out: the table says how many each matrix has and ran."""
    html, md = report
    page = Page(html)
    table = page.table_with("best program")
    col = {c[1]: i for i, c in enumerate(table[0])}
    cells = [r[col["programs"]][1] for r in table[1:]]
    # a100 4,8 reduce 0: [[2 2] [1 8]] has 47 programs, the bounded search simulates fewer
    counts = [tuple(int(x) for x in c.replace("(", "").replace(")", "").split()) for c in cells]
    assert any(len(c) == 2 and c[0] == 47 and 0 < c[1] < 47 for c in counts), cells
    assert all(len(c) == 1 or c[1] < c[0] for c in counts)
    heading = next(line for line in md.splitlines() if line.startswith("## Top"))
    simulated = sum(c[-1] for c in counts)
    assert heading == f"## Top 6 of {simulated} simulated of {sum(c[0] for c in counts)} (matrix, program, algorithm)"
