"""The structure stage (p2sim.collectives.structure): per-shape and per-local-set answers equal the plain ones."""

from __future__ import annotations

import pytest

from p2sim.collectives import Expander
from p2sim.topology import load_system

@pytest.mark.parametrize("system,nodes", [("superpod-h100", 4), ("gb200-nvl72-pod", 2), ("roce-h100", 4),
                                          ("h100", 2), ("a100", 2), ("pcie-8gpu", 2)])
def test_nvlink_only_once_per_shape_equals_the_plain_computation(system, nodes):
    """Structures.nvlink_only given the members (kept per group shape) answers as it does from the segments alone,
    for groups of every kind, asked in either order."""
    from p2sim.collectives.channels import segments

    topo = load_system(system, nodes)
    gpn = topo.gpus_per_node
    groups = []
    for local in (range(gpn), range(0, gpn, 2), range(1, gpn, 4), range(gpn // 2), (0, gpn - 1), (0,)):
        for span in (1, nodes):
            groups.append(tuple(n * gpn + g for n in range(span) for g in local))
            groups.append(tuple((nodes - 1 - n) * gpn + g for n in range(span) for g in local)[::-1])
    for order in (groups, groups[::-1]):
        ex = Expander(topo)
        for members in order:
            segs = segments(topo, members)
            plain = Expander(topo).structures.nvlink_only(segs)
            assert ex.structures.nvlink_only(segs, members) == plain
            assert ex.structures.nvlink_only(segs, members) == plain


@pytest.mark.parametrize("system,nodes", [("superpod-h100", 4), ("gb200-nvl72-pod", 2), ("roce-h100", 4),
                                          ("h100", 2), ("a100", 2), ("pcie-8gpu", 2)])
def test_mix_and_free_once_per_local_set_equal_node_by_node(system, nodes):
    """Structures.mix_and_free (each node's ring mix and one-ring-is-free answer, looked up once per local GPU set)
    equals ring_mix and free_segment asked node by node, for groups whose nodes hold the same or other GPUs."""
    from p2sim.collectives.channels import segments

    topo = load_system(system, nodes)
    gpn = topo.gpus_per_node
    groups = [tuple(n * gpn + g for n in range(nodes) for g in local)
              for local in (range(gpn), range(0, gpn, 2), range(gpn // 2), (0, gpn - 1), (1,))]
    groups.append(tuple(range(gpn)) + tuple(n * gpn + g for n in range(1, nodes) for g in range(0, gpn, 3)))
    ex = Expander(topo)
    for members in groups:
        segs = segments(topo, members)
        mix, free = ex.structures.mix_and_free(segs)
        plain = Expander(topo)
        want = plain.structures.ring_mix(segs)
        assert mix == want and list(mix) == list(want)
        assert free == {s.node: len(want[s.node]) == 1 and plain.structures.free_segment(s) for s in segs}
        assert list(free) == [s.node for s in segs]
