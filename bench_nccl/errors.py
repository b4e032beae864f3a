"""bench_nccl's errors: all are p2sim errors, so one line and a non-zero exit."""

from p2sim.errors import P2SimError


class BenchError(P2SimError):
    """A benchmark run cannot go on (missing CuPy, a dead peer, a bad log...)."""
