"""The examples in bench_nccl's docstrings (pytest's doctest collection covers p2sim only)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["bench_nccl.backends", "bench_nccl.gpu", "bench_nccl.steps", "bench_nccl.sweep", "bench_nccl.values"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
