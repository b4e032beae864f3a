"""The GPUs p2sim knows, by the names ``nvidia-smi`` gives them: generation, compute capability, memory, NVLink.

A system file's ``[gpu] model`` is enough to say which of NCCL's tuning rows apply
(``compCapIndex`` in ``src/graph/tuning.cc``: compute capability 10.0 and above is
Blackwell, 9.x Hopper, 8.x Ampere, anything older Volta -- Turing 7.5 included, and the
GeForce Ampere and Ada cards 8.6 / 8.9 on the Ampere row) and what NCCL counts per NVLink
(``ncclTopoNVLinkBw`` in ``src/graph/topo.h``).  Figures: NVIDIA's data sheets and product
pages (memory, NVLink generation and link count, PCIe generation) and the CUDA
compute-capability table (developer.nvidia.com/cuda-gpus).

Names match whatever prefix and case ``nvidia-smi`` prints ("NVIDIA H100 80GB HBM3",
"Tesla V100-SXM2-16GB", "GeForce RTX 2080 Ti") and the shorter forms people write
("H100-SXM5", "A100", "RTX 5090").

Examples
--------
>>> g = gpu_info("NVIDIA H100 80GB HBM3")
>>> g.name, g.arch, g.cc, g.memory_gb, g.nvlink_links
('H100 SXM5', 'hopper', 90, 80.0, 18)
>>> gpu_info("Tesla V100-SXM2-16GB").arch, gpu_info("RTX 5090").arch, gpu_info("GeForce RTX 3090").cc
('volta', 'blackwell', 86)
>>> gpu_info("Radeon MI300X") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = ["GpuInfo", "GPUS", "gpu_info", "arch_of_cc", "known_models", "GpuCompute", "gpu_compute"]


@dataclass(frozen=True)
class GpuInfo:
    """One GPU model: ``cc`` is the compute capability x 10 (8.6 -> 86)."""

    name: str
    cc: int
    memory_gb: float  # data-sheet capacity in GB (10^9 bytes)
    nvlink_gen: int  # 0: none
    nvlink_links: int  # links per GPU (to an NVSwitch, or a bridge's)
    pcie_gen: int
    nvswitch: bool = False  # sold on an NVSwitch baseboard (HGX / NVL): NVLink SHARP possible from Hopper on

    @property
    def arch(self) -> str:
        return arch_of_cc(self.cc)


def arch_of_cc(cc: int) -> str:
    """NCCL's tuning row of a compute capability (``tuning.cc``: ``compCapIndex``)."""
    return "blackwell" if cc >= 100 else "hopper" if cc >= 90 else "ampere" if cc >= 80 else "volta"


def _g(name: str, cc: int, mem: float, nvl: tuple[int, int] = (0, 0), pcie: int = 4, nvswitch: bool = False,
       *patterns: str) -> tuple[tuple[str, ...], GpuInfo]:
    return patterns, GpuInfo(name, cc, mem, nvl[0], nvl[1], pcie, nvswitch)


# (patterns matched against the normalised name, first match wins) -> the GPU.  Normalised: lower
# case, "nvidia"/"tesla"/"geforce"/"quadro" and every space, dash and underscore dropped.
_TABLE = [
    _g("P100 SXM2", 60, 16, (1, 4), 3, False, r"p100sxm2"),
    _g("P100 PCIe", 60, 16, (0, 0), 3, False, r"p100(pcie)?"),
    _g("V100 SXM3", 70, 32, (2, 6), 3, True, r"v100sxm3"),
    _g("V100 SXM2", 70, 32, (2, 6), 3, False, r"v100sxm2", r"v100(\d+gb)?$"),
    _g("V100S PCIe", 70, 32, (0, 0), 3, False, r"v100spcie"),
    _g("V100 PCIe", 70, 32, (0, 0), 3, False, r"v100pcie"),
    _g("T4", 75, 16, (0, 0), 3, False, r"t4$"),
    _g("RTX 2080 Ti", 75, 11, (2, 2), 3, False, r"rtx2080ti"),
    _g("RTX 2080", 75, 8, (2, 1), 3, False, r"rtx2080(super)?$", r"rtx2070super"),
    _g("RTX 2070/2060", 75, 8, (0, 0), 3, False, r"rtx20[67]0"),
    _g("TITAN RTX", 75, 24, (2, 2), 3, False, r"titanrtx"),
    _g("Quadro RTX 6000/8000", 75, 48, (2, 2), 3, False, r"rtx[68]000$"),
    _g("A100 SXM4", 80, 80, (3, 12), 4, True, r"a100sxm4?", r"a100(\d+gb)?(hbm2e?)?$"),
    _g("A100 PCIe", 80, 80, (3, 12), 4, False, r"a100(\d+gb)?pcie"),
    _g("A800 SXM4", 80, 80, (3, 8), 4, True, r"a800sxm4?", r"a800(\d+gb)?$"),
    _g("A800 PCIe", 80, 80, (3, 8), 4, False, r"a800(\d+gb)?pcie"),
    _g("A30", 80, 24, (3, 4), 4, False, r"a30$"),
    _g("A40", 86, 48, (3, 4), 4, False, r"a40$"),
    _g("A10", 86, 24, (0, 0), 4, False, r"a10g?$"),
    _g("A16", 86, 64, (0, 0), 4, False, r"a16$"),
    _g("A2", 86, 16, (0, 0), 4, False, r"a2$"),
    _g("RTX A6000/A5000", 86, 48, (3, 4), 4, False, r"rtxa[56]000"),
    _g("RTX 3090", 86, 24, (3, 4), 4, False, r"rtx3090(ti)?"),
    _g("RTX 30 series", 86, 12, (0, 0), 4, False, r"rtx30[5-8]0"),
    _g("L4", 89, 24, (0, 0), 4, False, r"l4$"),
    _g("L40/L40S/L20", 89, 48, (0, 0), 4, False, r"l40s?$", r"l20$"),
    _g("RTX 6000 Ada", 89, 48, (0, 0), 4, False, r"rtx6000ada"),
    _g("RTX 40 series", 89, 24, (0, 0), 4, False, r"rtx40[5-9]0"),
    _g("H100 PCIe", 90, 80, (4, 12), 5, False, r"h100(\d+gb)?pcie"),
    _g("H100 NVL", 90, 94, (4, 12), 5, False, r"h100nvl"),
    _g("H100 SXM5", 90, 80, (4, 18), 5, True, r"h100(sxm5?)?(\d+gb)?(hbm3)?$", r"h100sxm"),
    _g("H800 PCIe", 90, 80, (4, 8), 5, False, r"h800pcie"),
    _g("H800 SXM", 90, 80, (4, 8), 5, True, r"h800"),
    _g("H20", 90, 96, (4, 18), 5, True, r"h20(3e)?$"),
    _g("H200 NVL", 90, 141, (4, 18), 5, False, r"h200nvl"),
    _g("H200 SXM", 90, 141, (4, 18), 5, True, r"h200"),
    _g("GH200", 90, 96, (4, 18), 5, False, r"gh200"),
    _g("GB200", 100, 186, (5, 18), 5, True, r"gb200"),
    _g("B200", 100, 180, (5, 18), 5, True, r"b200"),
    _g("GB300", 103, 288, (5, 18), 6, True, r"gb300"),
    _g("B300", 103, 288, (5, 18), 6, True, r"b300"),
    _g("RTX PRO 6000 Blackwell", 120, 96, (0, 0), 5, False, r"rtxpro6000"),
    _g("RTX 50 series", 120, 32, (0, 0), 5, False, r"rtx50[5-9]0"),
    _g("GB10", 121, 128, (0, 0), 5, False, r"gb10$"),
]
GPUS: tuple[GpuInfo, ...] = tuple(g for _, g in _TABLE)
_COMPILED = [(tuple(re.compile(p) for p in pats), g) for pats, g in _TABLE]


def _normalise(name: str) -> str:
    s = name.lower()
    for word in ("nvidia", "tesla", "geforce", "quadro"):
        s = s.replace(word, "")
    return re.sub(r"[\s\-_]+", "", s)


def gpu_info(model: str) -> GpuInfo | None:
    """The GPU a model name denotes, or ``None`` when p2sim does not know it.

    A capacity in the name ("A100-SXM4-40GB") is that variant's memory.
    """
    s = _normalise(model)
    if not s:
        return None
    for patterns, g in _COMPILED:
        if any(p.match(s) for p in patterns):
            m = re.search(r"(?<![\w.])(\d{1,3})\s*gb", model.lower())
            return replace(g, memory_gb=float(m.group(1))) if m else g
    return None


@dataclass(frozen=True)
class GpuCompute:
    """A GPU's figures for a step's compute: dense tensor-core peaks (TFLOP/s, no sparsity), HBM bandwidth (TB/s).

    ``fp8_tflops`` is 0 where the GPU has no FP8 tensor cores (before Hopper).
    """

    name: str
    bf16_tflops: float
    fp8_tflops: float
    hbm_tb_per_s: float
    source: str
    sms: int = 132  # streaming multiprocessors: how many GEMM tiles run at once


# Dense peaks (the data sheets give them with 2:4 sparsity, twice these) and HBM bandwidth, per GPU:
_COMPUTE = {
    # NVIDIA A100 Tensor Core GPU data sheet (2021): BF16 312 TFLOP/s dense; 80GB SXM 2,039 GB/s
    "A100 SXM4": (312.0, 0.0, 2.039, "NVIDIA A100 data sheet: BF16 312 TFLOP/s, HBM2e 2,039 GB/s"),
    # NVIDIA H100 Tensor Core GPU data sheet: SXM BF16 1,979 and FP8 3,958 TFLOP/s with sparsity; 3.35 TB/s
    "H100 SXM5": (989.4, 1978.9, 3.35, "NVIDIA H100 data sheet (SXM): BF16 989, FP8 1,979 TFLOP/s dense; HBM3 3.35 TB/s"),
    # same data sheet, PCIe: BF16 1,513 and FP8 3,026 with sparsity; 2 TB/s
    "H100 PCIe": (756.0, 1513.0, 2.0, "NVIDIA H100 data sheet (PCIe): BF16 756, FP8 1,513 TFLOP/s dense; 2.0 TB/s"),
    # NVIDIA H200 data sheet: the H100 SXM's tensor cores, HBM3e 4.8 TB/s
    "H200 SXM": (989.4, 1978.9, 4.8, "NVIDIA H200 data sheet: BF16 989, FP8 1,979 TFLOP/s dense; HBM3e 4.8 TB/s"),
    # NVIDIA DGX B200 / HGX B200 data sheets: per GPU FP8 9 and BF16 4.5 PFLOP/s with sparsity; 8 TB/s HBM3e
    "B200": (2250.0, 4500.0, 8.0, "NVIDIA HGX B200 data sheet: BF16 2.25, FP8 4.5 PFLOP/s dense per GPU; HBM3e 8 TB/s"),
    # NVIDIA GB200 NVL72 data sheet: 72 GPUs, FP8 720 and BF16 360 PFLOP/s with sparsity; 576 TB/s HBM3e
    "GB200": (2500.0, 5000.0, 8.0, "NVIDIA GB200 NVL72 data sheet: FP8 720, BF16 360 PFLOP/s sparse per 72 GPUs; 576 TB/s"),
    # NVIDIA HGX B300 data sheet: per GPU FP8 9 and BF16 4.5 PFLOP/s with sparsity; 8 TB/s HBM3e
    "B300": (2250.0, 4500.0, 8.0, "NVIDIA HGX B300 data sheet: BF16 2.25, FP8 4.5 PFLOP/s dense per GPU; HBM3e 8 TB/s"),
    # NVIDIA GB300 NVL72 data sheet: 72 GPUs, FP8 720 and BF16 360 PFLOP/s with sparsity; 576 TB/s HBM3e
    "GB300": (2500.0, 5000.0, 8.0, "NVIDIA GB300 NVL72 data sheet: FP8 720, BF16 360 PFLOP/s sparse per 72 GPUs; 576 TB/s"),
}


# streaming multiprocessors (NVIDIA's architecture whitepapers: A100 108, H100 SXM5 132, H100 PCIe 114;
# Blackwell B200 148, Blackwell Ultra 160 -- NVIDIA Blackwell Ultra technical brief)
_SMS = {"A100 SXM4": 108, "H100 SXM5": 132, "H100 PCIe": 114, "H200 SXM": 132, "B200": 148, "GB200": 148,
        "B300": 160, "GB300": 160}


def gpu_compute(model: str) -> GpuCompute | None:
    """The data-sheet compute figures of a GPU model name (as :func:`gpu_info` reads it), or None.

    Examples
    --------
    >>> g = gpu_compute("H100-SXM5")
    >>> g.bf16_tflops, g.fp8_tflops, g.hbm_tb_per_s
    (989.4, 1978.9, 3.35)
    >>> gpu_compute("GB300").fp8_tflops, gpu_compute("T4") is None
    (5000.0, True)
    """
    info = gpu_info(model) if model else None
    if info is None or info.name not in _COMPUTE:
        return None
    bf16, fp8, hbm, source = _COMPUTE[info.name]
    return GpuCompute(info.name, bf16, fp8, hbm, source, _SMS[info.name])


def known_models() -> str:
    """The known models, for messages."""
    return ", ".join(g.name for g in GPUS)
