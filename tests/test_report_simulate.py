from __future__ import annotations

import pytest

from p2sim.report.simulate import draw_topology
from p2sim.topology import find_spec, load_system, system_paths


@pytest.mark.parametrize("name", sorted(system_paths()))
def test_every_shipped_system_draws(name, tmp_path):
    out = tmp_path / f"{name}.png"
    spec = find_spec(name)
    nodes = 2 if spec.network_components or spec.fabric is not None else 1  # one-node files: one node
    draw_topology(load_system(name, nodes=nodes), str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # nothing else left beside it
