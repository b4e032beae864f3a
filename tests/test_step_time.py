"""``p2sim step``: one configuration's step by part, its throughput and memory; the refusals; the CLI."""

import json
import subprocess
import sys

import pytest

from p2sim import api
from p2sim.studies.step_time import job_hierarchy, run_step, step_settings
from p2sim.util.errors import InputError
from p2sim.workload.compute import model_flops


def test_a_step_adds_up_and_counts_its_throughput():
    r = run_step(model="llama3-8b", system="dgx-h100", nodes=1, axes={"data": 8},
                 train="seq=8192,micro_batch=1,global_batch=64,dtype=fp8,zero=1,grad_dtype=bf16")
    parts = r.compute_seconds + r.bubble_seconds + sum(r.exposed_comm_seconds.values()) + r.optimizer_seconds
    assert r.step_seconds == pytest.approx(parts)
    assert r.tokens_per_s_per_gpu == pytest.approx(64 * 8192 / r.step_seconds / 8)
    from p2sim.workload import load_model
    assert r.model_tflops_per_gpu == pytest.approx(model_flops(load_model("llama3-8b"), 8192, 64) / r.step_seconds / 8e12)
    assert r.bubble_seconds == 0.0 and 0.1 < r.mfu < 0.9
    assert r.memory_gib_per_gpu < 80


def test_the_pipeline_adds_a_bubble_and_interleaving_shrinks_it():
    common = dict(model="llama3-8b", system="dgx-h100", nodes=2, train="seq=4096,micro_batch=1,global_batch=32,zero=1,sp=on")
    one = run_step(axes={"tensor": 2, "pipeline": 4, "data": 2}, **common)
    two = run_step(axes={"tensor": 2, "pipeline": 4, "data": 2}, **{**common, "train": common["train"] + ",vp=2"})
    assert one.bubble_seconds > 0 and two.bubble_seconds < one.bubble_seconds
    assert one.exposed_comm_seconds["tensor"] > 0


def test_uneven_stages_of_the_published_runs_are_accepted():
    r = run_step(model="deepseek-v3", system="dgx-b200", nodes=32, axes={"pipeline": 16, "expert": 8, "data": 2},
                 train="seq=4096,micro_batch=1,global_batch=2048,dtype=fp8,zero=1")
    assert r.exposed_comm_seconds["expert"] > 0 and r.step_seconds > 0


def test_settings_and_hierarchies():
    assert step_settings("recompute=full,tp_overlap=on")[1].recompute == "full"
    with pytest.raises(InputError, match="train: recompute: 'some' should be none, selective, full or modules joined by [+]"):
        step_settings("recompute=some")
    assert job_hierarchy((4, 18, 4), 256, 72) == ((4, 16, 4), 64)
    with pytest.raises(InputError, match="axes: .* = 4 GPUs, but the job has 8"):
        run_step(model="llama3-8b", system="dgx-h100", nodes=1, axes={"data": 4})


def test_too_big_a_configuration_is_refused():
    with pytest.raises(InputError, match="llama3-70b on 8 H100-SXM5: needs .* GiB per GPU"):
        run_step(model="llama3-70b", system="dgx-h100", nodes=1, axes={"data": 8}, train="seq=8192,global_batch=8")


def test_the_command_prints_the_json_keys():
    out = subprocess.run([sys.executable, "-m", "p2sim", "step", "--model", "llama3-8b", "--system", "gb200-nvl72",
                          "--gpus", "8", "--axes", "data=8", "--train", "seq=8192,micro_batch=2,global_batch=128,dtype=fp8,zero=1",
                          "--json"], capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    for key in ("step_seconds", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu", "memory_gib_per_gpu",
                "compute_seconds", "bubble_seconds", "exposed_comm_seconds"):
        assert key in doc
    bad = subprocess.run([sys.executable, "-m", "p2sim", "step", "--model", "llama3-8b", "--system", "dgx-h100",
                          "--nodes", "1", "--axes", "data=8", "--train", "recompute=maybe"], capture_output=True, text=True)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "recompute" in bad.stderr


def test_the_api_answers_as_the_command():
    r = api.step(model="llama3-8b", system="dgx-h100", nodes=1, axes="data=8", train="seq=4096,global_batch=16,zero=1")
    assert r.to_json()["gpus"] == 8


def test_default_placement_is_megatron_rank_order_where_axes_share_a_level():
    # tensor 4 beside data or context 2 on 8-GPU nodes: tensor must take consecutive GPUs (before, the rows went
    # in AXES order, tensor outermost in the level, and its groups strode over the node)
    from p2sim.formalism.mesh import megatron_match
    from p2sim.formalism.placement import Placement
    from p2sim.studies.step_time import default_placement_rows

    for sizes in ({"tensor": 4, "context": 2, "pipeline": 8, "data": 2, "expert": 1},
                  {"tensor": 2, "context": 1, "pipeline": 4, "data": 8, "expert": 1},
                  {"tensor": 4, "context": 1, "pipeline": 2, "data": 8, "expert": 1}):
        hierarchy = (16, 8) if sizes["context"] * sizes["tensor"] * sizes["pipeline"] * sizes["data"] == 128 else (8, 8)
        names, matrix, _ = default_placement_rows(hierarchy, sizes)
        placement = Placement.of(hierarchy, [sizes[a] for a in names], matrix)
        assert megatron_match(placement, names).startswith("rank order tp-cp-ep-dp-pp"), (sizes, matrix)


def test_an_op_without_gradient_costs_nothing_in_the_backward():
    """The MoE dispatcher's bookkeeping (token counts, splits) runs forward only: no backward kernel, no
    backward dispatch on the host."""
    from p2sim.studies.step_time import _layer_seconds
    from p2sim.workload.compute import Op
    from p2sim.workload.op_time import EfficiencyParams, OpTimer
    g = OpTimer(bf16_tflops=1000.0, fp8_tflops=2000.0, hbm_tb_per_s=1.0,
                params=EfficiencyParams(0.8, 0.5, 0.6, 0.5, 0.0, host=1e-5))
    norm = Op("norm", "memory", 0.0, 1e6)                                      # 2 us forward, 4 us backward
    books = Op("dispatch metadata", "memory", 0.0, 0.0, kernels=14, backward=False)
    fwd, bwd, _, _ = _layer_seconds(g, (norm, books), False, "none", None)
    # host-bound: forward 15 kernels x 10 us; backward the norm's gradient only, 2 x 1 kernel x 10 us
    assert fwd == pytest.approx(15 * 1e-5)
    assert bwd == pytest.approx(2e-5)


def test_a_flex_dispatcher_makes_a_moe_step_faster_and_says_so():
    """HybridEP's fused permutation: the same Qwen3 30B step, less compute; the answer names the dispatcher."""
    from p2sim.report.step_time import step_text
    kw = dict(model="qwen3-30b-a3b", system="dgx-b200", gpus=8, axes={"expert": 8},
              train="seq=4096,micro_batch=1,global_batch=64,zero=1")
    alltoall = run_step(**kw)
    flex = run_step(**dict(kw, train=kw["train"] + ",dispatcher=hybridep"))
    assert flex.compute_seconds < alltoall.compute_seconds
    assert flex.training["dispatcher"] == "hybridep" and alltoall.training["dispatcher"] == "alltoall"
    assert ", dispatcher hybridep" in step_text(flex).splitlines()[1]
    assert "dispatcher" not in step_text(alltoall).splitlines()[1]


def test_the_text_names_an_axis_contention_where_its_exposed_time_exceeds_its_time_alone():
    """With zero=1 the data reduction runs beside the last micro-batch's tensor collectives on the same NVLink:
    the tensor axis is slowed, and the text says by how much beside its time alone."""
    import p2sim
    from p2sim.report.step_time import step_text
    r = p2sim.step(model="llama3-8b", system="dgx-h100", nodes=2, axes="tensor=4,pipeline=2,data=2",
                   train="global_batch=32,zero=1")
    slowed = [a for a, s in r.contention_seconds.items() if s > 0]
    assert slowed
    line = step_text(r).splitlines()[-1]
    for a in slowed:
        assert f"{a} " in line and " contention (" in line


def test_fsdp_says_what_contention_added_without_adding_it_twice():
    """Under FSDP every micro-batch's collectives run beside the gathers and scatters: the stage times hold the
    contention; contention_seconds says how much it added to the exposed time alone, and is not added again."""
    from p2sim.studies.step_time import finish_step, prepare_step, step_job
    from p2sim.workload import load_model
    from p2sim.workload.train_text import step_settings
    from p2sim.studies.step_workload import training_for
    model = load_model("llama3-8b")
    text, extra = step_settings("seq=8192,global_batch=64,zero=fsdp")
    training, _ = training_for("llama3-8b", text)
    job = step_job(model, "dgx-h100", None, None)
    prep = prepare_step(job, {"tensor": 4, "context": 1, "pipeline": 2, "data": 2, "expert": 1}, training, extra)
    together, alone = finish_step(prep), finish_step(prep, contention_limit=0.0)
    assert together.contended and together.contention_seconds["tensor"] > 0
    assert together.exposed_comm_seconds["tensor"] == pytest.approx(
        alone.exposed_comm_seconds["tensor"] + together.contention_seconds["tensor"], rel=1e-9)


# ---- activation offloading (--train offload=N|auto): Megatron-Core's --cpu-offloading ----------------------------

_OFFLOAD_JOB = dict(model="llama3-70b", gpus=64, axes={"data": 64})
_OFFLOAD_TRAIN = "seq=8192,micro_batch=2,global_batch=256,dtype=fp8,zero=fsdp,grad_dtype=bf16"


def test_offload_auto_is_the_fewest_layers_that_fit():
    """Llama 3 70B on 64 GB200 (FSDP, micro-batch 2, as Megatron-Bridge's recipe): without recompute the activations
    do not fit; offload=auto finds the fewest layers whose activations in host memory make it fit (one fewer does
    not), and their copies over NVLink-C2C hide under the compute: the step is the no-recompute compute."""
    r = run_step(system="gb200-nvl72", train=f"{_OFFLOAD_TRAIN},offload=auto", **_OFFLOAD_JOB)
    n = r.training["offload"]
    assert 0 < n < 80 and r.offload_seconds == 0.0 and r.memory_gib_per_gpu <= r.memory_capacity_gib
    with pytest.raises(InputError, match="GiB per GPU"):
        run_step(system="gb200-nvl72", train=f"{_OFFLOAD_TRAIN},offload={n - 1}", **_OFFLOAD_JOB)
    full = run_step(system="gb200-nvl72", train=f"{_OFFLOAD_TRAIN},recompute=full", **_OFFLOAD_JOB)
    assert r.step_seconds < full.step_seconds  # no forward recomputed


def test_offload_over_pcie_waits_for_what_outlasts_the_compute():
    """On DGX H100 a GPU's copies share a 48 GB/s host link two ways (24 GB/s each): 79 layers' activations take
    longer than the forward and the backward they hide under, and the step's compute grows by exactly that wait."""
    job = dict(model="llama3-70b", system="dgx-h100", nodes=8, axes={"data": 64})
    train = "seq=8192,micro_batch=1,global_batch=128,dtype=fp8,zero=fsdp,grad_dtype=bf16"
    off = run_step(train=f"{train},offload=79", **job)
    assert off.offload_seconds > 0
    # the same step without offloading (it does not fit; its compute is what the layers take alone)
    from p2sim.studies.step_time import prepare_step, step_job
    from p2sim.workload.train_text import step_settings
    text, extra = step_settings(f"{train},offload=79")
    from p2sim.studies.step_workload import training_for
    training, _ = training_for("llama3-70b", text)
    sj = step_job("llama3-70b", "dgx-h100", 8, None)
    sizes = {"data": 64}
    with_, without = (prepare_step(sj, sizes, training, extra),
                      prepare_step(sj, sizes, training, type(extra)(fp8=True)))
    assert with_.stage_compute[0] - without.stage_compute[0] == pytest.approx(with_.offload_exposed / 2)  # 2 mbs


@pytest.mark.parametrize("axes,train,says", [
    ({"pipeline": 2, "data": 32}, "offload=4", "no support for Pipeline parallelism"),
    ({"data": 64}, "offload=4,recompute=selective", "does not work when activation recomputation"),
    ({"data": 64}, "offload=80", "fewer than the model's 80 layers"),
    ({"data": 64}, "offload=some", "should be a number of layers, auto or off")])
def test_offload_is_refused_where_megatron_core_refuses_it(axes, train, says):
    with pytest.raises(InputError, match=says):
        run_step(model="llama3-70b", system="dgx-h100", nodes=8, axes=axes, train=f"seq=8192,global_batch=128,{train}")


NO_HOST = """
name = "no-host"
levels = [{ name = "node", cardinality = "nodes" }, { name = "gpu", cardinality = 8 }]
[classes]
nvswitch = { bandwidth = 450.0 }
[gpu]
arch = "hopper"
model = "H100-SXM5"
memory_gib = 80
[node]
gpus = "gpu[0-7]"
components = [{ name = "nvswitch", kind = "nvswitch" }]
links = [{ class = "nvswitch", pairs = [["gpu[0-7]", "nvswitch"]] }]
"""


def test_offload_needs_a_way_to_host_memory(tmp_path):
    # a system file that gives the GPUs no CPU or memory to reach: nowhere to offload to
    f = tmp_path / "no-host.toml"
    f.write_text(NO_HOST)
    with pytest.raises(InputError, match="no path from a GPU to host memory"):
        run_step(model="llama3-8b", system=str(f), nodes=1, axes={"data": 8}, train="seq=2048,global_batch=16,offload=2")


def test_plan_with_axes_names_its_offload():
    from p2sim.report.step_plan import training_text
    from p2sim.studies.plan import PlanRequest
    req = PlanRequest.build(system="dgx-h100", nodes=1, axes={"data": 8}, model="llama3-8b", workers=1,
                            engine="analytic", train="seq=8192,zero=3,offload=20")
    work = req.demand.workload
    assert ", 20 layers offloaded" in training_text(work) and work.to_json()["training"]["offload"] == 20
