"""The time of one operation on one GPU, from its shape: a roofline with achievable fractions of the peaks.

An operation of :mod:`p2sim.workload.compute` takes ``max(flops / (peak x e), bytes / (HBM x m)) + launch``:

* matrix multiplies run at ``e = matmul`` of the dense tensor-core peak of their precision (BF16, or FP8
  with ``fp8`` times that fraction: the FP8 recipes' casts and scaling cost, Micikevicius et al. 2022),
  unless their operands' bytes at HBM bandwidth take longer (a skinny GEMM, an expert fed few tokens:
  the roofline, Williams et al. 2009);
* a GEMM's fraction falls with its shape: its output tiles (128 x 256, CUTLASS's Hopper and Blackwell
  tiles) fill the GPU's SMs in waves, the last one partly (wave quantization: ``tiles / (waves x SMs)``;
  a grouped GEMM's experts share the waves), and a short ``k`` spends more of the kernel in its prologue and
  epilogue: ``k / (k + k_half)`` (NVIDIA's "Matrix Multiplication Background" user guide, sections on tile
  and wave quantization and arithmetic intensity);
* a MoE layer's expert GEMMs run at ``grouped`` of that: TransformerEngine's grouped GEMM launches one
  GEMM per local expert on several streams, and the tokens' permutation around them is not overlapped
  (MegaBlocks, Gale et al. 2023, section 6: grouped and batched expert GEMMs at 60-90 % of a dense GEMM's
  throughput at the same FLOPs);
* FlashAttention's kernel runs at ``e = attention`` of the BF16 peak (Dao 2023 reports 50-73 % of A100's
  peak forward, FlashAttention-3 75 % of H100's in BF16; Shah et al. 2024);
* memory-bound kernels (norms, activations, rotary, residual adds, permutations, the optimizer) move their
  bytes at ``m = memory`` of the HBM bandwidth (STREAM-like kernels reach 80-92 % of it; NVIDIA's
  bandwidthTest / Jia et al. 2018's microbenchmarks);
* each kernel costs ``launch`` seconds at least (a CUDA kernel's launch and tail, about 2-5 us);
* the host issues every kernel: ``host`` seconds each (PyTorch's eager dispatch and TransformerEngine's
  Python modules, 5-20 us an operation: He 2022, "Making Deep Learning Go Brrrr", overhead section); a
  layer whose kernels are many and small -- a MoE layer's per-expert GEMMs and their FP8 casts -- is
  host-bound: its time is the larger of its kernels' device time and their host time.

:data:`DEFAULT` holds the fitted values: fitted on the dev rows only (``benchmarks/step_rows.py --fit``),
each inside its physical range (:data:`BOUNDS`, the sources above).

Examples
--------
>>> from p2sim.workload.compute import Op
>>> g = OpTimer(bf16_tflops=1000.0, fp8_tflops=2000.0, hbm_tb_per_s=4.0, params=EfficiencyParams(0.8, 0.5, 0.6, 0.8, 0.0),
...             sms=128)
>>> g.kernels(Op("experts up", "matmul", 1.0, 1.0, 1, 1, 1, 16), fp8=True)   # a GEMM and an FP8 cast per expert
32
>>> big = Op("mm", "matmul", 2.0 * 8192 ** 3, 2.0 * 3 * 8192 ** 2, 8192, 8192, 8192)
>>> round(g.seconds(big, fp8=False) * 1e3, 3)          # 1.1 TFLOP at 800 TFLOP/s
1.374
>>> round(g.seconds(big, fp8=True) / g.seconds(big, fp8=False), 2)   # twice the peak at half the fraction
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..util.errors import InputError
from .compute import Op

__all__ = ["EfficiencyParams", "OpTimer", "DEFAULT", "BOUNDS"]


@dataclass(frozen=True)
class EfficiencyParams:
    """Achievable fractions: GEMMs of the BF16 peak, FP8 GEMMs relative to that, FlashAttention of the BF16
    peak, memory-bound kernels of HBM bandwidth; and each kernel's least time in seconds."""

    matmul: float
    fp8: float
    attention: float
    memory: float
    launch: float
    host: float = 0.0
    k_half: float = 0.0
    grouped: float = 1.0

    def __post_init__(self) -> None:
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise InputError(f"efficiency: {name}: {value!r} should be in [{low:g}, {high:g}] (its physical range)")


# the physical ranges (module docstring's sources): a GEMM reaches at most ~90 % of the tensor-core peak
# (cuBLAS on large square shapes), FP8 at least ~40 % of BF16's fraction; FlashAttention 30-80 %; HBM
# streams 50-95 %; a launch 0-10 us; the host's dispatch 0-20 us an operation
BOUNDS = {"matmul": (0.4, 0.92), "fp8": (0.4, 1.0), "attention": (0.25, 0.8), "memory": (0.5, 0.95),
          "launch": (0.0, 1e-5), "host": (0.0, 2e-5), "k_half": (0.0, 1024.0), "grouped": (0.3, 1.0)}

# fitted on the dev rows (validation/step_times/step_times_dev.csv) by benchmarks/step_rows.py --fit
# (a grid over matmul, fp8, attention, host, k_half, grouped; memory and launch held): host ends at its bound
# -- the MoE layers' costs this model still lacks (the rows with many local experts are slower than it) are
# taken up there.  grouped refitted once the MoE token dispatcher's operations were counted (router top-k,
# auxiliary loss, bookkeeping, the alltoall dispatcher's permutations: p2sim.workload.compute) and the rows'
# dispatchers given (benchmarks/step_rows.py): the least squared log error over the 31 rows at 0.40 of 0.3-0.6
# by 0.05, the other parameters held (the dense rows do not move);
# docs/workload.md, "The step's time and memory"
DEFAULT = EfficiencyParams(matmul=0.8, fp8=0.65, attention=0.35, memory=0.8, launch=3e-6, host=2e-5, k_half=256.0,
                           grouped=0.4)


@dataclass(frozen=True)
class OpTimer:
    """A GPU's peaks (dense TFLOP/s in BF16 and FP8, HBM TB/s) and the achievable fractions."""

    bf16_tflops: float
    fp8_tflops: float
    hbm_tb_per_s: float
    params: EfficiencyParams = DEFAULT
    sms: int = 132

    def shape_fraction(self, op: Op) -> float:
        """The share of the peak fraction a GEMM's shape allows: wave quantization times the ``k`` ramp."""
        if op.m <= 0 or op.n <= 0 or op.k <= 0:
            return 1.0
        tiles = math.ceil(op.m / 128) * math.ceil(op.n / 256) * op.count
        waves = math.ceil(tiles / self.sms)
        return tiles / (waves * self.sms) * op.k / (op.k + self.params.k_half)

    def kernels(self, op: Op, fp8: bool = False) -> int:
        """Kernels the host issues for ``op``'s forward: one per GEMM of it (a grouped GEMM's per expert, as
        TransformerEngine's GroupedLinear runs them), and an FP8 cast of each GEMM's input; a memory-bound op's
        ``kernels`` (the MoE dispatcher's chains of small kernels and NCCL calls)."""
        if op.kind == "matmul":
            return op.count * (2 if fp8 and self.fp8_tflops > 0 else 1)
        return op.kernels

    def seconds(self, op: Op, fp8: bool = False, flops_scale: float = 1.0, bytes_scale: float = 1.0) -> float:
        """One run of ``op`` (``flops_scale`` and ``bytes_scale``: the backward's multiples of the forward).

        ``fp8``: its matrix multiplies in FP8 (where the GPU has FP8 tensor cores).
        """
        p = self.params
        hbm = self.hbm_tb_per_s * 1e12 * p.memory
        memory = op.bytes * bytes_scale / hbm
        if op.kind == "memory":
            return memory + p.launch * op.kernels  # a chain of small kernels (the MoE dispatcher's) each its launch
        if op.kind == "attention":
            return max(op.flops * flops_scale / (self.bf16_tflops * 1e12 * p.attention), memory) + p.launch
        if fp8 and self.fp8_tflops > 0:
            peak = self.fp8_tflops * 1e12 * p.matmul * p.fp8
        else:
            peak = self.bf16_tflops * 1e12 * p.matmul
        if op.name.startswith("experts"):
            peak *= p.grouped
        # every GEMM of a grouped one is its own kernel, with its launch and tail (the backward's two each)
        launches = op.count * max(1.0, flops_scale)
        return max(op.flops * flops_scale / (peak * self.shape_fraction(op)), memory) + p.launch * launches
