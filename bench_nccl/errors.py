"""bench_nccl's errors: all are p2sim errors, so one line and a non-zero exit."""

from p2sim.util.errors import P2SimError


class BenchError(P2SimError):
    """A benchmark run cannot go on (missing CuPy, a dead peer, a bad log...)."""


class PeerLost(BenchError):
    """This rank lost rank 0 (and its store): another rank's failure, not this one's."""


class StoppedByPeer(PeerLost):
    """Another rank failed, and this one waited for something that will not come: it stops."""


class Signalled(BenchError):
    """The run was stopped by Ctrl-C or ``SIGTERM`` (and every rank with it): exit 130 or 143, as a shell expects."""

    def __init__(self, message: str, exit_status: int) -> None:
        super().__init__(message)
        self.exit_status = exit_status


# A rank that stops because another rank failed (or rank 0 vanished) exits with this code,
# so that the launcher can name the rank that failed first rather than one it stopped.
STOPPED_BY_PEER = 3
