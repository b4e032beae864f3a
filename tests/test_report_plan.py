"""The plan page: the best placement in axis names, each reduction's program, the saving, the code; every placement."""

from __future__ import annotations

import pytest

import p2sim.report.plan as report
from p2sim.report.mesh import emit_mesh, plan_mesh_choice
from p2sim.studies.plan import PlanRequest, run_plan
from p2sim.util.units import format_seconds

from .html_tables import Page
from .test_report_rank import assert_html_aligned, assert_markdown_aligned


@pytest.fixture(scope="module")
def result():
    return run_plan(PlanRequest.build(system="a100", axes="data=2,tensor=16",
                                      reductions=["data:8GiB", "tensor:64MiB x 24"], workers=1))


@pytest.fixture(scope="module")
def files(result):
    return report.plan_report(result)


def test_page_opens_with_the_answer(result, files):
    best, default = result.best, result.default_plan
    assert best.matrix != default.matrix
    answer = report.plan_answer(result)
    assert answer.text.startswith("Best placement: data (2) inside each node; tensor (16) across 2 nodes, 8 GPUs in "
                                  "each. Reduce over data (8 GiB x 1) with `")
    assert "over tensor (64 MiB x 24) with `" in answer.text
    gain = default.total_seconds / best.total_seconds
    assert (f"{format_seconds(best.total_seconds)} of communication per step, {gain:.3g}x faster than the default "
            "placement (data (2) across 2 nodes; tensor (16) inside each node: ") in answer.text
    for c in best.choices:
        assert f"`{c.program}`" in answer.text
    md, page = files["plan.md"].decode(), Page(files["plan.html"].decode())
    assert md.splitlines()[2] == f"**Answer.** {answer.text}"
    text = "".join(page.all_text.split())
    assert text.index("".join(answer.text.replace("`", "").split())) < text.index("Everyplacement")


def test_page_embeds_the_mesh_code_and_every_placement(result, files):
    md = files["plan.md"].decode()
    choice = plan_mesh_choice(result)
    for label, form in (("JAX", "jax"), ("PyTorch", "torch")):
        assert f"{label}:\n\n```python\n{emit_mesh(form, choice).rstrip()}\n```" in md
    page = Page(files["plan.html"].decode())
    table = page.table_with("step time")
    col = {c[1]: i for i, c in enumerate(table[0])}
    assert len(table) - 1 == len(result.plans)
    assert [r[col["default"]][1] for r in table[1:]].count("default") == 1
    assert table[1][col["placement"]][1] == "data (2) inside each node; tensor (16) across 2 nodes, 8 GPUs in each"
    assert_html_aligned(page)
    assert_markdown_aligned(md)


def test_page_is_deterministic(result, files):
    assert report.plan_report(result) == files


def test_the_header_says_there_is_no_data_axis_where_there_is_none():
    """Issue 43: with axes pipeline and tensor the header said ``(data axis pipeline)``."""
    from p2sim.report.plan import plan_text
    from p2sim.studies.plan import PlanRequest, run_plan

    def header(axes="pipeline=2,tensor=8", reduction="tensor:64MiB", **kw):
        req = PlanRequest.build("dgx-h100", 2, axes, [reduction], max_size=2, workers=1, **kw)
        return plan_text(run_plan(req)).splitlines()[0]

    assert "(no data axis: pipeline outermost in the default placement)" in header()
    assert "(data axis pipeline)" in header(data_axis="pipeline")  # given: it is the data axis
    assert "(data axis data)" in header("data=2,tensor=8")
    assert "(data axis 0)" in header("2,8", "1:64MiB")  # unnamed axes: the index, as before
