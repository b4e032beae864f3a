"""``--emit torch|jax|json``: the printed programs build the mesh whose slices are the reduction groups.

The PyTorch and JAX programs are executed here against recording stand-ins for
``torch`` and ``jax`` (the frameworks are not dependencies of p2sim); where the real
framework is installed, :func:`test_jax_program_builds_the_mesh_with_real_jax` runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.mesh import mesh_slices
from p2sim.formalism.placement import Placement

from .test_cli import run

RANK = ("rank", "--system", "a100", "--axes", "4,8", "--reduce", "0", "--algo", "both", "--workers", "1")
H = (2, 16)


def _best(capsys) -> tuple[tuple[tuple[int, ...], ...], str]:
    rc, out, _ = run(capsys, *RANK, "--json", "--top", "1")
    assert rc == 0
    top = json.loads(out)["top"][0]
    return tuple(tuple(r) for r in top["matrix"]), top["program"]


def _groups(matrix, red) -> set[frozenset[int]]:
    return {frozenset(g) for g in Lowering.of(Placement.of(H, (4, 8), matrix), red).reduction_groups()}


def test_torch_program_builds_a_device_mesh_whose_slices_are_the_reduction_groups(capsys, monkeypatch):
    matrix, program = _best(capsys)
    rc, out, _ = run(capsys, *RANK, "--emit", "torch")
    assert rc == 0 and f"matrix [[{matrix[0][0]} {matrix[0][1]}]" in out and program in out
    built = {}
    torch = types.ModuleType("torch")
    torch.tensor = lambda data: np.array(data)
    device_mesh = types.ModuleType("torch.distributed.device_mesh")

    def DeviceMesh(kind, mesh, mesh_dim_names):  # noqa: N802 -- torch's name
        built.update(kind=kind, mesh=mesh, names=mesh_dim_names)

    device_mesh.DeviceMesh = DeviceMesh
    for name, mod in (("torch", torch), ("torch.distributed", types.ModuleType("torch.distributed")),
                      ("torch.distributed.device_mesh", device_mesh)):
        monkeypatch.setitem(sys.modules, name, mod)
    exec(compile(out, "<emit torch>", "exec"), {})
    assert built["kind"] == "cuda" and built["names"] == ("axis0", "axis1")
    assert built["mesh"].shape == (4, 8)
    assert {frozenset(s) for s in mesh_slices(built["mesh"], [0])} == _groups(matrix, [0])


def test_jax_program_reorders_the_devices_into_the_mesh(capsys, monkeypatch):
    matrix, _ = _best(capsys)
    rc, out, _ = run(capsys, *RANK, "--emit", "jax")
    assert rc == 0
    built = {}
    jax = types.ModuleType("jax")
    # stand-ins for jax.devices(): device r is rank r, as the printed program assumes
    jax.devices = lambda: [f"gpu{r}" for r in range(32)]
    sharding = types.ModuleType("jax.sharding")

    def Mesh(devices, names):  # noqa: N802 -- JAX's name
        built.update(devices=devices, names=names)

    sharding.Mesh = Mesh
    monkeypatch.setitem(sys.modules, "jax", jax)
    monkeypatch.setitem(sys.modules, "jax.sharding", sharding)
    exec(compile(out, "<emit jax>", "exec"), {})
    ranks = np.vectorize(lambda d: int(d[3:]))(built["devices"])
    assert ranks.shape == (4, 8) and built["names"] == ("axis0", "axis1")
    assert {frozenset(s) for s in mesh_slices(ranks, [0])} == _groups(matrix, [0])


def test_plan_json_gives_every_reduction_its_mesh_slices(capsys):
    rc, out, _ = run(capsys, "plan", "--system", "a100", "--axes", "2,16", "--reduction", "0:8GiB",
                     "--reduction", "1:64MiB x 24", "--emit", "json", "--workers", "1")
    assert rc == 0
    doc = json.loads(out)
    matrix = tuple(tuple(r) for r in doc["matrix"])
    mesh = np.array(doc["mesh"])
    assert doc["rank"] == "node * 16 + local_gpu" and mesh.shape == (2, 16)
    assert doc["device_order"] == mesh.ravel().tolist()
    for r in doc["reductions"]:
        want = {frozenset(g) for g in Lowering.of(Placement.of(H, (2, 16), matrix), r["axes"]).reduction_groups()}
        assert {frozenset(g) for g in r["groups"]} == want
        assert r["mesh_dims"] == [f"axis{a}" for a in r["axes"]]
    rc, out, _ = run(capsys, "plan", "--system", "a100", "--axes", "2,16", "--reduction", "0:8GiB",
                     "--reduction", "1:64MiB x 24", "--json", "--workers", "1")
    assert json.loads(out)["best"]["matrix"] == doc["matrix"]


@pytest.mark.parametrize("extra", [("--emit", "tensorflow"), ("--emit", "json", "--json")])
def test_bad_emit_is_one_line(capsys, extra):
    rc, out, err = run(capsys, *RANK, *extra)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and "emit" in err


def test_jax_program_builds_the_mesh_with_real_jax(capsys, tmp_path):
    pytest.importorskip("jax")
    matrix, _ = _best(capsys)
    rc, out, _ = run(capsys, *RANK, "--emit", "jax")
    script = tmp_path / "mesh.py"
    script.write_text(out + "print([[d.id for d in row] for row in mesh.devices])\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=32")
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ranks = np.array(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert {frozenset(s) for s in mesh_slices(ranks, [0])} == _groups(matrix, [0])
