"""The validation report: metrics defined, columns separated, calibration basis, misses and warnings shown."""

from __future__ import annotations

import html as htmllib
import re

import pytest

import p2sim.measurements.fit as fit_module
import p2sim.measurements.program_validation as vr
import p2sim.report.validate as report
from p2sim.measurements.fit import Calibration
from p2sim.studies.executor import SerialExecutor
from p2sim.measurements.program_rows import load_measurements
from p2sim.measurements.program_scores import DEFINITIONS
from p2sim.topology import find_spec

from .html_tables import Page
from .test_report_rank import assert_html_aligned, assert_markdown_aligned
from .test_program_validation import CSV


def _implausible_fit(rows, system, executor, model, collectives=()):
    """A fit whose NVLink lands at 12.3 GB/s against the file's 135 (the issue's example)."""
    before = find_spec(system)
    return Calibration(system, model, before, before.with_class("nvlink", bandwidth=12.3), 1.9, 0.3, 20, 10,
                       sum(1 for r in rows if r.system == system))


@pytest.fixture(scope="module")
def doc():
    rows = [r for r in load_measurements(CSV) if r.gpu == "V100" and r.axes in ((2, 8), (8, 2), (4, 4))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fit_module, "calibrate", _implausible_fit)
        return vr.validate(rows, SerialExecutor(), "des", rows).to_json()


@pytest.fixture(scope="module")
def pages(doc):
    files = report.validation_report(doc)
    return Page(files["validation.html"].decode()), files["validation.md"].decode()


def test_every_metric_is_defined_in_its_table(doc, pages):
    page, md = pages
    table = page.table_with("what it measures")
    assert [c[1] for c in table[0]] == ["metric", "des", "baseline", "what it measures"]
    shown = {r[0][1]: r for r in table[1:]}
    assert set(shown) == set(doc["metrics"])
    for k, r in shown.items():
        assert r[3][1] == DEFINITIONS[k]
        assert r[1][1] == report._fmt(doc["metrics"][k]) and r[2][1] == report._fmt(doc["baseline"][k])
        assert re.search(rf"^\| `{k}` +\|", md, re.MULTILINE)


def test_measured_predicted_and_baseline_have_their_own_columns(doc, pages):
    page, md = pages
    table = page.table_with("programs faster than AllReduce")
    groups = [c[1] for c in table[0]]
    assert groups[1:] == ["AllReduce s", "best program s", "speedup", "programs faster than AllReduce", "best program"]
    headers = [c[1] for c in table[1]]
    assert headers[6:18] == ["measured", "des", "baseline"] * 4
    for r, cells in zip(doc["rows"], table[2:]):
        values = [c[1] for c in cells]
        assert values[6:9] == [report._s(r["measured_allreduce_s"]), report._s(r["predicted_allreduce_s"]),
                               report._s(r["baseline_allreduce_s"])]
        assert values[15:18] == [str(r["measured_programs_better"]), str(r["predicted_programs_better"]),
                                 str(r["baseline_programs_better"])]
    assert "| AllReduce s: measured | AllReduce s: des | AllReduce s: baseline |" in md


def test_calibration_basis_is_stated(doc, pages):
    page, md = pages
    assert doc["calibration_basis"]["basis"] == "in sample"
    sentence = report.basis_sentence(doc)
    assert sentence.startswith("In sample: calibrated on the same rows it scores")
    assert sentence in page.all_text and sentence in md


def test_implausible_fitted_rates_are_flagged(doc, pages):
    page, md = pages
    (warning,) = doc["calibration"][0]["warnings"]
    assert "nvlink fitted to 12.3 GB/s, below a tenth of the file's 135 GB/s" in warning
    assert warning in page.all_text and warning in md
    table = page.table_with("fitted / file")
    checks = {r[1][1]: r[-1][1] for r in table[1:]}
    assert checks == {"host": "ok", "nic": "ok", "nvlink": "IMPLAUSIBLE", "pcie": "ok"}
    assert f"WARNING {warning}" in report.validation_text(doc)


def test_misses_of_both_models_are_listed(doc, pages):
    page, md = pages
    misses = [m for who in ("misses", "baseline_misses") for ms in doc[who].values() for m in ms]
    assert misses  # the V100 rows hold misses for the analytic baseline at least
    text = page.all_text
    for m in misses:
        assert " ".join(m.split()) in text and m in md
    assert f"beats_allreduce misses (des): {len(doc['misses']['beats_allreduce'])}" in text


def test_plots_tell_systems_apart(monkeypatch):
    rows = [r for r in load_measurements(CSV) if r.axes == (2, 16) or r.axes == (16,)]
    d = vr.validate(rows, SerialExecutor(), "analytic").to_json()
    figures = []
    monkeypatch.setattr(report, "figure_png", lambda fig: figures.append(fig) or b"")
    report._scatter(d, "allreduce")
    (fig,) = figures
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["analytic", "baseline (link bottleneck)"]
    labels = {t.get_text() for ax in panels if ax.get_legend() for t in ax.get_legend().get_texts()}
    assert {"A100 ring", "A100 tree", "V100 ring", "V100 tree"} <= labels
    colours = {ax.collections[i].get_facecolor()[0][:3].tobytes() for ax in panels for i in range(len(ax.collections))}
    assert len(colours) == 2  # one colour per system, whatever the algorithm


def test_html_escapes_what_it_shows(doc):
    d = dict(doc, misses=dict(doc["misses"], top1_matrix=["<script>alert(1)</script>"]))
    html = report.validation_report(d)["validation.html"].decode()
    assert "<script>" not in html and htmllib.escape("<script>alert(1)</script>") in html


def test_no_model_is_named_twice(doc, pages, monkeypatch):
    """The issue: the baseline's panel read "baseline (baseline)" and its misses "(baseline baseline)"."""
    page, md = pages
    for text in (page.all_text, md, report.validation_text(doc)):
        assert "baseline (baseline)" not in text and "baseline baseline" not in text
    n = len(doc["baseline_misses"]["beats_allreduce"])
    assert f"beats_allreduce misses (baseline): {n}" in page.all_text
    assert f"### beats_allreduce misses (baseline): {n}" in md
    figures = []
    monkeypatch.setattr(report, "figure_png", lambda fig: figures.append(fig) or b"")
    report._scatter(doc, "optimal")
    titles = [ax.get_title() for ax in figures[0].axes if ax.get_title()]
    assert titles == ["des", "baseline (link bottleneck)"]


def test_every_table_lines_up_with_its_header(pages):
    """Each row has as many cells as its header (HTML), and the Markdown source's columns line up."""
    page, md = pages
    assert len(page.tables) == 4
    assert_html_aligned(page)
    assert_markdown_aligned(md)
    for t in page.tables:  # numeric headers sit over their right-aligned cells
        header = next(r for r in t if all(c[0] == "th" and c[2].get("class") != "group" for c in r))
        for h, c in zip(header, t[-1]):
            assert ("num" in h[2].get("class", "")) == ("num" in c[2].get("class", "").split())


def test_page_opens_with_the_answer(doc, pages):
    page, md = pages
    answer = report.validation_answer(doc)
    m, b = doc["metrics"], doc["baseline"]
    assert answer.text.startswith(f"On {len(doc['rows'])} measured rows in {doc['groups']} groups, des picks the "
                                  f"fastest measured placement in {m['top1_matrix']:.0%} (baseline "
                                  f"{b['top1_matrix']:.0%}) of groups")
    assert f"off by {m['mape_allreduce']:.0%} (baseline {b['mape_allreduce']:.0%}) on average" in answer.text
    assert md.splitlines()[2] == f"**Answer.** {answer.text}"
    assert page.all_text.index(answer.text) < page.all_text.index("Calibration basis")
