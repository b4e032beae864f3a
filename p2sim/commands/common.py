"""Argument helpers shared by the command handlers."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..analysis.executor import Executor, make_executor
from ..errors import InputError
from ..hierarchy import Order
from ..parsing import byte_size, int_list, positive_int
from ..placement import check_sizes
from ..synthesis import Profile
from ..topology import Topology, load_system

__all__ = ["emit", "topology", "hierarchy", "axes", "layout", "default_bytes", "buffer_bytes", "workers", "rules",
           "order", "order_label", "executor"]


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


def axes(args: argparse.Namespace, h: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    p = (math.prod(h),) if args.axes is None else int_list(args.axes, "axes", minimum=1)
    return check_sizes(h, p)


def layout(args: argparse.Namespace) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return axes(args, hierarchy(args))


def default_bytes(topo: Topology) -> int:
    """P2's buffer: 2^29 x nodes float32 per GPU."""
    return 2**29 * topo.node_count * 4


def buffer_bytes(args: argparse.Namespace, topo: Topology) -> int:
    return default_bytes(topo) if args.bytes is None else byte_size(args.bytes)


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
def executor(args: argparse.Namespace) -> AbstractContextManager[Executor]:
    """The executor of ``--workers`` or ``--scheduler``."""
    return make_executor(workers(args), args.scheduler)
