"""Test stand-in for CuPy (see ../README.md): numpy arrays with a device-pointer look.

Asynchronous enough to catch stream races: every array remembers the stream and the
moment it was last written (created by a kernel, assigned to, written by NCCL); NCCL and
``asnumpy`` reading it on another stream before that stream was synchronized -- or ordered
by CUDA's legacy default stream -- see garbage (NaN), as a real GPU may.  ``empty`` runs
no kernel, so it leaves nothing pending.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from . import cuda

__version__ = "0.0-fake"
float32, float64, int64 = np.float32, np.float64, np.int64
dtype = np.dtype

_registry: dict[int, "ndarray"] = {}
_ids = itertools.count(1)
_tags: dict[int, tuple] = {}  # id(memory owner) -> (weakref to it, stream, tick)


def _owner(a):
    while isinstance(getattr(a, "base", None), np.ndarray):
        a = a.base
    return a


def _written(a, stream=None) -> None:
    """``a``'s memory was written on ``stream`` (default: the current one) just now."""
    o = _owner(a)
    _tags[id(o)] = (weakref.ref(o), stream or cuda.get_current_stream(), cuda.tick())


def _clear(a) -> None:
    _tags.pop(id(_owner(a)), None)


def pending(a, reader) -> bool:
    """Whether a write to ``a`` may still be in flight as seen from stream ``reader``."""
    o = _owner(a)
    tag = _tags.get(id(o))
    if tag is None or tag[0]() is not o:
        return False
    return not cuda.ordered(tag[1], tag[2], reader)


class _Pointer:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class ndarray(np.ndarray):
    """A numpy array that answers ``.data.ptr`` with a key the fake NCCL looks up."""

    def __array_finalize__(self, obj) -> None:
        if self.base is None or not isinstance(obj, ndarray):
            _written(self)  # new memory, filled by a kernel on the current stream

    def __array_wrap__(self, arr, *args, **kw):
        out = super().__array_wrap__(arr, *args, **kw)
        if isinstance(out, ndarray):
            _written(out)  # a ufunc's result: written by its kernel on the current stream
        return out

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, np.asarray(value) if isinstance(value, ndarray) else value)
        _written(self)

    @property
    def data(self):  # type: ignore[override]
        key = getattr(self, "_key", None)
        if key is None:
            key = next(_ids)
            self._key = key
            _registry[key] = self
        return _Pointer(key)


def lookup(ptr: int) -> np.ndarray:
    return np.asarray(_registry[ptr]).reshape(-1)


def array_of(ptr: int) -> "ndarray":
    return _registry[ptr]


def _wrap(a) -> ndarray:
    return np.ascontiguousarray(a).view(ndarray)


def asarray(a, dtype=None):
    return _wrap(np.array(a, dtype=dtype))


def arange(*args, **kw):
    return _wrap(np.arange(*args, **kw))


def zeros(shape, dtype=float):
    return _wrap(np.zeros(shape, dtype=dtype))


def zeros_like(a):
    return _wrap(np.zeros_like(np.asarray(a)))


def empty(shape, dtype=float):
    out = _wrap(np.full(shape, np.nan, dtype=dtype))
    _clear(out)  # cudaMalloc: no kernel, nothing in flight
    return out


def empty_like(a):
    out = _wrap(np.full_like(np.asarray(a), np.nan))
    _clear(out)
    return out


def asnumpy(a, stream=None, **kw) -> np.ndarray:
    """A copy on the host, made on ``stream`` (default: the current one), which it waits for."""
    s = stream or cuda.get_current_stream()
    s.synchronize()
    if isinstance(a, ndarray) and pending(a, s):
        return np.full(np.shape(a), np.nan, dtype=np.asarray(a).dtype)  # copied while another stream wrote it
    return np.array(a)
