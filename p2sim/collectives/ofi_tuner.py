"""aws-ofi-nccl's region tuner: the algorithm and protocol NCCL runs on AWS p5 from three nodes on.

Since NCCL 2.21 NCCL looks for a tuner inside the network plugin when ``NCCL_TUNER_PLUGIN`` is not set,
and aws-ofi-nccl bundles one there ("By bundling the tuner in the net plugin, we cause the tuner to be used
by default on NCCL 2.21 or later", ``src/Makefile.am``; ``platform-aws.cpp`` ``configure_tuner`` sets
``NCCL_TUNER_PLUGIN`` to the plugin itself).  On p5/p5e it is the **region tuner**
(``OFI_NCCL_TUNER_TYPE`` defaults to ``REGION``, ``nccl_ofi_param.h``; ``is_region_supported``): measured
maps of which (algorithm, protocol) won, as polygons in the plane of ``log2(bytes)`` and
``log2(ranks)`` (``src/tuner/nccl_ofi_regions.cpp``, ``region_init_internal_p5_p5e``).  For a collective
of a communicator of more than two nodes it takes the first region, in the file's order, whose pair NCCL
can run and that holds the point (an edge counts), and sets that pair's cost to 0 so NCCL runs it; a
point in no region, a communicator of two nodes or fewer (``num_nodes <= 2``: "the regions are not well
defined") and a shape with no regions leave NCCL's own model to choose.  The p5 maps exist for
communicators of 8, 2 or 1 GPUs on every node (AllReduce; AllGather and ReduceScatter with one per node).

The vertices below are the plugin's, copied as data; the regions the plugin closes with
``extend_region`` (a line through two vertices carried to the map's edge, ``TUNER_MAX_SIZE`` 100 GiB and
``TUNER_MAX_RANKS`` 2^20) are closed the same way here (:func:`extend`).

Examples
--------
>>> pick("p5", "AllReduce", 32, 4, 2**20, {("tree", "LL128"), ("ring", "LL128"), ("ring", "Simple")})
('tree', 'LL128')
>>> pick("p5", "AllReduce", 32, 4, 2**30, {("tree", "LL128"), ("ring", "LL128"), ("ring", "Simple")})
('ring', 'LL128')
>>> pick("p5", "AllReduce", 512, 64, 2**30, {("tree", "LL128"), ("ring", "LL128"), ("nvls_tree", "Simple")})
('nvls_tree', 'Simple')
>>> pick("p5", "AllReduce", 16, 2, 2**20, {("tree", "LL128")}) is None   # two nodes: NCCL's own model
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection
from dataclasses import dataclass

from ..topology.settings import OFI_TUNERS

__all__ = ["Region", "TUNERS", "extend", "inside", "pick", "regions"]

MAX_SIZE = 100.0 * 2**30  # TUNER_MAX_SIZE (include/tuner/nccl_ofi_tuner_region.h)
MAX_RANKS = 1024.0 * 1024  # TUNER_MAX_RANKS
EPS = 1e-10  # is_inside_region's edge tolerance, in the log2 plane
LOG_EPS = 1e-6  # transform_log2 takes a 0 coordinate as this before its log2

TUNERS = OFI_TUNERS  # [nccl] ofi_tuner: the platforms whose maps p2sim has (p5: P5_P5E)


@dataclass(frozen=True)
class Region:
    """One measured region: where ``algorithm`` / ``protocol`` won, its vertices (bytes, ranks) in order."""

    algorithm: str
    protocol: str
    vertices: tuple[tuple[float, float], ...]


def _log2(p: tuple[float, float]) -> tuple[float, float]:
    return tuple(math.log2(v if v != 0 else LOG_EPS) for v in p)  # type: ignore[return-value]


def extend(a: tuple[float, float], b: tuple[float, float], z: tuple[float, float] = (MAX_SIZE, MAX_RANKS)
           ) -> tuple[float, float]:
    """The plugin's ``extend_region``: on the line through ``a`` and ``b`` (log2 plane), the farthest point that
    keeps ``z``'s x or y, as (bytes, ranks).

    >>> extend((1, 2), (1, 4))      # a vertical line: up to the map's most ranks
    (1.0, 1048576.0)
    >>> round(extend((4194304, 2), (8589934592, 2048))[1])   # a slope: to the map's largest size
    20348
    """
    (ax, ay), (bx, by), (zx, zy) = _log2(a), _log2(b), _log2(z)
    if ax == bx:
        x, y = ax, zy
    elif ay == by:
        x, y = zx, ay
    else:
        m = (ay - by) / (ax - bx)
        c = by - m * bx
        y = m * zx + c
        x, y = (zx, y) if y < zy else ((zy - c) / m, zy)
    return 2.0**x, 2.0**y


def _regions_p5(per_node: int, op: str) -> tuple[Region, ...]:
    """``region_init_internal_p5_p5e``: the maps for communicators of ``per_node`` GPUs on every node."""
    R = Region
    if per_node == 8 and op == "AllReduce":
        tree_ll128 = extend((402653184, 2048), (402653184, 4096))
        nvlstree_1 = extend((8053063680, 160), (9663676416, 192))
        nvlstree_2 = extend((402653184, 2048), (402653184, 4096))
        ring_simple = extend((8053063680, 160), (9663676416, 192))
        return (
            R("tree", "LL128", ((0, 16), (31457280, 16), (37748736, 32), (117440512, 64), (301989888, 128),
                                (301989888, 256), (335544320, 512), (536870912, 1024), (402653184, 2048),
                                (402653184, 4096), tree_ll128, (0, tree_ll128[1]))),
            R("nvls_tree", "Simple", ((31457281, 16), (MAX_SIZE, 16), (31457281, 16))),
            R("ring", "LL128", ((31457280, 17), (1073741824, 17), (2147483648, 64), (2147483648, 128),
                                (1342177280, 160), (2147483648, 256), (1074790400, 256), (444596224, 160),
                                (301989888, 128), (117440512, 64), (37748736, 32))),
            R("nvls_tree", "Simple", ((2147483648, 128), (6442450944, 128), (8053063680, 160), (9663676416, 192),
                                      nvlstree_1, nvlstree_2, (402653184, 4096), (402653184, 2048),
                                      (536870912, 1024), (335544320, 512), (301989888, 256), (310378496, 160),
                                      (444596224, 160), (1074790400, 256), (2684354560, 256), (2147483648, 224),
                                      (1342177280, 160))),
            R("ring", "Simple", ((1073741824, 17), (ring_simple[0], 17), ring_simple, (9663676416, 192),
                                 (8053063680, 160), (2684354560, 64), (1610612736, 32))),
        )
    if per_node == 2 and op == "AllReduce":
        tree_ll128 = extend((88160256, 128), (178163712, 256))
        tree_simple_1 = extend((787480576, 128), (1073741824, 256))
        tree_simple_2 = extend((257114112, 128), (269484032, 256))
        nvlstree = extend((787480576, 128), (1073741824, 256))
        return (
            R("tree", "LL128", ((0, 4), (1314816, 4), (1051648, 8), (1051648, 12), (2367488, 16), (5525504, 32),
                                (9473024, 64), (88160256, 128), (178163712, 256), tree_ll128, (0, tree_ll128[1]))),
            R("ring", "LL128", ((1314816, 4), (19736576, 4), (41842688, 8), (296747008, 64), (257114112, 128),
                                (269484032, 256), (178163712, 256), (88160256, 128), (9473024, 64), (5525504, 32),
                                (2367488, 16), (1051648, 12), (1051648, 8), (1314816, 4))),
            R("nvls_tree", "Simple", ((19736576, 4), (81844224, 4), (275775488, 8), (275775488, 48),
                                      (296747008, 64), (41842688, 8))),
            R("tree", "LL128", ((81844224, 4), (269484032, 4), (81844224, 4))),
            R("tree", "Simple", ((269484032, 4), (MAX_SIZE, 4), (269484032, 4))),
            R("ring", "Simple", ((81844224, 5), (MAX_SIZE, 5), (MAX_SIZE, 32), (1073741824, 40), (1073741824, 128),
                                 (787480576, 128), (296747008, 64), (275775488, 48), (275775488, 8), (81844224, 5))),
            R("tree", "Simple", ((296747008, 64), (787480576, 128), (1073741824, 256), tree_simple_1, tree_simple_2,
                                 (269484032, 256), (257114112, 128))),
            R("nvls_tree", "Simple", (nvlstree, (1073741824, 256), (787480576, 128), (1073741824, 128),
                                      (1073741824, 40), (MAX_SIZE, 32))),
        )
    if per_node == 1 and op == "AllReduce":
        tree_ll128 = extend((9999360, 64), (119477248, 128))
        ring_ll128 = extend((4736000, 2), (269484032, 128))
        return (
            R("tree", "LL128", ((0, 16), (2367488, 16), (9999360, 64), (119477248, 128), tree_ll128, (0, MAX_RANKS))),
            R("ring", "LL128", ((0, 2), (4736000, 2), (269484032, 128), ring_ll128, tree_ll128, (119477248, 128),
                                (9999360, 64), (2367488, 16), (0, 16))),
            R("ring", "Simple", ((4736000, 2), (MAX_SIZE, 2), ring_ll128, (269484032, 128))),
        )
    if per_node == 1 and op == "AllGather":
        ring = extend((4194304, 2), (8589934592, 2048))
        return (R("ring", "Simple", ((4194304, 2), (MAX_SIZE, 2), ring, (8589934592, 2048))),)
    if per_node == 1 and op == "ReduceScatter":
        ring = extend((8388608, 2), (4294967296, 1024))
        return (R("ring", "Simple", ((8388608, 2), (MAX_SIZE, 2), ring, (4294967296, 1024))),)
    return ()


@functools.cache
def regions(tuner: str, per_node: int, op: str) -> tuple[Region, ...]:
    """The tuner's regions for a communicator of ``per_node`` GPUs on every node, in the plugin's order (none
    for another platform, shape or collective)."""
    return _regions_p5(per_node, op) if tuner == "p5" else ()


@functools.cache
def _points(region: Region) -> tuple[tuple[float, float], ...]:
    """The region's vertices in the log2 plane (set_regions' transform_log2), once per region."""
    return tuple(_log2(v) for v in region.vertices)


@functools.cache
def _path(region: Region):
    from matplotlib.path import Path  # the polygon test; imported only where the tuner runs

    pts = _points(region)
    return Path(list(pts) + [pts[0]], closed=True)


def _on_edge(p: tuple[float, float], region: Region) -> bool:
    """Whether ``p`` (log2 plane) lies within :data:`EPS` of one of the region's edges (is_inside_region's 0)."""
    pts = list(_points(region))
    for (ax, ay), (bx, by) in zip(pts, pts[1:] + pts[:1]):
        dx, dy = bx - ax, by - ay
        length = dx * dx + dy * dy
        if length == 0:
            continue
        t = ((p[0] - ax) * dx + (p[1] - ay) * dy) / length
        if 0.0 <= t <= 1.0 and math.hypot(p[0] - ax - t * dx, p[1] - ay - t * dy) < EPS:
            return True
    return False


def inside(nbytes: float, ranks: int, region: Region) -> bool:
    """Whether the point (``nbytes``, ``ranks``) is inside the region or on its edge, in the log2 plane.

    >>> r = Region("ring", "Simple", ((4, 2), (64, 2), (64, 8), (4, 8)))
    >>> inside(16, 4, r), inside(4, 4, r), inside(2, 4, r)   # inside, on an edge, outside
    (True, True, False)
    """
    p = _log2((nbytes, ranks))
    return _on_edge(p, region) or bool(_path(region).contains_point(p))


def pick(tuner: str, op: str, ranks: int, nodes: int, nbytes: float,
         available: Collection[tuple[str, str]]) -> tuple[str, str] | None:
    """The (algorithm, protocol) the plugin's tuner makes NCCL run, or ``None`` where NCCL's own model chooses:
    more than two nodes, every node with the same GPUs (``ranks / nodes`` of them), the first region in order
    whose pair is ``available`` (NCCL's table has it) and holds the point."""
    if tuner == "none" or nodes <= 2 or ranks % nodes:
        return None
    for r in regions(tuner, ranks // nodes, op):
        if (r.algorithm, r.protocol) in available and inside(nbytes, ranks, r):
            return r.algorithm, r.protocol
    return None
