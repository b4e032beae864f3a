"""The sweep page: the answer first, the sizes in units, NCCL's choice, and log-log plots with units."""

from __future__ import annotations

import pytest

import p2sim.report.size_sweep as report
from p2sim.studies.size_sweep import SweepRequest, run_sweep

from .html_tables import Page
from .test_cli import run
from .test_report_rank import assert_html_aligned, assert_markdown_aligned


@pytest.fixture(scope="module")
def result():
    return run_sweep(SweepRequest.build(system="dgx-h100", nodes=1, minbytes="8", maxbytes="1GiB", stepfactor="4"))


@pytest.fixture(scope="module")
def files(result):
    return report.sweep_report(result)


def test_sweep_out_writes_the_page(capsys, tmp_path):
    rc, out, err = run(capsys, "sweep", "--system", "dgx-h100", "--nodes", "1", "-b", "1MiB", "-e", "4MiB",
                       "--out", str(tmp_path))
    assert rc == 0, err
    assert {p.name for p in tmp_path.iterdir()} == {"sweep.html", "sweep.md", "sweep.png", "sweep.txt"}
    page = Page((tmp_path / "sweep.html").read_text())
    assert [r[0][1] for r in page.table_with("busbw (GB/s)")[1:]] == ["1 MiB", "2 MiB", "4 MiB"]


def test_page_opens_with_the_answer(result, files):
    answer = report.sweep_answer(result)
    assert answer.text == (
        "AllReduce on 1 node x 8 GPUs of dgx-h100 (des engine): 512 MiB takes 2.001 ms at 469.5 GB/s bus bandwidth "
        "(`nvls/Simple x16`) and 8 B takes 15.01 us. Bus bandwidth peaks at 469.5 GB/s (512 MiB) and reaches half of "
        "that from 32 MiB on; NCCL runs `ring/LL` from 8 B, then `nvls/Simple` from 2 MiB.")
    md, page = files["sweep.md"].decode(), Page(files["sweep.html"].decode())
    assert md.splitlines()[2] == f"**Answer.** {answer.text}"
    text = "".join(page.all_text.split())  # the page's text pieces join with spaces around the <code> parts
    assert text.index("".join(answer.text.replace("`", "").split())) < text.index("Sizes")


def test_size_table_has_units_and_nccls_choice(result, files):
    page = Page(files["sweep.html"].decode())
    table = page.table_with("busbw (GB/s)")
    assert [c[1] for c in table[0]] == ["size", "count", "time", "algbw (GB/s)", "busbw (GB/s)", "NCCL's choice"]
    rows = table[1:]
    assert len(rows) == len(result.points)
    assert [r[0][1] for r in rows][:3] == ["8 B", "32 B", "128 B"] and rows[-1][0][1] == "512 MiB"
    assert rows[-1][2][1] == "2.001 ms" and rows[0][2][1] == "15.01 us"
    assert rows[-1][4][1] == f"{result.points[-1].busbw / 1e9:.2f}" and rows[-1][5][1] == "nvls/Simple x16"
    assert_html_aligned(page)
    assert_markdown_aligned(files["sweep.md"].decode())
    # the nccl-tests text table stays beside the page
    assert files["sweep.txt"].decode().startswith("# p2sim sweep: dgx-h100, 1 node(s) x 8 GPUs, AllReduce")


def test_plot_is_log_log_with_units(result, monkeypatch):
    figures = []
    monkeypatch.setattr(report, "figure_png", lambda fig: figures.append(fig) or b"")
    report.sweep_plot("title", result.points)
    (fig,) = figures
    time_ax, bw_ax = [ax for ax in fig.axes if ax.get_title()]
    for ax in (time_ax, bw_ax):
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert ax.get_xlabel() == "size per GPU"
        ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert "1 KiB" in ticks and "1 MiB" in ticks and len(ticks) <= 8  # units, and few enough not to overlap
    assert bw_ax.get_ylabel() == "bus bandwidth (GB/s)"
    units = {t.get_text().split()[-1] for t in time_ax.get_yticklabels() if t.get_text()}
    assert units and units <= {"s", "ms", "us", "ns"}


def test_page_is_deterministic(result, files):
    again = report.sweep_report(result)
    assert again.keys() == files.keys() and all(again[k] == files[k] for k in files)
