"""Test stand-in for CuPy (see ../README.md): numpy arrays with a device-pointer look."""

from __future__ import annotations

import itertools

import numpy as np

from . import cuda  # noqa: F401

__version__ = "0.0-fake"
float32, float64, int64 = np.float32, np.float64, np.int64
dtype = np.dtype

_registry: dict[int, "ndarray"] = {}
_ids = itertools.count(1)


class _Pointer:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class ndarray(np.ndarray):
    """A numpy array that answers ``.data.ptr`` with a key the fake NCCL looks up."""

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


def _wrap(a) -> ndarray:
    return np.ascontiguousarray(a).view(ndarray)


def asarray(a, dtype=None):
    return _wrap(np.asarray(a, dtype=dtype))


def arange(*args, **kw):
    return _wrap(np.arange(*args, **kw))


def zeros(shape, dtype=float):
    return _wrap(np.zeros(shape, dtype=dtype))


def empty(shape, dtype=float):
    return _wrap(np.full(shape, np.nan, dtype=dtype))


def empty_like(a):
    return _wrap(np.full_like(np.asarray(a), np.nan))


def zeros_like(a):
    return _wrap(np.zeros_like(np.asarray(a)))
