"""``--emit torch|jax|json`` from the command line: the printed mesh's slices are the reduction groups.

The programs' steps are run for real in tests/test_emit_code.py (JAX on forced host
devices, PyTorch on its fake process group); here the CLI's output is checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


def _level_slices(doc, step) -> list[tuple[int, ...]]:
    names = [d["name"] for d in doc["level_mesh"]["dims"]]
    mesh = np.arange(int(np.prod(doc["level_mesh"]["shape"]))).reshape(doc["level_mesh"]["shape"])
    return mesh_slices(mesh, [names.index(n) for n in step["level_dims"]])


def _groups(matrix, red) -> set[frozenset[int]]:
    return {frozenset(g) for g in Lowering.of(Placement.of(H, (4, 8), matrix), red).reduction_groups()}


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
        # the steps run on the per-level mesh; together they span exactly the reduction groups
        spanned = set()
        for step in r["steps"]:
            assert {frozenset(g) for g in step["groups"]} <= {frozenset(x) for x in _level_slices(doc, step)}
            spanned |= {d for d in step["level_dims"]}
        assert spanned == {d["name"] for d in doc["level_mesh"]["dims"] if d["axis"] in r["mesh_dims"]}
    rc, out, _ = run(capsys, "plan", "--system", "a100", "--axes", "2,16", "--reduction", "0:8GiB",
                     "--reduction", "1:64MiB x 24", "--json", "--workers", "1")
    assert json.loads(out)["best"]["matrix"] == doc["matrix"]


@pytest.mark.parametrize("extra", [("--emit", "tensorflow"), ("--emit", "json", "--json")])
def test_bad_emit_is_one_line(capsys, extra):
    rc, out, err = run(capsys, *RANK, *extra)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and "emit" in err


@pytest.mark.slow  # runs the emitted JAX program
def test_jax_program_builds_the_mesh_with_real_jax(capsys, tmp_path):
    pytest.importorskip("jax")
    matrix, _ = _best(capsys)
    rc, out, _ = run(capsys, *RANK, "--emit", "jax")
    script = tmp_path / "mesh.py"
    script.write_text("import json\n" + out + "print(json.dumps(np.vectorize(lambda d: d.id)(mesh.devices).tolist()))\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=32")
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ranks = np.array(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert ranks.ravel().tolist() == list(range(32))  # rank r at row-major position r
    dims = [i for i, line in enumerate(out.split("MESH_AXES = ")[1].splitlines()[0].strip("()").split(", "))
            if line.strip("'").startswith("axis0_")]
    assert {frozenset(s) for s in mesh_slices(ranks, dims)} == _groups(matrix, [0])
