from __future__ import annotations

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2sim.collectives import Expander
from p2sim.collectives.hops.ringsearch import best_rings, ring_throughput
from p2sim.topology import Topology, load_system
from p2sim.topology.spec import parse_spec
from p2sim.topology.toml_out import spec_to_toml


def _renumbered(perm: list[int]) -> Topology:
    """The DGX-1 with its GPUs renamed: GPU i becomes GPU perm[i]."""
    spec = load_system("dgx1-v100", 1).spec
    text = spec_to_toml(spec)
    for i in range(8):
        text = text.replace(f'"gpu{i}"', f'"tmp{perm[i]}"')
    text = text.replace('"tmp', '"gpu')
    return Topology(parse_spec(tomllib.loads(text), "renumbered.toml"), 1)


def test_nvlink_ring_of_p2s_v100_and_the_cube_mesh_uses_all_links():
    v = load_system("v100", 1)
    assert [r for r, _ in best_rings(v, range(8))] == [(0, 1, 2, 3, 4, 5, 6, 7)]
    d = load_system("dgx1-v100", 1)
    c = Expander(d).collective("ring", "Simple", "AllReduce", tuple(range(8)), 2**30)
    # six NVLink 2 links per GPU at 20 GB/s: 120 GB/s each way, all of it used by the ring mix
    assert c.algbw(d.capacity) * c.bus_factor == pytest.approx(120e9)
    # one ring alone is limited by its single links (2 x 20 GB/s: both directions)
    assert max(ring_throughput(d, r) for r, _ in best_rings(d, range(8))) <= 80e9 + 1


@settings(max_examples=4, deadline=None)
@given(st.permutations(list(range(8))))
def test_renumbering_a_cube_mesh_changes_nothing(perm):
    base = load_system("dgx1-v100", 1)
    other = _renumbered(perm)
    c0 = Expander(base).collective("ring", "Simple", "AllReduce", tuple(range(8)), 2**30)
    c1 = Expander(other).collective("ring", "Simple", "AllReduce", tuple(range(8)), 2**30)
    assert c1.algbw(other.capacity) == pytest.approx(c0.algbw(base.capacity), rel=1e-9)


def test_rings_start_at_their_smallest_gpu_and_shares_sum_to_one():
    d = load_system("dgx1-v100", 1)
    rings = best_rings(d, (2, 3, 6, 7))
    assert all(r[0] == 2 for r, _ in rings)
    assert sum(w for _, w in rings) == pytest.approx(1.0)
