from __future__ import annotations

import json

import pytest

from p2sim.report.simulate import draw_topology
from p2sim.topology import find_spec, load_system, system_paths

from .test_cli import run


@pytest.mark.parametrize("name", sorted(system_paths()))
def test_every_shipped_system_draws(name, tmp_path):
    out = tmp_path / f"{name}.png"
    spec = find_spec(name)
    nodes = 2 if spec.network_components or spec.fabric is not None else 1  # one-node files: one node
    draw_topology(load_system(name, nodes=nodes), str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # nothing else left beside it


def test_every_step_names_what_bounds_it_in_text_and_json(capsys):
    argv = ("simulate", "--system", "a100", "--axes", "data=32", "--reduce", "data", "--matrix", "[[2 16]]",
            "--program", "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)")
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    lines = [ln for ln in out.splitlines() if "bound by" in ln]
    assert [ln.rsplit("bound by ", 1)[1] for ln in lines] == ["nvswitch links", "nic links shared by 16 groups",
                                                              "nvswitch links"]
    rc, out, err = run(capsys, *argv, "--json")
    steps = json.loads(out)["programs"][0]["steps"]
    assert [(s["bound"]["resource"], s["bound"]["groups"]) for s in steps] == [("nvswitch", 1), ("nic", 16),
                                                                             ("nvswitch", 1)]
