"""bench_nccl: run p2sim's lowered reduction programs, and single collectives, for real.

One process per GPU (``python -m bench_nccl run ...`` for programs, ``sweep`` for one
collective over a size range in nccl-tests' conventions, ``single`` for a one-GPU check),
NCCL through ``cupy.cuda.nccl``, or the same runner on CPUs with the numeric executor
(``--backend numpy``) for tests.  Logs are JSON lines that p2sim reads as measurements.
See ``bench_nccl/README.md``.
"""

__version__ = "0.1.0"
