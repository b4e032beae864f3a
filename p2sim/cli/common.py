"""Argument helpers shared by the command handlers."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..studies.executor import Executor, capped_workers, make_executor
from ..studies.jobsize import Limits
from ..util.errors import InputError, PlacementError
from ..formalism.hierarchy import Order, reduce_axes_of
from ..util.parsing import axes_spec, axis_indices, byte_size, default_axis_names, int_list, named_parts, positive_int
from ..formalism.placement import check_sizes
from ..report.axes import generic_levels
from ..formalism.synthesis import Profile
from ..topology import Topology, load_system
from ..topology.spec import SystemSpec
from ..util.units import format_bytes

__all__ = ["emit", "topology", "hierarchy", "axes", "layout", "default_bytes", "buffer_bytes", "workers", "rules",
           "order", "order_label", "executor", "axis_names", "reduce_axes", "limits", "warn_memory",
           "where", "DEFAULT_BYTES_HELP", "layout_levels", "reduces_something"]


def emit(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


def topology(args: argparse.Namespace) -> Topology:
    nodes = None if args.nodes is None else positive_int(args.nodes, "nodes")
    return load_system(args.system, nodes)


def hierarchy(args: argparse.Namespace) -> tuple[int, ...]:
    if args.system is not None:
        if args.hierarchy is not None:
            raise InputError("hierarchy: give either --hierarchy or --system, not both")
        return topology(args).hierarchy
    if args.nodes is not None:
        raise InputError("nodes: --nodes needs --system")
    return int_list(args.hierarchy or "2,16", "hierarchy", minimum=1)


def layout_levels(args: argparse.Namespace) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...], int | None]:
    """Hierarchy, axes, level names and the node level (``None`` without ``--system``)."""
    if args.system is not None:
        if args.hierarchy is not None:
            raise InputError("hierarchy: give either --hierarchy or --system, not both")
        topo = topology(args)
        h, p = axes(args, topo.hierarchy)
        return h, p, topo.level_names, topo.spec.node_level
    h, p = layout(args)
    return h, p, generic_levels(len(h)), None


def axes(args: argparse.Namespace, h: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    p = (math.prod(h),) if args.axes is None else axes_spec(args.axes)[0]
    return check_sizes(h, p)


def axis_names(args: argparse.Namespace, count: int) -> tuple[str, ...]:
    """The names of ``--axes data=8,tensor=4`` (``axis0, axis1, ..`` for sizes only)."""
    names = None if args.axes is None else named_parts(args.axes, "axes")[1]
    return names if names is not None else default_axis_names(count)


def reduce_axes(args: argparse.Namespace, names: tuple[str, ...]) -> tuple[int, ...]:
    """``--reduce`` by index or by axis name."""
    return axis_indices(args.reduce, names, "reduce")


def reduces_something(p: tuple[int, ...], red: tuple[int, ...]) -> tuple[int, ...]:
    """Validated reduction axes (sorted) that hold more than one device, before any work is announced."""
    red = reduce_axes_of(p, red)
    if math.prod(p[i] for i in red) < 2:
        raise PlacementError("reduce: the reduction axes have size 1, so there is nothing to reduce")
    return red


def limits(args: argparse.Namespace) -> Limits:
    """The job-size limits of ``--yes``, ``--max-matrices`` and ``--max-simulations``."""
    mm = getattr(args, "max_matrices", None)
    ms = getattr(args, "max_simulations", None)
    return Limits.of(getattr(args, "yes", False), None if mm is None else positive_int(mm, "max-matrices"),
                     None if ms is None else positive_int(ms, "max-simulations"))


def layout(args: argparse.Namespace) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return axes(args, hierarchy(args))


def default_bytes(topo: Topology) -> int:
    """P2's buffer: 2^29 x nodes float32 per GPU."""
    return 2**29 * topo.node_count * 4


DEFAULT_BYTES_HELP = ("P2's 2^29 x nodes float32, i.e. 2 GiB x nodes per GPU: 4 GiB on 2 nodes, 512 GiB on 256; "
                      "a buffer above the system's GPU memory is warned about")


def buffer_bytes(args: argparse.Namespace, topo: Topology) -> int:
    """``--bytes``, or P2's default."""
    return default_bytes(topo) if args.bytes is None else byte_size(args.bytes)


def warn_memory(command: str, spec: SystemSpec, nbytes: float, default: bool, nodes: int) -> None:
    """A warning on stderr when the buffer per GPU exceeds the system file's ``[gpu] memory_gib``.

    Called after every input check, so that a warning never precedes an error message.
    """
    memory = spec.nccl.memory_gib
    if memory is None or nbytes <= memory * 2**30:
        return
    what = (f"the default buffer (P2's 2^29 x {nodes} nodes float32) of {format_bytes(nbytes)} per GPU" if default
            else f"the buffer of {format_bytes(nbytes)} per GPU")
    print(f"p2sim {command}: warning: {what} exceeds the {memory:g} GiB of GPU memory of {spec.name} "
          f"([gpu] memory_gib): no real GPU holds it; give --bytes", file=sys.stderr, flush=True)


def rules(args: argparse.Namespace) -> tuple[Profile, int]:
    """The synthesis rule profile and longest program length of ``--profile`` and ``--max-size``."""
    return Profile.parse(args.profile), positive_int(args.max_size, "max-size")


def workers(args: argparse.Namespace) -> int | None:
    return None if args.workers is None else positive_int(args.workers, "workers")


def order(args: argparse.Namespace) -> Order:
    """The device order of ``--order``."""
    return Order.parse(args.order)


def order_label(value: Order, *reduce_axes: Sequence[int]) -> str:
    """``"; p2 order"`` for a header, where the order matters (a reduction over several axes) or is not the default.

    With one reduction axis the two orders give the same groups, so headers stay as they were.
    """
    if value is Order.ALIGNED and all(len(set(r)) < 2 for r in reduce_axes):
        return ""
    return f"; {value.value} order"
def executor(args: argparse.Namespace, tasks: int | None = None) -> AbstractContextManager[Executor]:
    """The executor of ``--workers`` or ``--scheduler``, with at most ``tasks`` local workers."""
    return make_executor(workers(args), args.scheduler, tasks)


def where(args: argparse.Namespace, tasks: int | None) -> str:
    """Where ``tasks`` tasks run, for the job-size line: ``in this process``, ``on 2 worker processes``, Dask."""
    if args.scheduler is not None:
        return f"on Dask ({args.scheduler})"
    n = capped_workers(workers(args), tasks)
    return "in this process" if n == 1 else f"on {n} worker processes"
