"""The emitted JAX and PyTorch programs run and reduce over exactly p2sim's groups.

JAX runs for real on forced host devices (a subprocess: ``XLA_FLAGS`` must be set before
JAX starts); PyTorch runs on its fake process group, which checks the calls and the
groups without moving data.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

from p2sim.formalism.level_mesh import mesh_program
from p2sim.formalism.placement import Placement
from p2sim.report.emit_code import jax_code, torch_code
from p2sim.report.mesh_choice import MeshReduction, rank_mesh_choice
from p2sim.studies.rank import RankRequest, run_rank

# (system, nodes, axes, reduce, matrix): a 2-axis and a 3-axis job whose placements give multi-step programs
CASES = {
    "2-axis": ("a100", 2, {"data": 4, "tensor": 8}, ["data"], "[[2 2] [1 8]]"),
    "3-axis": ("dgx-h100", 8, {"data": 8, "pipeline": 2, "tensor": 4}, ["data"], "[[4 2] [2 1] [1 4]]"),
}


def _multi_step_choice(case: str, form: str):
    """The rank result's choice, its one reduction replaced by the fastest multi-step program that runs."""
    system, nodes, axes, red, matrix = CASES[case]
    result = run_rank(RankRequest.build(system=system, nodes=nodes, axes=axes, reduce=red, matrix=matrix,
                                        workers=1, top=200, exhaustive=True))
    choice = rank_mesh_choice(result, form)
    pl = choice.placement
    for e in result.ranking.entries:
        steps = mesh_program(pl, result.reduce_axes, e.timing.text, result.request.settings.order, form == "torch")
        if not isinstance(steps, str) and len(steps) >= 3:
            red_ = MeshReduction(tuple(result.reduce_axes), e.algo, e.timing.text, e.seconds, steps)
            return type(choice)(**{**choice.__dict__, "reductions": (red_,)})
    raise AssertionError(f"{case}: no multi-step mesh program among {len(result.ranking.entries)}")


_JAX_RUNNER = textwrap.dedent("""
    import json, os, sys
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=@DEVICES@"
    os.environ["JAX_PLATFORMS"] = "cpu"
    ns = {}
    exec(sys.stdin.read(), ns)
    import jax, numpy as np
    from jax.sharding import PartitionSpec
    mesh, axes = ns["mesh"], ns["MESH_AXES"]
    n = len(jax.devices())
    block = 24
    x = (np.arange(n * block) * 7919 % 13).astype(np.float32)   # small integers: sums are exact
    out = np.asarray(ns["@FN@_sharded"](x)).reshape(n, block).tolist()
    members = []
    for step in @STEPS@:   # each step's groups as JAX orders them: every device gathers the ranks of its group
        def who(r, step=tuple(step)):
            return jax.lax.all_gather(r, step, axis=0, tiled=True)
        f = jax.shard_map(who, mesh=mesh, in_specs=PartitionSpec(axes), out_specs=PartitionSpec(axes))
        members.append(np.asarray(f(np.arange(n, dtype=np.int32))).reshape(n, -1).tolist())
    try:   # a block the ReduceScatters cannot split evenly: the emitted check says so
        ns["@FN@_sharded"](np.zeros(n * @BAD@, np.float32))
        error = None
    except ValueError as e:
        error = str(e)
    print(json.dumps({"x": x.reshape(n, block).tolist(), "out": out, "members": members, "error": error}))
""")


@pytest.mark.slow  # runs the emitted JAX program in a subprocess
@pytest.mark.parametrize("case", sorted(CASES))
def test_jax_program_reduces_over_p2sims_groups(case):
    pytest.importorskip("jax")
    c = _multi_step_choice(case, "jax")
    red = c.reductions[0]
    names = [[c.dims[k].name for k in s.dims] for s in red.steps]
    fn = "reduce_" + "_".join(c.names[a] for a in red.axes)
    code = jax_code(c)
    # the block length must be a multiple of the product of the ReduceScatter group sizes, not just of each
    need = math.prod(len(s.groups[0]) for s in red.steps if s.op.value == "ReduceScatter")
    sizes = {len(s.groups[0]) for s in red.steps if s.op.value == "ReduceScatter"}
    assert need > max(sizes)  # both cases scatter twice: a length divisible by each size alone can fail
    bad = max(sizes)  # a multiple of every group size, not of their product
    runner = (_JAX_RUNNER.replace("@DEVICES@", str(c.placement.devices)).replace("@FN@", fn)
              .replace("@STEPS@", json.dumps(names)).replace("@BAD@", str(bad)))
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    proc = subprocess.run([sys.executable, "-c", runner], input=code, capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["error"] and f"{fn}: the block's length {bad} is not a multiple of {need}" in got["error"]
    assert f"a multiple of {need}: the ReduceScatters split it evenly" in code  # the docstring says it too
    # every step's groups, member order included, are p2sim's
    for step, members in zip(red.steps, got["members"]):
        assert sorted(set(map(tuple, members))) == sorted(step.groups)
    # the program's result is the full reduction over each reduction group
    pl: Placement = c.placement
    from p2sim.formalism.hierarchy import Lowering
    for group in Lowering.of(pl, red.axes).reduction_groups():
        total = [sum(got["x"][r][i] for r in group) for i in range(len(got["x"][0]))]
        for r in group:
            assert got["out"][r] == total, (case, r)


@pytest.mark.slow  # runs the emitted PyTorch program
def test_torch_program_runs_on_the_fake_process_group():
    torch = pytest.importorskip("torch")
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    c = _multi_step_choice("3-axis", "torch")
    red = c.reductions[0]
    code = torch_code(c).replace('DEVICE_TYPE = "cuda"', 'DEVICE_TYPE = "cpu"')
    n = c.placement.devices
    for rank in (0, n - 1):
        dist.init_process_group("fake", rank=rank, world_size=n, store=FakeStore())
        try:
            ns: dict = {}
            exec(code, ns)
            groups = ns["REDUCE_DATA_GROUPS"]
            assert len(groups) == len(red.steps)
            for g, step in zip(groups, red.steps):
                mine = next(m for m in step.groups if rank in m)
                assert dist.get_process_group_ranks(g) == list(mine)  # members by rank, as p2sim lists them
            x = torch.zeros(24 * 8)
            with warnings.catch_warnings():  # no deprecated call (PyTorch 2.13 renamed two to *_single)
                warnings.simplefilter("error")
                assert ns["reduce_data"](x).shape == x.shape  # scatter and gather steps undo each other's sizes
            need = math.prod(len(s.groups[0]) for s in red.steps if s.op.value == "ReduceScatter")
            with pytest.raises(ValueError, match=f"the gradient's numel {need // 2} is not a multiple of {need}"):
                ns["reduce_data"](torch.zeros(need // 2))
        finally:
            dist.destroy_process_group()


def test_torch_needs_members_by_rank():
    # under the p2 order a multi-axis reduction lists members other than by rank: PyTorch's
    # groups cannot scatter in that order, JAX can
    pl = Placement.of([2, 4], [2, 4], [[1, 2], [2, 2]])
    prog = "ReduceScatter(slice=0, Inside) ; AllGather(slice=0, Inside)"
    steps = mesh_program(pl, [0, 1], prog, "p2")
    assert steps[0].groups == ((0, 1, 4, 5, 2, 3, 6, 7),) and steps[0].dims == (1, 0, 2)  # axis 0 first, as P2
    reason = mesh_program(pl, [0, 1], prog, "p2", ascending=True)
    assert isinstance(reason, str) and "PyTorch" in reason
    assert [s.dims for s in mesh_program(pl, [0, 1], prog, "aligned", ascending=True)] == [(0, 1, 2)] * 2
