from __future__ import annotations

import csv
from pathlib import Path

import pytest

from .helpers import TINY

# the CuPy stand-in is put on PYTHONPATH by the tests that need it; never import it here
collect_ignore = ["fakegpu"]

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

