"""CuPy and NCCL: loading them, the preflight, NCCL version gates, and GPU errors as one line.

Minimum versions (see bench_nccl/README.md): CuPy with ``cupy.cuda.nccl`` (CuPy 13 or
later) and NCCL 2.x.  ``commSplit`` (CuPy 14 and NCCL 2.18, at build and at run time) makes
a step's communicators in one call, else each group gets its own unique id.  ``--algo tree``
on collectives other than AllReduce needs NCCL 2.19, which falls back to ring where no tree
exists; NCCL 2.24 and later get a per-collective setting instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from p2sim.formalism.semantics import Op

from .errors import BenchError

__all__ = ["CUPY_HELP", "GpuInfo", "load", "preflight", "is_gpu_error", "gpu_message", "version_tuple",
           "version_text", "can_split", "nccl_algo_env"]

CUPY_HELP = (
    "the nccl backend needs CuPy with NCCL: install the wheels matching the local CUDA, e.g. "
    "'pip install cupy-cuda12x nvidia-nccl-cu12' for CUDA 12 (or 'pip install -e .[gpu]'), "
    "'cupy-cuda13x nvidia-nccl-cu13' for CUDA 13 (nvidia-smi shows the CUDA version); "
    "or run with --backend numpy to emulate on CPUs"
)
SPLIT_MIN = (2, 18, 0)  # ncclCommSplit (NCCL 2.18 release notes; CuPy's commSplit docstring: 2.18.1)
TREE_FALLBACK_MIN = (2, 19, 0)  # NCCL_ALGO=Tree falls back to ring for other collectives (tuning.cc, 2.19.1-1)
PER_COLLECTIVE_ALGO_MIN = (2, 24, 0)  # NCCL_ALGO="Ring;allreduce:Tree" (parseList in tuning.cc, 2.24.3-1)


def version_tuple(code: int) -> tuple[int, int, int]:
    """NCCL's version code as (major, minor, patch).

    Examples
    --------
    >>> version_tuple(22703), version_tuple(2708)   # from 2.9 on major*10000 + minor*100 + patch
    ((2, 27, 3), (2, 7, 8))
    """
    if code >= 10000:
        return code // 10000, code // 100 % 100, code % 100
    return code // 1000, code // 100 % 10, code % 100


def version_text(code: int | None) -> str:
    return "unknown" if code is None else ".".join(map(str, version_tuple(code)))


def is_gpu_error(e: BaseException) -> bool:
    """An error raised by CuPy, CUDA or NCCL (rather than by bench_nccl itself)."""
    return type(e).__module__.split(".")[0] in ("cupy", "cupy_backends", "cuda")


def gpu_message(e: BaseException) -> str:
    """One line for a CUDA or NCCL error, with what usually fixes it."""
    text = " ".join(str(e).split()) or type(e).__name__
    hint = ""
    low = text.lower()
    if "driver" in low or "no cuda-capable device" in low or "cudaerrornodevice" in low:
        hint = (" (no usable NVIDIA driver or GPU for this CuPy: nvidia-smi shows the driver and its CUDA version; "
                "install the cupy-cudaXXx wheel of that CUDA)")
    elif "nccl" in type(e).__name__.lower() or "nccl" in low:
        hint = " (NCCL: run with NCCL_DEBUG=WARN for its own message)"
    return f"{type(e).__name__}: {text}{hint}"


def load() -> tuple[Any, Any]:
    """``cupy`` and ``cupy.cuda.nccl``, or one message saying what to install."""
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as e:
        raise BenchError(f"{CUPY_HELP} ({e})") from None
    except Exception as e:  # noqa: BLE001 -- a broken CUDA install can fail at import
        raise BenchError(f"CuPy does not load: {gpu_message(e)}") from None
    if not getattr(nccl, "available", True):
        raise BenchError(f"this CuPy cannot load NCCL; {CUPY_HELP}")
    return cupy, nccl


@dataclass(frozen=True)
class GpuInfo:
    cupy_version: str
    nccl_version: int  # the library loaded at run time
    nccl_build: int | None  # the headers CuPy was built with
    devices: int
    gpu_name: str

    def line(self) -> str:
        return (f"CuPy {self.cupy_version}, NCCL {version_text(self.nccl_version)} (CuPy built with "
                f"{version_text(self.nccl_build)}), {self.devices} GPU(s): {self.gpu_name}")


def preflight(need: int | None = None) -> GpuInfo:
    """Check once that CuPy, the driver, the GPUs and NCCL work; every failure is one message.

    ``need``: the GPUs this machine must show (one rank per GPU on a local launch).
    """
    cupy, nccl = load()
    try:
        ndev = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:  # noqa: BLE001
        if not (is_gpu_error(e) or isinstance(e, RuntimeError)):
            raise
        raise BenchError(f"CUDA: {gpu_message(e)}") from None
    if ndev == 0:
        raise BenchError("CUDA: no GPU visible (is CUDA_VISIBLE_DEVICES empty?)")
    if need is not None and need > ndev:
        raise BenchError(f"this machine shows {ndev} GPU(s), the run needs {need} (one rank per GPU: NCCL refuses "
                         "two ranks on one GPU)")
    try:
        version = int(nccl.get_version())
        build = int(nccl.get_build_version()) if hasattr(nccl, "get_build_version") else None
        props = cupy.cuda.runtime.getDeviceProperties(0)
    except Exception as e:  # noqa: BLE001
        if not (is_gpu_error(e) or isinstance(e, RuntimeError)):
            raise
        raise BenchError(f"NCCL/CUDA: {gpu_message(e)}") from None
    name = props["name"]
    return GpuInfo(str(cupy.__version__), version, build, ndev,
                   name.decode() if isinstance(name, bytes) else str(name))


def can_split(nccl: Any, runtime: int | None, build: int | None) -> bool:
    """Whether ``commSplit`` works: CuPy has it, and both NCCLs are 2.18 or later (F4).

    CuPy 13 has no ``commSplit``; CuPy 14 built against NCCL < 2.18 raises ``RuntimeError``
    from it, and an older NCCL library at run time has no ``ncclCommSplit``.
    """
    if not hasattr(getattr(nccl, "NcclCommunicator", None), "commSplit"):
        return False
    return (runtime is not None and build is not None and version_tuple(runtime) >= SPLIT_MIN
            and version_tuple(build) >= SPLIT_MIN)


def nccl_algo_env(algo: str, runtime: int | None, ops: Iterable[Op]) -> str | None:
    """``NCCL_ALGO`` for ``--algo`` (``None``: leave NCCL's choice), for the NCCL at run time.

    NCCL has a tree only for AllReduce.  Before 2.19, ``NCCL_ALGO=Tree`` leaves the other
    collectives with no algorithm ("no algorithm/protocol available", NCCL issue 317), so a
    run needing them is refused; from 2.19 NCCL falls back to ring for them; from 2.24
    the setting names AllReduce alone and pins the others to ring (F7).

    Examples
    --------
    >>> nccl_algo_env("tree", 22703, [Op.ALL_GATHER]), nccl_algo_env("tree", 21903, [Op.ALL_GATHER])
    ('Ring;allreduce:Tree', 'Tree')
    >>> nccl_algo_env("ring", 2708, []), nccl_algo_env("auto", 22703, [])
    ('Ring', None)
    """
    if algo == "auto":
        return None
    if algo == "ring":
        return "Ring"
    if algo != "tree":
        raise BenchError(f"algo: {algo!r} is not ring, tree or auto")
    if runtime is None:  # no NCCL (the numpy backend): say what a GPU run would set
        return "Tree"
    v = version_tuple(runtime)
    if v >= PER_COLLECTIVE_ALGO_MIN:
        return "Ring;allreduce:Tree"
    others = sorted({op.value for op in ops} - {Op.ALL_REDUCE.value})
    if v < TREE_FALLBACK_MIN and others:
        raise BenchError(f"--algo tree: NCCL {version_text(runtime)} fails on {', '.join(others)} under "
                         "NCCL_ALGO=Tree (no tree exists for them, and the fallback to ring came with NCCL 2.19); "
                         "install NCCL >= 2.19 (e.g. pip install nvidia-nccl-cu12) or use --algo ring")
    return "Tree"
