"""bench_nccl: run p2sim's lowered reduction programs for real and log their times.

One process per GPU (``python -m bench_nccl run ...``), NCCL through
``cupy.cuda.nccl``, or the same runner on CPUs with the numeric executor
(``--backend numpy``) for tests.  Logs are JSON lines that ``p2sim validate`` and
``p2sim calibrate`` read.  See ``bench_nccl/README.md``.
"""

__version__ = "0.1.0"
