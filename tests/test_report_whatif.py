"""The what-if page: the answer first, a row per point with units, winners and placement changes marked, the plot."""

from __future__ import annotations

import pytest

import p2sim.report.whatif as report
from p2sim.studies.whatif import WhatifRequest, run_whatif

from .html_tables import Page
from .test_cli import run
from .test_report_rank import assert_html_aligned, assert_markdown_aligned

VARY = ("whatif", "--system", "h100", "--vary", "nvswitch.bandwidth=5,50,450", "--workers", "1")


@pytest.fixture(scope="module")
def result():
    return run_whatif(WhatifRequest.build(system="h100", vary=["nvswitch.bandwidth=5,50,450"], workers=1))


@pytest.fixture(scope="module")
def files(result):
    return report.whatif_report(result)


def test_whatif_out_writes_the_page_and_the_plot(capsys, tmp_path):
    rc, out, err = run(capsys, *VARY, "--out", str(tmp_path))
    assert rc == 0, err
    assert {p.name for p in tmp_path.iterdir()} == {"whatif.html", "whatif.md", "whatif.png"}
    assert out.splitlines()[-1].startswith("report: ") and "whatif.html" in out
    assert (tmp_path / "whatif.png").read_bytes()[:4] == b"\x89PNG"


def test_page_opens_with_the_answer(result, files):
    answer = report.whatif_answer(result)
    assert answer.text == (
        "Fastest at nvswitch.bandwidth = 450 GB/s: axis0 (16) across 2 nodes, 8 GPUs in each, reducing with "
        "`AllReduce(slice=0, Inside)` (NCCL's own algorithm choice) in 17.79 ms for 4 GiB per GPU, 49.5x faster than "
        "the first point (nvswitch.bandwidth = 5 GB/s: 879.7 ms). The winner changes along nvswitch.bandwidth at "
        "nvswitch.bandwidth = 50 GB/s; the best placement stays the same (the program or algorithm changes). "
        "What bounds it there: per-channel rate. At nvswitch.bandwidth = 450 GB/s, nvswitch links bound none of the "
        "best program's steps: changing nvswitch further changes nothing there.")
    md, page = files["whatif.md"].decode(), Page(files["whatif.html"].decode())
    assert md.splitlines()[2] == f"**Answer.** {answer.text}"
    assert page.all_text.index(answer.text.replace("`", "")) < page.all_text.index("Every point")


def test_every_point_has_a_row_with_units_and_marks(result, files):
    page = Page(files["whatif.html"].decode())
    table = page.table_with("best placement")
    headers = [c[1] for c in table[0]]
    assert headers == ["point", "buffer", "best time", "vs first", "winner", "best placement", "placement", "algo",
                       "matrix", "program", "bound by"]
    rows = [{h: c[1] for h, c in zip(headers, r)} for r in table[1:]]
    assert [r["point"] for r in rows] == ["nvswitch.bandwidth = 5 GB/s", "nvswitch.bandwidth = 50 GB/s",
                                          "nvswitch.bandwidth = 450 GB/s"]
    assert [r["best time"] for r in rows] == ["879.7 ms", "140.2 ms", "17.79 ms"]
    assert [r["vs first"] for r in rows] == ["1.00x", "6.27x", "49.46x"]
    assert [r["winner"] for r in rows] == ["", "changes", "fastest"]
    assert [r["placement"] for r in rows] == ["-", "same", "same"]
    assert {r["buffer"] for r in rows} == {"4 GiB"}
    assert rows[1]["program"] == "AllReduce(slice=0, Inside)"
    # slow NVSwitch links bound the winner; at 450 GB/s they no longer do, and the page says so
    assert rows[1]["bound by"] == "nvswitch links"
    assert rows[2]["bound by"] == ("per-channel rate; nvswitch bounds none of the best program's steps "
                                   "(bound by per-channel rate)")
    assert_html_aligned(page)
    assert_markdown_aligned(files["whatif.md"].decode())


def test_node_counts_read_as_nodes_and_placements_of_other_node_counts_do_not_compare(capsys, tmp_path):
    rc, _, err = run(capsys, "whatif", "--system", "a100", "--axes", "data=*,tensor=8", "--reduce", "data", "--vary",
                     "nodes=2,4", "--workers", "1", "--out", str(tmp_path))
    assert rc == 0, err
    page = Page((tmp_path / "whatif.html").read_text())
    table = page.table_with("best placement")
    col = {c[1]: i for i, c in enumerate(table[0])}
    assert [r[col["point"]][1] for r in table[1:]] == ["2 nodes", "4 nodes"]
    assert [r[col["placement"]][1] for r in table[1:]] == ["-", "other node count"]
    assert table[2][col["best placement"]][1].startswith("data (8) ")  # '*' absorbed the devices: by name
    assert "axis0" not in page.all_text


def test_plot_has_units_and_marks_the_winners(result, monkeypatch):
    figures = []
    monkeypatch.setattr(report, "figure_png", lambda fig: figures.append(fig) or b"")
    report.whatif_plot(result.request.variations, result.rows)
    (fig,) = figures
    (ax,) = fig.axes
    assert ax.get_xlabel() == "nvswitch.bandwidth (GB/s)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5 GB/s", "50 GB/s", "450 GB/s"]
    units = {t.get_text().split()[-1] for t in ax.get_yticklabels() if t.get_text()}
    assert units and units <= {"s", "ms", "us"}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "winner changes" in legend and "fastest point" in legend


def test_units_of_every_target():
    assert report.value_text("nic.latency", 2.5) == "2.5 us"
    assert report.value_text("node0.speed", 0.5) == "0.5x"
    assert report.value_text("leaf.uplinks", 4.0) == "4 uplinks"
    assert report.point_text({"nic.bandwidth": 12.5, "nodes": 4.0}) == "nic.bandwidth = 12.5 GB/s, 4 nodes"


def test_page_is_deterministic(result, files):
    again = report.whatif_report(result)
    assert again.keys() == files.keys() and all(again[k] == files[k] for k in files)
