"""The nccl-tests command that measures one lowered step, and the step as ``check`` reports it.

Shared by ``check``'s program steps (:mod:`.check`) and a model's step collectives
(:mod:`.check_step`): one GPU per process, ``NCCL_TESTS_SPLIT`` (:mod:`.split`) where the step
runs several groups at once so that they share the links as they do in training, ``-J`` for
nccl-tests' JSON output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..collectives.binding import Binding
from ..topology.graph import Topology
from .split import split_expression

__all__ = ["BINARIES", "CheckStep", "nccl_command"]

# nccl-tests' binary of each collective (its build/ directory; the names in nccl-tests' Makefile)
BINARIES = {"AllReduce": "all_reduce_perf", "ReduceScatter": "reduce_scatter_perf", "AllGather": "all_gather_perf",
            "Broadcast": "broadcast_perf", "Reduce": "reduce_perf", "AllToAll": "alltoall_perf",
            "SendRecv": "sendrecv_perf"}


@dataclass(frozen=True)
class CheckStep:
    """One program step (or a model's step collective) as the nccl-tests run that measures it, with p2sim's
    prediction; ``count``: a model's calls of it per training step (None: a program step, once)."""

    index: int
    instruction: str
    collective: str
    groups: int
    group_size: int
    nodes_spanned: int
    size: int  # nccl-tests' -b / -e: the step's per-group buffer, whole floats divisible by the group
    split: str | None  # NCCL_TESTS_SPLIT (None: one group of every rank)
    command: str
    seconds: float
    busbw: float  # bytes/s
    bound: Binding
    note: str = ""
    count: int | None = None

    def to_json(self) -> dict[str, Any]:
        doc = {"step": self.index, "instruction": self.instruction, "collective": self.collective,
               "groups": self.groups, "group_size": self.group_size, "nodes_spanned": self.nodes_spanned,
               "size": self.size, "split": self.split, "command": self.command, "seconds": self.seconds,
               "busbw_GBps": self.busbw / 1e9, "bound": self.bound.to_json(), "note": self.note}
        if self.count is not None:
            doc["count"] = self.count
        return doc


def nccl_command(topo: Topology, groups: Sequence[Sequence[int]], op: str, size: int,
                 index: int) -> tuple[str, str | None, str]:
    """The command measuring ``groups`` running ``op`` at once with ``size`` bytes each: (command, split, note);
    where no split expression gives the groups, one group alone, said in the note."""
    note, split = "", None
    try:
        split = split_expression(groups, topo.devices)
    except ValueError as e:
        note = f"{e}: run one group alone ({len(groups[0])} ranks, {list(groups[0])[:8]}..)"
    env = f' -x NCCL_TESTS_SPLIT="{split}"' if split else ""
    np_ = topo.devices if not note else len(groups[0])
    command = (f"mpirun -np {np_} -N {min(topo.gpus_per_node, np_)}{env} ./build/{BINARIES[op]} "
               f"-b {size} -e {size} -g 1 -J step{index}.json")
    return command, split, note
