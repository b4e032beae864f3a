"""Packaging: the wheel ships the built-in systems and gives a working ``p2sim``.

The slow test builds the wheel from a copy of the source tree, installs it (not
editable) into a fresh virtual environment and runs the commands a new user runs
first, from a directory outside the source tree so nothing of the checkout is
importable.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from p2sim.topology import builtin_dir, system_paths

ROOT = Path(__file__).resolve().parents[1]
# every system file of the source tree must be in the wheel
SHIPPED = {f.stem for f in (ROOT / "topologies").glob("*.toml")}


def _source_packages() -> set[str]:
    found = set()
    for top in ("p2sim", "bench_nccl"):
        for init in (ROOT / top).rglob("__init__.py"):
            found.add(".".join(init.parent.relative_to(ROOT).parts))
    return found


def test_pyproject_lists_every_package():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    # the packages are listed because p2sim.systems is mapped onto topologies/; a new
    # subpackage missing from the list would be absent from the wheel
    # (and the report's templates, data that setuptools would otherwise warn about)
    assert set(conf["packages"]) == _source_packages() | {"p2sim.systems", "p2sim.report.templates"}
    assert conf["package-dir"]["p2sim.systems"] == "topologies"


def test_builtin_systems_are_the_package_data_of_p2sim_systems():
    # the editable install maps p2sim.systems onto the source tree's topologies/
    assert builtin_dir().resolve() == (ROOT / "topologies").resolve()
    assert {"a100", "h100", "p2-16gpu", "v100"} <= SHIPPED <= set(system_paths())


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.slow  # builds the wheel and installs it in a new venv
def test_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "out"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "P2SIM_TOPOLOGIES", "VIRTUAL_ENV", "PYTHONHOME")}
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(src)], tmp_path, env)
    (wheel,) = wheels.glob("p2sim-*.whl")
    # a wheel holds no source tree: drop the copy so that nothing can fall back to it
    shutil.rmtree(src)

    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    bin_dir = target / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)], tmp_path, env)
    work = tmp_path / "work"
    work.mkdir()

    out = _run([str(bin_dir / "p2sim"), "systems"], work, env)
    assert {line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")} == SHIPPED
    out = _run([str(bin_dir / "p2sim"), "topo", "a100"], work, env)
    assert "site-packages" in out and "p2sim/systems/a100.toml" in out
    # --model's presets are package data of p2sim.workload, read from the installed wheel
    out = _run([str(bin_dir / "python"), "-c", "from p2sim.workload.model_files import load_model, preset_path; "
                "print(preset_path('llama3-8b'), load_model('llama3-8b').parameter_count)"], work, env)
    assert "site-packages" in out and "p2sim/workload/presets/llama3-8b.json 8030261248" in out

    out = _run([str(bin_dir / "p2sim"), "simulate", "--system", "a100", "--axes", "2,16", "--reduce", "1",
                "--matrix", "[[1 2] [2 8]]", "--program", "AllReduce(slice=0, Inside)", "--algo", "ring"], work, env)
    # two rings of 16 GPUs share each node's 8 GB/s NIC: 2 x 2(n-1)/n x 4 GiB / 8 GB/s, about 2.0 s
    # text output gives times in adaptive units: "2.013 s" on the program's line, after the matrix's
    value, unit = next(line for line in out.splitlines() if line.endswith("AllReduce(slice=0, Inside)")).split()[:2]
    assert unit == "s" and 1.9 < float(value) < 2.2

    # the README's main command (make demo)
    out = _run([str(bin_dir / "p2sim"), "rank", "--system", "a100", "--axes", "data=4,tensor=8", "--reduce", "data",
                "--algo", "both", "--top", "5", "--workers", "1"], work, env)
    assert "of 100 programs simulated" in out.splitlines()[0]

    # $P2SIM_TOPOLOGIES and paths still work beside the packaged systems
    out = _run([str(bin_dir / "p2sim"), "systems"], work, dict(env, P2SIM_TOPOLOGIES=str(ROOT / "tests" / "data")))
    assert "tiny3" in out and "a100" in out
    out = _run([str(bin_dir / "p2sim"), "topo", str(ROOT / "tests" / "data" / "tiny3.toml")], work, env)
    assert out.startswith("tiny3")

    out = _run([str(bin_dir / "python"), "-m", "bench_nccl", "--help"], work, env)
    assert "run" in out
