"""The one-machine launcher: one process per rank, watched until all have finished.

It picks a free port on the loopback address, makes the run's random token, and
starts ``world`` copies of the command with the torchrun-style variables set.  If a
rank dies, the launcher tells the others through the store, gives them a few
seconds to stop, ends whatever is left, and says which rank failed.  Ctrl-C or ``SIGTERM``
stops every rank (and a rank dies with the launcher even if the launcher is killed outright).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

from p2sim.util.signals import Terminated, ended_by, ending

from .env import ADDR_VAR, PORT_VAR, TOKEN_VAR
from .errors import STOPPED_BY_PEER, BenchError, Signalled
from .store import StoreClient

__all__ = ["launch_local", "free_port", "LAUNCHED_VAR"]

LAUNCHED_VAR = "P2SIM_BENCH_LAUNCHED"  # set in the ranks this launcher starts: it has checked the log already


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def launch_local(argv: Sequence[str], world: int, address: str = "127.0.0.1", grace: float = 10.0) -> int:
    port = free_port(address)
    token = secrets.token_hex(16)
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR=address, MASTER_PORT=str(port), **{TOKEN_VAR: token, ADDR_VAR: address,
                                                                   PORT_VAR: str(port), LAUNCHED_VAR: "1"})
        env.pop("TORCHELASTIC_RUN_ID", None)  # these ranks are ours, not torchrun's
        procs.append(subprocess.Popen([sys.executable, "-m", "bench_nccl", *argv], env=env, preexec_fn=_rank_init))
    failed: tuple[int, int] | None = None
    try:
        while any(p.poll() is None for p in procs):
            for rank, p in enumerate(procs):
                code = p.poll()
                if code not in (None, 0) and failed is None:
                    failed = (rank, code)
                    _tell_others(address, port, token, f"rank {rank} exited with code {code}")
                    deadline = time.monotonic() + grace
                    while time.monotonic() < deadline and any(q.poll() is None for q in procs):
                        time.sleep(0.1)
                    _kill_rank_zero_last(procs)
            time.sleep(0.05)
    except (KeyboardInterrupt, Terminated) as e:  # Ctrl-C, or SIGTERM (kill, a scheduler's time limit)
        ending()  # a second signal must not leave ranks running
        _kill_rank_zero_last(procs)
        word, status = ended_by(e)  # type: ignore[misc]
        raise Signalled(f"{word}; stopped every rank; the log keeps every completed record", status) from None
    for p in procs:
        p.wait()
    # the rank to blame: one that failed on its own, not one stopped by its peers (or killed
    # by us after the grace period); the ranks may also all have ended between two looks
    codes = [(r, p.returncode) for r, p in enumerate(procs)]
    own = next(((r, c) for r, c in codes if c > 0 and c != STOPPED_BY_PEER), None)
    failed = own or failed or next(((r, c) for r, c in codes if c != 0), None)
    if failed is not None:
        raise BenchError(f"rank {failed[0]} failed (exit code {failed[1]}); stopped the other ranks; "
                         "the log keeps every completed record")
    return 0


def _kill_rank_zero_last(procs: list[subprocess.Popen]) -> None:
    """Kill every rank still running, and wait for them.  Rank 0 serves the store: a rank that outlives it
    reports the lost store on stderr, and under load the gap between two kills is long enough for that to
    happen, so the other ranks are killed and reaped first."""
    for p in procs[1:]:
        if p.poll() is None:
            p.kill()
    for p in procs[1:]:
        p.wait()
    if procs and procs[0].poll() is None:
        procs[0].kill()
    if procs:
        procs[0].wait()


def _rank_init() -> None:
    """In each rank before it runs: it dies with the launcher even if the launcher is killed outright (Linux's
    ``PR_SET_PDEATHSIG``), and a signal the launcher dies of without stopping the ranks cannot orphan them."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG, <linux/prctl.h>
        except (OSError, AttributeError):  # no prctl: the launcher's own stop still ends the ranks
            pass


def _tell_others(address: str, port: int, token: str, msg: str) -> None:
    try:
        c = StoreClient(address, port, token, connect_timeout=1.0)
        if not c.get("abort"):
            c.set("abort", msg)
        c.close()
    except BenchError:
        pass  # rank 0 itself is gone: the others lose the store and stop on their own
