"""Test stand-in for cupy.cuda: devices, streams and events, with CUDA's ordering rules.

Streams order their own work; the legacy default stream (``Stream.null``) and blocking
streams order each other; a ``non_blocking`` stream is ordered with nothing but itself,
its ``synchronize()``, an event it waits for, or a device synchronize.  Time is a
counter (``tick``); event times are the CPU clock's.
"""

from __future__ import annotations

import itertools
import time

from . import nccl, runtime  # noqa: F401

_clock = itertools.count(1)
_device_done = 0  # every write before this tick has finished (a device synchronize)
_streams: dict[int, "Stream"] = {}


def tick() -> int:
    return next(_clock)


class Stream:
    _ptrs = itertools.count(0x1000)

    def __init__(self, null: bool = False, non_blocking: bool = False) -> None:
        self.ptr = 0 if null else next(Stream._ptrs)
        self.non_blocking = non_blocking
        self.done = 0  # writes on this stream before this tick have finished
        self.seen: dict[int, int] = {}  # stream ptr -> tick: its work before that is ordered before ours
        _streams[self.ptr] = self

    def synchronize(self) -> None:
        self.done = tick()

    def use(self) -> "Stream":
        global _current
        _current = self
        return self

    def wait_event(self, event: "Event") -> None:
        p = event.stream.ptr
        self.seen[p] = max(self.seen.get(p, 0), event.t)

    def __enter__(self) -> "Stream":
        _stack.append(_current)
        return self.use()

    def __exit__(self, *exc) -> None:
        _stack.pop().use()


Stream.null = Stream(null=True)
_current = Stream.null
_stack: list[Stream] = []


def get_current_stream() -> Stream:
    return _current


def stream_of(ptr: int) -> Stream:
    return _streams[ptr]


def ordered(writer: Stream, t: int, reader: Stream) -> bool:
    """Whether a write made on ``writer`` at tick ``t`` is complete for work on ``reader``."""
    if writer is reader:
        return True
    if (writer.ptr == 0 and not reader.non_blocking) or (reader.ptr == 0 and not writer.non_blocking):
        return True  # the legacy default stream synchronizes with blocking streams
    return t < max(writer.done, _device_done, reader.seen.get(writer.ptr, 0))


class Device:
    def __init__(self, i: int = 0) -> None:
        if not 0 <= i < runtime.getDeviceCount():
            raise runtime.CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
        self.id = i

    def use(self) -> None:
        pass

    def synchronize(self) -> None:
        global _device_done
        _device_done = tick()


class Event:
    def __init__(self) -> None:
        self.t = 0
        self.wall = 0.0
        self.stream = Stream.null

    def record(self, stream: Stream | None = None) -> None:
        self.stream = stream or _current
        self.t = tick()
        self.wall = time.perf_counter()

    def synchronize(self) -> None:
        self.stream.done = max(self.stream.done, self.t + 1)


def get_elapsed_time(start: Event, end: Event) -> float:
    return (end.wall - start.wall) * 1000.0
