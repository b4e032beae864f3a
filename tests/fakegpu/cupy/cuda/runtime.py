"""Test stand-in for cupy.cuda.runtime: ``FAKE_GPUS`` devices; ``FAKE_CUDA_ERROR`` makes CUDA fail."""

import os


class CUDARuntimeError(RuntimeError):
    pass


CUDARuntimeError.__module__ = "cupy_backends.cuda.api.runtime"  # where CuPy defines it


def getDeviceCount() -> int:
    if os.environ.get("FAKE_CUDA_ERROR"):
        raise CUDARuntimeError(os.environ["FAKE_CUDA_ERROR"])
    return int(os.environ.get("FAKE_GPUS", "8"))


def getDeviceProperties(i: int) -> dict:
    return {"name": b"FakeGPU (tests)", "pciDomainID": 0, "pciBusID": 0x10 + i, "pciDeviceID": 0}


def deviceSynchronize() -> None:
    from . import Device

    Device(0).synchronize()
