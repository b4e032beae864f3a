"""``--emit megatron``: Megatron-LM's arguments and launch land its ranks on p2sim's placement.

The scripts are checked by hand for a 2-node DGX H100 job (data=2, tensor=8) in Megatron-LM's own
order and in the order p2sim ranks best, and run under ``bash`` with a stand-in ``torchrun`` and
``python`` that report, for every GPU, the rank Megatron-LM would take there: Megatron-LM's tensor
and data groups (its RankGenerator's, written out by hand) must be p2sim's groups on those devices.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from p2sim.formalism.mesh import mesh_slices, rank_mesh
from p2sim.report.emit_megatron import megatron_device_order, megatron_script
from p2sim.report.mesh_choice import plan_mesh_choice, rank_mesh_choice
from p2sim.studies.plan import PlanRequest, run_plan
from p2sim.studies.rank import RankRequest, run_rank
from p2sim.util.errors import PlacementError


def _choice(axes: dict[str, int], reduce: list[str], matrix: str | None = None, nodes: int = 2, **settings):
    result = run_rank(RankRequest.build(system="dgx-h100", nodes=nodes, axes=axes, reduce=reduce, matrix=matrix,
                                        workers=1, top=3, engine="analytic", **settings))
    return rank_mesh_choice(result, "megatron")


def _block(script: str, name: str) -> list[str]:
    """The lines of a bash array ``NAME=( .. )`` in the script."""
    lines = script.splitlines()
    start = lines.index(f"{name}=(")
    return [ln.strip() for ln in lines[start + 1:lines.index(")", start)]]


_TORCHRUN = textwrap.dedent("""\
    #!/bin/bash
    # stand-in torchrun: starts --nproc_per_node processes of this node with torchrun's RANK and LOCAL_RANK
    nopython=0; while [[ $1 == --* ]]; do
      case $1 in --no-python) nopython=1; shift;; --nproc_per_node) g=$2; shift 2;; --node_rank) n=$2; shift 2;;
        *) shift 2;; esac; done
    prog=$1; shift
    for ((l = 0; l < g; l++)); do
      if ((nopython)); then RANK=$((n * g + l)) LOCAL_RANK=$l "$prog" "$@"; else RANK=$((n * g + l)) LOCAL_RANK=$l python "$prog" "$@"; fi
    done
""")
# stand-in python: the device this process runs on (node x G + CUDA_VISIBLE_DEVICES[LOCAL_RANK]) and its RANK
_PYTHON = textwrap.dedent("""\
    #!/bin/bash
    IFS=, read -ra cvd <<< "${CUDA_VISIBLE_DEVICES:-0,1,2,3,4,5,6,7}"
    echo "$NODE_RANK $LOCAL_RANK ${cvd[$LOCAL_RANK]} $RANK $*"
""")


def _launch(script: str, nodes: int, tmp_path: Path) -> dict[int, int]:
    """Run the script on every node with the stand-ins: Megatron-LM's rank of each p2sim device (node x 8 + GPU)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("torchrun", _TORCHRUN), ("python", _PYTHON)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "megatron.sh").write_text(script)
    rank_of = {}
    for n in range(nodes):
        env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "NODE_RANK": str(n), "MASTER_ADDR": "node0"}
        out = subprocess.run(["bash", "megatron.sh", "--num-layers", "2"], cwd=tmp_path, env=env, text=True,
                             capture_output=True, check=True).stdout
        for line in out.splitlines():
            node, _, gpu, rank, args = line.split(" ", 4)
            assert "--tensor-model-parallel-size" in args and args.endswith("--num-layers 2")
            rank_of[int(node) * 8 + int(gpu)] = int(rank)
    assert sorted(rank_of.values()) == list(range(nodes * 8))
    return rank_of


def _megatron_groups_are_p2sims(choice, rank_of: dict[int, int], tp: int) -> None:
    """Megatron-LM's tensor groups (ranks tp x k .. tp x k + tp - 1) and data groups (ranks equal mod tp, the
    rest of the world: RankGenerator with tp fastest) sit on p2sim's tensor and data groups."""
    device_of = {m: d for d, m in rank_of.items()}
    world = len(device_of)
    mesh = rank_mesh(choice.placement)
    for axis, groups in (("tensor", [range(k * tp, (k + 1) * tp) for k in range(world // tp)]),
                         ("data", [range(i, world, tp) for i in range(tp)])):
        want = {frozenset(g) for g in mesh_slices(mesh, [choice.names.index(axis)])}
        assert {frozenset(device_of[m] for m in g) for g in groups} == want, axis


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_two_dgx_h100_nodes_in_megatrons_default_order_by_hand(tmp_path):
    # data across the 2 nodes, tensor over each node's 8 GPUs: Megatron-LM's tp-cp-ep-dp-pp exactly
    c = _choice({"data": 2, "tensor": 8}, ["data"], "[[2 1] [1 8]]", algo="ring", proto="Simple")
    script = megatron_script(c)
    assert _block(script, "MODEL_PARALLEL_ARGS") == ["--tensor-model-parallel-size 8", "--pipeline-model-parallel-size 1",
                                                     "--context-parallel-size 1", "--expert-model-parallel-size 1"]
    assert _block(script, "DISTRIBUTED_ARGS")[:2] == ["--nproc_per_node 8", "--nnodes 2"]
    assert ("# Megatron-LM's rank order tp-cp-ep-dp-pp (its default) lays ranks out as this placement: "
            "torchrun's ranks as they come") in script
    assert "export NCCL_ALGO=Ring  #" in script and "export NCCL_PROTO=Simple  #" in script
    assert "= 2\n" in script and "CUDA_VISIBLE_DEVICES" not in script and "RANK_OF" not in script
    assert script.splitlines()[-1] == 'torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py "${MODEL_PARALLEL_ARGS[@]}" "$@"'
    rank_of = _launch(script, 2, tmp_path)
    assert rank_of == {d: d for d in range(16)}
    _megatron_groups_are_p2sims(c, rank_of, 8)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_best_placement_off_megatrons_order_gets_the_ranks_that_realise_it(tmp_path):
    # rank's best for the data reduction alone: data over 2 GPUs of a node, tensor over 2 nodes x 4 GPUs.
    # GPU g = 4 x data + tensor % 4 on node tensor // 4; Megatron's rank m = tensor + 8 x data, so devices
    # 0-3 are its ranks 0-3, devices 4-7 its 8-11, devices 8-11 its 4-7, devices 12-15 its 12-15
    c = _choice({"data": 2, "tensor": 8}, ["data"])
    assert c.placement.matrix == ((1, 2), (2, 4))
    script = megatron_script(c)
    assert "neither of Megatron-LM's rank orders (tp-cp-ep-dp-pp, tp-cp-ep-pp-dp) lays ranks out" in script
    assert _block(script, "RANK_OF") == ["0 1 2 3 8 9 10 11", "4 5 6 7 12 13 14 15"]
    assert script.splitlines()[-1].startswith('torchrun --no-python "${DISTRIBUTED_ARGS[@]}" ./megatron_rank.sh')
    rank_of = _launch(script, 2, tmp_path)
    assert [rank_of[d] for d in range(16)] == [0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15]
    _megatron_groups_are_p2sims(c, rank_of, 8)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_a_placement_that_keeps_each_nodes_ranks_reorders_its_gpus(tmp_path):
    # tensor (the first axis) is the more significant inside a node: GPU g = 2 x tensor + data % 2, data's
    # node digit data // 2. Megatron's rank m = tensor + 4 x data keeps nodes; local rank l runs on GPU
    # 2 x (l % 4) + l // 4
    c = _choice({"tensor": 4, "data": 4}, ["data"], "[[1 4] [2 2]]")
    script = megatron_script(c)
    assert "export CUDA_VISIBLE_DEVICES=0,2,4,6,1,3,5,7" in script and "RANK_OF" not in script
    rank_of = _launch(script, 2, tmp_path)
    _megatron_groups_are_p2sims(c, rank_of, 4)


def test_expert_parallelism_pins_the_expert_tensor_size_and_splits_the_data_ranks():
    # device 16 x data + 4 x expert + tensor: Megatron-LM's rank, tensor fastest, then expert, then expert-data
    c = _choice({"data": 2, "expert": 4, "tensor": 4}, ["data"], "[[2 1] [2 2] [1 4]]", nodes=4)
    launch = megatron_device_order(c)
    assert launch.matched and launch.order == "tp-cp-ep-dp-pp"
    args = _block(megatron_script(c), "MODEL_PARALLEL_ARGS")
    assert "--expert-model-parallel-size 4" in args and "--expert-tensor-parallel-size 4" in args
    assert "= 8 (its expert layers': expert 4 x expert-data 2)" in megatron_script(c)


def test_megatrons_second_order_is_asked_for_by_its_flag():
    # pipeline inside data: tp-cp-ep-pp-dp, which --use-tp-pp-dp-mapping selects
    c = _choice({"data": 2, "pipeline": 2, "tensor": 4}, ["data"], "[[2 1] [1 2] [1 4]]")
    assert megatron_device_order(c).order == "tp-cp-ep-pp-dp"
    assert _block(megatron_script(c), "MODEL_PARALLEL_ARGS")[-1] == "--use-tp-pp-dp-mapping"


def test_the_plans_placement_with_every_reduction():
    result = run_plan(PlanRequest.build(system="dgx-h100", nodes=2, axes={"data": 2, "tensor": 8},
                                        reductions=["data:1GiB", "tensor:64MiB x 4"], workers=1, engine="analytic"))
    c = plan_mesh_choice(result, "megatron")
    script = megatron_script(c)
    assert "# reduce over data:" in script and "# reduce over tensor:" in script
    # the plan's best is the rank case's placement above: the same ranks realise it
    assert c.placement.matrix == ((1, 2), (2, 4))
    assert _block(script, "RANK_OF") == ["0 1 2 3 8 9 10 11", "4 5 6 7 12 13 14 15"]


def test_axes_megatron_has_no_dimension_for_are_refused_by_name():
    c = _choice({"data": 2, "batch": 8}, ["data"], "[[2 1] [1 8]]")
    with pytest.raises(PlacementError, match="emit megatron: axes: no Megatron-LM dimension is named batch"):
        megatron_script(c)
    c = _choice({"expert": 2, "context": 2, "tensor": 4}, ["expert"], "[[2 1] [1 2] [1 4]]")
    with pytest.raises(PlacementError, match="folds expert parallelism into context"):
        megatron_script(c)


def test_one_nccl_algo_is_exported_only_where_every_reduction_was_predicted_with_it():
    from dataclasses import replace

    result = run_plan(PlanRequest.build(system="dgx-h100", nodes=2, axes={"data": 2, "tensor": 8},
                                        reductions=["data:1GiB", "tensor:256MiB x 8"], workers=1, engine="analytic"))
    c = plan_mesh_choice(result, "megatron")
    assert "NCCL_ALGO" not in megatron_script(c) and "NCCL_PROTO" not in megatron_script(c)  # NCCL's own choice
    ring, tree = (replace(c, reductions=tuple(replace(r, algo=a) for r in c.reductions)) for a in ("ring", "tree"))
    assert "\nexport NCCL_ALGO=Ring  #" in megatron_script(ring) and "\nexport NCCL_ALGO=Tree  #" in megatron_script(tree)
    mixed = replace(c, reductions=(replace(c.reductions[0], algo="ring"), replace(c.reductions[1], algo="tree")))
    script = megatron_script(mixed)
    assert "export NCCL_ALGO" not in script and "# NCCL_ALGO: p2sim predicted the reductions with ring, tree;" in script


# --- the training settings a model's plan assumed (issue 45, item 7) ---

from p2sim.report.mesh_choice import TrainingAssumed  # noqa: E402
from p2sim.report.emit_megatron import megatron_training_args  # noqa: E402
from p2sim.studies.step_plan import run_step_plan  # noqa: E402
from p2sim.studies.step_time import StepSettings  # noqa: E402
from p2sim.workload.training import TrainingSpec  # noqa: E402

_SIZE = {"tp": 8, "cp": 1, "ep": 1, "dp": 2, "pp": 1}


def _args(layers: int = 32, pp: int = 1, extra: StepSettings = StepSettings(), **training) -> list[str]:
    args, notes = megatron_training_args(TrainingAssumed(TrainingSpec(**training), layers, extra),
                                         dict(_SIZE, pp=pp), 2)
    return args + notes


def test_plan_with_a_model_emits_its_training_settings():
    """plan --model: the script passes the sequence, batches, precision and data-parallel overlap it predicted with."""
    result = run_step_plan(PlanRequest.build(system="dgx-h100", nodes=2, axes={"data": 2, "tensor": 8},
                                             model="llama3-8b", workers=1, engine="analytic",
                                             train="seq=4096,micro_batch=2,global_batch=64,zero=1,sp=on"))
    script = megatron_script(plan_mesh_choice(result, "megatron"))
    assert _block(script, "TRAINING_ARGS") == [
        "--seq-length 4096", "--micro-batch-size 2", "--global-batch-size 64", "--bf16", "--sequence-parallel",
        "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"]
    assert script.rstrip().endswith('"${MODEL_PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "$@"')
    assert "the model and data arguments are this script's own" in script


def test_no_model_no_training_args():
    """rank and plan without a model assumed no training settings: the script gives none."""
    result = run_plan(PlanRequest.build(system="dgx-h100", nodes=2, axes={"data": 2, "tensor": 8},
                                        reductions=["data:1GiB"], workers=1, engine="analytic"))
    script = megatron_script(plan_mesh_choice(result, "megatron"))
    assert "TRAINING_ARGS" not in script and "--seq-length" not in script
    assert "the model, training and data arguments are this script's own" in script


def test_defaults_emit_only_what_is_always_assumed():
    # global batch unset: Megatron-LM's default, micro x data-parallel size (1 x 2)
    assert _args() == ["--seq-length 4096", "--micro-batch-size 1", "--global-batch-size 2", "--bf16",
                       "--overlap-grad-reduce"]


def test_each_setting_appears_exactly_when_assumed():
    base = set(_args())
    assert set(_args(sequence_parallel=True)) - base == {"--sequence-parallel"}
    assert set(_args(layers=32, pp=4, virtual_stages=8, schedule="interleaved")) - base == {
        "--num-virtual-stages-per-pipeline-rank 8"}
    assert set(_args(data_parallel="zero1")) - base == {"--use-distributed-optimizer", "--overlap-param-gather"}
    assert set(_args(data_parallel="zero3")) - base == {
        "--use-megatron-fsdp", "--data-parallel-sharding-strategy optim_grads_params", "--overlap-param-gather"}
    assert set(_args(data_parallel="fsdp")) ^ base == {"--use-torch-fsdp2", "--no-gradient-accumulation-fusion",
                                                       "--overlap-grad-reduce"}  # FSDP2 overlaps by itself
    assert set(_args(extra=StepSettings(recompute="full"))) - base == {
        "--recompute-granularity full", "--recompute-method uniform", "--recompute-num-layers 1"}
    assert set(_args(extra=StepSettings(recompute="selective"))) - base == {"--recompute-granularity selective"}
    assert set(_args(extra=StepSettings(fp8=True))) - base == {"--fp8-format hybrid"}
    assert set(_args(extra=StepSettings(tp_overlap=True))) - base == {"--tp-comm-overlap"}
    assert set(_args(grad_dtype="bf16")) - base == {"--grad-reduce-in-bf16"}
    assert set(_args(param_dtype="fp16")) ^ base == {"--fp16", "--bf16"}
    assert set(_args(seq_length=8192, micro_batch=2, global_batch=512)) ^ base == {
        "--seq-length 8192", "--micro-batch-size 2", "--global-batch-size 512",
        "--seq-length 4096", "--micro-batch-size 1", "--global-batch-size 2"}
    assert _args(layers=32, pp=4) == _args()  # 8 layers a stage: even, no split option


def test_uneven_stages_as_stage_split_lays_them_out():
    """Llama 3 405B's 126 layers on 16 stages: 7, 8 x 14, 7 -- the embedding and the loss counted as a layer."""
    base = set(_args())
    assert set(_args(layers=126, pp=16)) - base == {"--account-for-embedding-in-pipeline-split",
                                                    "--account-for-loss-in-pipeline-split"}
    # DeepSeek-V3's 61 layers on 16 stages: 3, 4 x 14, 2 (p2sim.workload.schedule.stage_split)
    assert set(_args(layers=61, pp=16)) - base == {"--decoder-first-pipeline-num-layers 3",
                                                   "--decoder-last-pipeline-num-layers 2"}
    # with virtual stages Megatron-LM would spread first/last over a stage's chunks: the layout sets each chunk,
    # and the virtual stages by their number (Megatron-LM refuses --num-virtual-stages-per-pipeline-rank beside it)
    assert set(_args(layers=61, pp=4, virtual_stages=4, schedule="interleaved")) - base == {
        '--pipeline-model-parallel-layout "Et*3|(t*4|)*14t*2,L"'}
    assert not any(a.startswith("#") for a in _args(layers=61, pp=4, virtual_stages=4, schedule="interleaved"))


def _megatron_layout(text: str) -> list[int]:
    """Megatron-LM's parse of --pipeline-model-parallel-layout (pipeline_parallel_layer_layout.py,
    parse_str_to_list), written again: the decoder layers of each chunk; E only first, L only last."""
    import re
    text = text.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda x: x.group(1) * int(x.group(2)), text)
    chunks = text.split("|")
    assert set(text) <= set("EtL|") and chunks[0].startswith("E") and chunks[-1].endswith("L")
    assert text.count("E") == 1 and text.count("L") == 1
    return [c.count("t") for c in chunks]


@pytest.mark.parametrize("layers, pp, v", [(61, 4, 4), (61, 16, 2), (126, 8, 3), (30, 4, 2), (7, 2, 3)])
def test_uneven_virtual_stages_layout_parses_back_to_p2sim_split(layers, pp, v):
    from p2sim.workload.schedule import chunk_layers
    args = _args(layers=layers, pp=pp, virtual_stages=v, schedule="interleaved")
    split = chunk_layers(layers, pp, v)
    layout = [a for a in args if a.startswith("--pipeline-model-parallel-layout")]
    if len(set(split)) == 1 or any("pipeline-split" in a for a in args):
        assert not layout and f"--num-virtual-stages-per-pipeline-rank {v}" in args
        return
    assert len(layout) == 1 and not any(a.startswith("--num-virtual-stages") for a in args)
    assert _megatron_layout(layout[0].split(" ", 1)[1].strip('"')) == list(split)


def test_llama3_405b_plan_on_16_stages_emits_the_uneven_split():
    result = run_step_plan(PlanRequest.build(system="dgx-h100", nodes=2, axes={"pipeline": 16}, model="llama3-405b",
                                             train="global_batch=16", workers=1, engine="analytic"))
    args = _block(megatron_script(plan_mesh_choice(result, "megatron")), "TRAINING_ARGS")
    assert "--account-for-embedding-in-pipeline-split" in args and "--account-for-loss-in-pipeline-split" in args
    assert "--seq-length 8192" in args  # the preset's published sequence length


def test_vp_8_emits_the_virtual_stages():
    result = run_step_plan(PlanRequest.build(system="dgx-h100", nodes=2, axes={"pipeline": 2, "tensor": 8},
                                             model="llama3-8b", train="vp=8,global_batch=16", workers=1,
                                             engine="analytic"))
    args = _block(megatron_script(plan_mesh_choice(result, "megatron")), "TRAINING_ARGS")
    assert "--num-virtual-stages-per-pipeline-rank 8" in args
    assert not any("pipeline-split" in a or "decoder-" in a for a in args)  # 32 layers on 16 chunks: even


def test_plan_train_with_step_settings_emits_them():
    """plan --model --train takes p2sim step's recompute, dtype=fp8 and tp_overlap, and --emit megatron passes
    them on (they were refused before: emit could never give them from a plan)."""
    result = run_step_plan(PlanRequest.build(system="dgx-h100", nodes=2, axes={"data": 2, "tensor": 8},
                                             model="llama3-8b", workers=1, engine="analytic",
                                             train="seq=4096,global_batch=64,sp=on,recompute=selective,dtype=fp8,"
                                                   "tp_overlap=on"))
    args = _block(megatron_script(plan_mesh_choice(result, "megatron")), "TRAINING_ARGS")
    assert {"--fp8-format hybrid", "--recompute-granularity selective", "--tp-comm-overlap", "--bf16",
            "--sequence-parallel"} <= set(args)
    assert result.request.demand.workload.extra == StepSettings(fp8=True, recompute="selective", tp_overlap=True)
    plain = run_step_plan(PlanRequest.build(system="dgx-h100", nodes=2, axes={"data": 2, "tensor": 8},
                                            model="llama3-8b", workers=1, engine="analytic",
                                            train={"seq": 4096, "global_batch": 64, "recompute": "full"}))
    assert "--recompute-granularity full" in _block(megatron_script(plan_mesh_choice(plain, "megatron")),
                                                   "TRAINING_ARGS")


def test_moe_plan_emits_its_dispatcher_and_fusions():
    """A MoE model's step was timed with the grouped GEMM, the fused router and permutation and a token
    dispatcher (Megatron-LM's default is allgather): the script names each; a dense model's names none."""
    def args(train: str, model: str = "qwen3-30b-a3b") -> list[str]:
        result = run_step_plan(PlanRequest.build(system="dgx-h100", nodes=1, axes={"expert": 8}, model=model,
                                                 workers=1, engine="analytic", train=train))
        return _block(megatron_script(plan_mesh_choice(result, "megatron")), "TRAINING_ARGS")
    alltoall = args("seq=4096,global_batch=64")
    assert {"--moe-grouped-gemm", "--moe-router-fusion", "--moe-permute-fusion",
            "--moe-token-dispatcher-type alltoall"} <= set(alltoall)
    flex = args("seq=4096,global_batch=64,dispatcher=deepep")
    assert {"--moe-token-dispatcher-type flex", "--moe-flex-dispatcher-backend deepep"} <= set(flex)
    assert "--moe-token-dispatcher-type alltoall" not in flex
    assert not any(a.startswith("--moe") for a in _args())


def test_activation_offloading_is_passed_on_with_its_layers():
    assert set(_args(extra=StepSettings(offload=40))) - set(_args()) == {"--cpu-offloading",
                                                                          "--cpu-offloading-num-layers 40"}


def test_plan_takes_offload_as_a_number_of_layers():
    """plan --model --axes answers with a job to run: offload=auto (p2sim step's search for the fewest layers) is
    refused there, a number passes on to the script."""
    from p2sim.util.errors import InputError
    with pytest.raises(InputError, match="offload: auto is p2sim step's"):
        PlanRequest.build(system="gb200-nvl72", nodes=1, axes={"data": 72}, model="llama3-70b", workers=1,
                          engine="analytic", train="seq=8192,micro_batch=2,global_batch=288,zero=fsdp,offload=auto")
    result = run_step_plan(PlanRequest.build(system="gb200-nvl72", nodes=1, axes={"data": 72}, model="llama3-70b",
                                             workers=1, engine="analytic",
                                             train="seq=8192,micro_batch=2,global_batch=288,zero=fsdp,offload=40"))
    assert "--cpu-offloading-num-layers 40" in _block(megatron_script(plan_mesh_choice(result, "megatron")),
                                                      "TRAINING_ARGS")


def test_selective_modules_are_passed_on_by_name():
    assert set(_args(extra=StepSettings(recompute="layernorm+moe_act"))) - set(_args()) == {
        "--recompute-granularity selective", "--recompute-modules layernorm moe_act"}
    assert set(_args(extra=StepSettings(recompute="selective"))) - set(_args()) == {"--recompute-granularity selective"}
