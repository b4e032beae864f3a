"""Rank, world size and rendezvous address from the usual launchers' variables.

The store's address and port come from ``P2SIM_BENCH_ADDR`` / ``P2SIM_BENCH_PORT`` when
set, else from ``MASTER_ADDR`` / ``MASTER_PORT``.  Under torchrun (``TORCHELASTIC_RUN_ID``
set) ``MASTER_PORT`` is torchrun's own store, already listening on rank 0's host, so
without ``P2SIM_BENCH_PORT`` the store takes the port above it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from p2sim.util.errors import InputError

__all__ = ["Placement", "from_environment", "TOKEN_VAR", "ADDR_VAR", "PORT_VAR", "DEFAULT_PORT"]

TOKEN_VAR = "P2SIM_BENCH_TOKEN"
ADDR_VAR = "P2SIM_BENCH_ADDR"
PORT_VAR = "P2SIM_BENCH_PORT"
DEFAULT_PORT = 29533

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


def _port(var: str, raw: str) -> int:
    try:
        port = int(raw)
    except ValueError:
        raise InputError(f"{var}: {raw!r} is not a port") from None
    if not 0 < port < 65536:
        raise InputError(f"{var}: {port} is not a port (1..65535)")
    return port


def store_address() -> tuple[str, int]:
    """Where rank 0's store listens (see the module's docstring)."""
    env = os.environ
    address = env.get(ADDR_VAR) or env.get("MASTER_ADDR") or "127.0.0.1"
    if env.get(PORT_VAR):
        return address, _port(PORT_VAR, env[PORT_VAR])
    if env.get("MASTER_PORT"):
        port = _port("MASTER_PORT", env["MASTER_PORT"])
        # torchrun's agent serves its own store on MASTER_PORT (F3: "Address already in use")
        return address, port + 1 if env.get("TORCHELASTIC_RUN_ID") else port
    return address, DEFAULT_PORT


def from_environment() -> Placement | None:
    """The rank's placement when a launcher started it; ``None`` when none did."""
    for rank_var, world_var, local_var in _SOURCES:
        if rank_var in os.environ and world_var in os.environ:
            try:
                rank, world = int(os.environ[rank_var]), int(os.environ[world_var])
                local = int(os.environ.get(local_var, rank))
            except ValueError:
                raise InputError(f"{rank_var}/{world_var}: not integers") from None
            address, port = store_address()
            token = os.environ.get(TOKEN_VAR, "")
            if not token:
                raise InputError(f"{TOKEN_VAR}: set the same random token on every rank "
                                 f"(e.g. export {TOKEN_VAR}=$(python -c 'import secrets; print(secrets.token_hex(16))'))")
            if not 0 <= rank < world:
                raise InputError(f"{rank_var}: rank {rank} is outside 0..{world - 1}")
            return Placement(rank, world, local, address, port, token)
    return None
