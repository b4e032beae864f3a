"""Pluggable executors for independent simulations.

An executor is anything with ``map(fn, items) -> iterable`` that returns results in
item order (like :meth:`concurrent.futures.Executor.map`).  :func:`make_executor`
gives the in-process one for ``workers=1`` and a process pool otherwise; a
distributed engine plugs in by passing its own object with a ``map`` method.
Because every task carries all of its inputs and simulations are deterministic,
results are identical whichever executor runs them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from tqdm import tqdm

from ..errors import InputError

__all__ = ["Executor", "SerialExecutor", "make_executor", "run_all", "default_workers"]

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterable[R]: ...


class SerialExecutor:
    """Runs tasks one after another in this process."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return map(fn, items)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextmanager
def make_executor(workers: int | None) -> Iterator[Executor]:
    """``workers`` processes (``None``: all cores; 1: in-process)."""
    n = default_workers() if workers is None else workers
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"workers: {workers!r} must be a positive integer")
    if n == 1:
        yield SerialExecutor()
        return
    with ProcessPoolExecutor(max_workers=n) as pool:
        yield pool


def run_all(executor: Executor, fn: Callable[[T], R], items: list[T], label: str = "") -> list[R]:
    """Map ``fn`` over ``items`` in order, with a progress bar on a terminal only."""
    out: list[Any] = []
    # tqdm's disable=None turns the bar off when stderr is not a terminal (pipes, CI)
    for r in tqdm(executor.map(fn, items), total=len(items), desc=label, disable=None, leave=False):
        out.append(r)
    return out
