"""Test stand-in for cupy.cuda: devices, streams and events on the CPU clock."""

from __future__ import annotations

import time

from . import nccl, runtime  # noqa: F401


class Device:
    def __init__(self, i: int) -> None:
        self.id = i

    def use(self) -> None:
        pass


class Stream:
    def __init__(self, non_blocking: bool = False) -> None:
        self.ptr = 0

    def synchronize(self) -> None:
        pass

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        pass


class Event:
    def __init__(self) -> None:
        self.t = 0.0

    def record(self, stream: Stream | None = None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass


def get_elapsed_time(start: Event, end: Event) -> float:
    return (end.t - start.t) * 1000.0
