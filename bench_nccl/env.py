"""Rank, world size and rendezvous address from the usual launchers' variables."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import BenchError

__all__ = ["Placement", "from_environment", "TOKEN_VAR"]

TOKEN_VAR = "P2SIM_BENCH_TOKEN"

# (rank, world size, local rank) variables of torchrun, Open MPI, MPICH/PMI, and Slurm
_SOURCES = (
    ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
)


@dataclass(frozen=True)
class Placement:
    rank: int
    world: int
    local_rank: int
    address: str
    port: int
    token: str


def from_environment() -> Placement | None:
    """The rank's placement when a launcher started it; ``None`` when none did."""
    for rank_var, world_var, local_var in _SOURCES:
        if rank_var in os.environ and world_var in os.environ:
            try:
                rank, world = int(os.environ[rank_var]), int(os.environ[world_var])
                local = int(os.environ.get(local_var, rank))
            except ValueError:
                raise BenchError(f"{rank_var}/{world_var}: not integers") from None
            address = os.environ.get("MASTER_ADDR", "127.0.0.1")
            try:
                port = int(os.environ.get("MASTER_PORT", "29533"))
            except ValueError:
                raise BenchError(f"MASTER_PORT: {os.environ['MASTER_PORT']!r} is not a port") from None
            token = os.environ.get(TOKEN_VAR, "")
            if not token:
                raise BenchError(f"{TOKEN_VAR}: set the same random token on every rank "
                                 f"(e.g. export {TOKEN_VAR}=$(python -c 'import secrets; print(secrets.token_hex(16))'))")
            if not 0 <= rank < world:
                raise BenchError(f"{rank_var}: rank {rank} is outside 0..{world - 1}")
            return Placement(rank, world, local, address, port, token)
    return None
