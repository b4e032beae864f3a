"""The rank report: the answer first, rendered from data, speedups with their basis, every column defined."""

from __future__ import annotations

import base64
import html as htmllib
import json
import re

import pytest

import p2sim.report.rank as rank_report
from p2sim.report.mesh import emit_mesh, rank_mesh_choice
from p2sim.report.tables import Column
from p2sim.studies.rank import RankRequest, run_rank

from .html_tables import Page
from .test_cli import run

ARGS = ("rank", "--system", "a100", "--axes", "data=4,tensor=8", "--reduce", "data", "--algo", "both", "--top", "6",
        "--workers", "1")


def markdown_tables(md: str) -> list[list[str]]:
    """The Markdown source's tables, each as its lines."""
    tables: list[list[str]] = []
    current: list[str] = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


def assert_markdown_aligned(md: str) -> None:
    """Every Markdown table has as many cells per row as its header, and its columns line up in the source."""
    tables = markdown_tables(md)
    assert tables
    for t in tables:
        bars = [[m.start() for m in re.finditer(r"(?<!\\)\|", line)] for line in t]
        assert all(b == bars[0] for b in bars), "\n".join(t)
        assert re.fullmatch(r"\|( -+:? \|)+", t[1]), t[1]


def assert_html_aligned(page: Page) -> None:
    """Every HTML table row spans as many columns as its header row."""
    for t in page.tables:
        assert len({sum(int(c[2].get("colspan", 1)) for c in row) for row in t}) == 1


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
    assert_html_aligned(page)
    assert len(page.images) == 3
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:4] == b"\x89PNG"


@pytest.mark.slow  # writes the pages
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


@pytest.fixture(scope="module")
def result():
    return run_rank(RankRequest.build(system="a100", axes="data=4,tensor=8", reduce="data", algo="both", top=6,
                                      workers=1))


@pytest.fixture(scope="module")
def files(result):
    return rank_report.rank_report(result)


def test_page_opens_with_the_answer_in_axis_names(result, files):
    answer = rank_report.rank_answer(result)
    best, default = result.best, result.default_allreduce
    assert default.matrix == ((2, 2), (1, 8))  # data outermost, tensor packed inside the nodes
    gain = default.allreduce.seconds / best.seconds
    assert answer.text == (
        "Best placement: data (4) inside each node; tensor (8) across 2 nodes, 4 GPUs in each. Reduce over data with "
        f"`AllReduce(slice=0, Inside)` (NCCL ring): 23.91 ms predicted for 4 GiB per GPU, {gain:.3g}x faster than a "
        "plain AllReduce on the default placement (data (4) across 2 nodes, 2 GPUs in each; tensor (8) inside each "
        f"node: 4.295 s, NCCL tree) and as fast as a plain AllReduce on this placement (23.91 ms). "
        "What bounds its steps: nvswitch links.")
    md, page = files["report.md"].decode(), Page(files["report.html"].decode())
    assert md.splitlines()[2] == f"**Answer.** {answer.text}"
    shown = answer.text.replace("`", "")
    text = page.all_text
    assert text.index(shown) < text.index("Top 6 of")  # the answer comes first, the evidence after
    assert '<p class="answer">' in files["report.html"].decode()
    # what limits the answer is said right under it: tensor's traffic is not counted
    assert "Optimises the reduction over data only" in text.split("Apply it")[0]
    assert "axis0" not in md and "axis0" not in text


def test_page_embeds_the_code_that_applies_the_answer(result, files):
    html, md = files["report.html"].decode(), files["report.md"].decode()
    choice = rank_mesh_choice(result)
    for label, form in (("JAX", "jax"), ("PyTorch", "torch")):
        code = emit_mesh(form, choice)
        assert f"<h3>{label}</h3>\n<pre><code>{htmllib.escape(code, quote=False)}</code></pre>" in \
            html.replace("&#39;", "'").replace("&#34;", '"')
        assert f"{label}:\n\n```python\n{code.rstrip()}\n```" in md


def test_tables_and_plots_name_the_axes(result, files, monkeypatch):
    page = Page(files["report.html"].decode())
    words = "data (4) inside each node; tensor (8) across 2 nodes, 4 GPUs in each"
    for header in ("speedup", "best program"):
        table = page.table_with(header)
        col = [c[1] for c in table[0]].index("placement")
        assert table[1][col][1] == words
    figures = []
    monkeypatch.setattr(rank_report, "figure_png", lambda fig: figures.append(fig) or b"")
    rank_report.rank_report(result)
    programs, best, placement = figures
    for fig in (programs, best):
        (ax,) = fig.axes
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert "data [1 4]\ntensor [2 4]\nring" in ticks and not any("axis" in t for t in ticks)
        assert ax.get_ylabel() == "predicted time" and "node, gpu" in ax.get_xlabel()
        units = {t.get_text().split()[-1] for t in ax.get_yticklabels() if t.get_text()}
        assert units and units <= {"s", "ms", "us", "ns"}
    title = placement.axes[0].get_title()
    assert "reduction group over data" in title and "(data, tensor) coordinates" in title and "axis" not in title


@pytest.mark.slow  # writes the pages twice
def test_pages_are_deterministic_and_markdown_columns_line_up(result, files):
    again = rank_report.rank_report(result)
    assert again.keys() == files.keys() and all(again[k] == files[k] for k in files)
    assert_markdown_aligned(files["report.md"].decode())
    assert_html_aligned(Page(files["report.html"].decode()))


def test_json_carries_the_default_placement_and_gain_the_page_says(result):
    """The result decides the default placement and the gain over it; --json says them as the page does."""
    doc = json.loads(json.dumps(result.to_json()))["default_placement"]
    answer = rank_report.rank_answer(result).text
    assert doc["matrix"] == [[2, 2], [1, 8]] and doc["searched"] and not doc["is_best"]
    assert doc["basis"] == result.default.basis and "Megatron-LM" in doc["basis"]
    assert doc["gain"] == pytest.approx(doc["allreduce_seconds"] / result.best.seconds)
    assert f"{doc['gain']:.3g}x faster than a plain AllReduce on the default placement" in answer
    assert f"NCCL {doc['allreduce_algo']}" in answer


def test_json_says_when_the_search_left_the_default_placement_out():
    r = run_rank(RankRequest.build(system="a100", axes="data=4,tensor=8", reduce="data", matrix="[[1 4] [2 4]]",
                                   engine="analytic", workers=1))
    doc = r.to_json()["default_placement"]
    assert doc["matrix"] == [[2, 2], [1, 8]] and not doc["searched"]
    assert doc["gain"] is None and doc["allreduce_seconds"] is None
