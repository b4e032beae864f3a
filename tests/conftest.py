from __future__ import annotations

import csv
from pathlib import Path

import pytest

from .helpers import TINY

# the CuPy stand-in is put on PYTHONPATH by the tests that need it; never import it here
collect_ignore = ["fakegpu"]


# Two tiers, as networkx's conftest.py has them: a plain ``pytest`` (``make test``) runs the fast tier and
# skips the tests marked ``slow``; ``--runslow`` (``make test-all``, what .ci/run runs) runs every test.
# The marker is registered in pyproject.toml (``--strict-markers`` refuses a misspelt one); a test is
# marked where it is written (its decorator, or a module's ``pytestmark``), with why it is slow, and
# tests/test_tiers.py checks that the known slow paths carry the mark.

# doctests of these modules are slow (a docstring takes no decorator), with why
SLOW_DOCTESTS = {
    "p2sim.measurements.calibration": "a calibration fit on every published point: 30 s on 2 cores",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests marked slow (make test-all); a plain pytest skips them")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.name in SLOW_DOCTESTS:  # a module's doctest item is named after the module
            item.add_marker(pytest.mark.slow)
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow (make test-all)")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


DATA = Path(__file__).resolve().parents[1] / "validation"


def _counts() -> list[dict[str, str]]:
    with (DATA / "program_counts.csv").open(newline="") as f:
        return list(csv.DictReader(f))


COUNT_ROWS = _counts()


def config_of(row: dict[str, str]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    h = (int(row["nodes"]), int(row["gpus_per_node"]))
    return h, tuple(int(x) for x in row["axes"].split()), tuple(int(x) for x in row["reduce_axes"].split())


def row_id(row: dict[str, str]) -> str:
    return f"{row['gpu']}-{row['nodes']}x{row['gpus_per_node']}-axes{row['axes'].replace(' ', '.')}-r{row['reduce_axes'].replace(' ', '.')}"


@pytest.fixture(params=COUNT_ROWS, ids=row_id)
def count_row(request: pytest.FixtureRequest) -> dict[str, str]:
    return request.param


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The path of :data:`~tests.helpers.TINY` written as a model TOML (for --model)."""
    path = tmp_path_factory.mktemp("model") / "tiny.toml"
    path.write_text(TINY)
    return str(path)

