"""``--emit megatron``: the chosen placement as Megatron-LM's arguments and launch, a shell script.

Megatron-LM takes a placement as its parallel sizes and a rank order: ``pretrain_gpt.py``'s
``--tensor-model-parallel-size``, ``--pipeline-model-parallel-size``, ``--context-parallel-size``,
``--expert-model-parallel-size`` and ``--expert-tensor-parallel-size`` (fields of
``ModelParallelConfig``, megatron/core/model_parallel_config.py, which megatron/training/arguments.py
turns into options by ``ArgumentGroupFactory``: ``_`` becomes ``-``); the data-parallel size is what
is left of the world (``world / (tp x cp x pp)``, initialize_model_parallel).  Its ranks are laid out
by ``RankGenerator`` in the order ``tp-cp-ep-dp-pp``, or ``tp-cp-ep-pp-dp`` with
``--use-tp-pp-dp-mapping`` (megatron/training/initialize.py; :func:`p2sim.formalism.mesh.megatron_ranks`).

Where an order lays ranks out as p2sim's placement, the script launches ``torchrun`` with ranks as
they come (``RANK = node_rank x nproc_per_node + LOCAL_RANK``).  Where neither does, Megatron-LM
keeps its default order and the script moves its ranks onto p2sim's devices instead: Megatron takes
its rank from ``RANK`` and its GPU from ``LOCAL_RANK`` (``torch.cuda.set_device(args.local_rank)``,
megatron/training/initialize.py), so

* when every node keeps its own ranks, only their GPUs within the node move: ``CUDA_VISIBLE_DEVICES``
  lists, for local rank ``l``, the GPU Megatron's rank ``node x G + l`` must run on (CUDA numbers the
  visible devices in the order listed);
* otherwise ``torchrun --no-python`` starts a wrapper on every GPU that sets ``RANK`` to Megatron's
  rank for that device before it starts ``pretrain_gpt.py``.

The NCCL algorithm and protocol p2sim predicted with, where not NCCL's own choice, become ``export``
lines (``NCCL_ALGO``, ``NCCL_PROTO``: NCCL's environment variables, docs.nvidia.com/deeplearning/nccl
"Environment Variables"); they apply to every collective of the job, which the script says.

A model's plan (``plan --model``) was predicted with training settings, and the script passes each on as
Megatron-LM's option (``TRAINING_ARGS``; names as megatron/training/arguments.py defines them, read in
Megatron-LM's source and its example launch scripts): sequence length, micro and global batch, the
precision (``--bf16``/``--fp16``, ``--grad-reduce-in-bf16``, ``--fp8-format hybrid``), sequence
parallelism, virtual stages (``--num-virtual-stages-per-pipeline-rank``), the data-parallel mode with the
overlap the step assumed (``--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather``;
Megatron-FSDP's ``--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params`` for ZeRO-3;
``--use-torch-fsdp2``), recompute, activation offloading, ``--tp-comm-overlap``, a MoE model's grouped GEMM, fusions and token
dispatcher (``--moe-token-dispatcher-type``), and the pipeline stages' layers where they are
uneven, as :func:`p2sim.workload.schedule.stage_split` lays them out (with virtual stages as
``--pipeline-model-parallel-layout``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..formalism.mesh import MEGATRON_ORDERS, megatron_axes, megatron_ranks, rank_mesh
from ..formalism.naming import axes_text
from ..formalism.placement import format_matrix
from ..util.algorithms import ALGORITHMS, algorithm
from ..util.errors import PlacementError
from ..studies.config_task import ALLREDUCE_TEXT
from ..util.units import format_seconds
from ..workload.schedule import chunk_layers
from .mesh_choice import MeshChoice, TrainingAssumed

__all__ = ["megatron_script", "megatron_device_order", "megatron_training_args", "MegatronLaunch"]

# Megatron-LM's parallel sizes, by its dimension: pretrain_gpt.py's option (ModelParallelConfig's field
# tensor_model_parallel_size etc., megatron/core/model_parallel_config.py, made options in
# megatron/training/arguments.py by ArgumentGroupFactory)
_SIZE_OPTIONS = (("tp", "--tensor-model-parallel-size"), ("pp", "--pipeline-model-parallel-size"),
                 ("cp", "--context-parallel-size"), ("ep", "--expert-model-parallel-size"))
# the expert layers' own tensor-parallel size (ModelParallelConfig.expert_tensor_parallel_size: None means
# the tensor size, megatron/training/arguments.py); p2sim's expert groups assume that, so it is pinned
_EXPERT_TP_OPTION = "--expert-tensor-parallel-size"
# DistributedInitConfig.use_tp_pp_dp_mapping (megatron/training/config/common_config.py): order tp-cp-ep-pp-dp
_SECOND_ORDER_OPTION = "--use-tp-pp-dp-mapping"
# NCCL_ALGO's name for p2sim's collnet setting: either CollNet algorithm (NCCL's docs, NCCL_ALGO)
_COLLNET_NCCL = "CollNet"
# the data-parallel mode as Megatron-LM runs it with the overlap p2sim's step assumes (p2sim.studies.step_time:
# the gradient reduction under the last backward, the parameter gathers under the first forward).  Options of
# megatron/training/arguments.py (_add_distributed_args: --use-distributed-optimizer, --overlap-grad-reduce,
# --overlap-param-gather, --use-torch-fsdp2, --use-megatron-fsdp, --data-parallel-sharding-strategy);
# Megatron-LM's distributed optimizer shards the optimizer states and reduce-scatters the gradients (ZeRO-1/2);
# its FSDP2 path needs --no-gradient-accumulation-fusion (Megatron-LM's FSDP documentation, "FSDP2")
_DATA_PARALLEL = {
    "ddp": ("--overlap-grad-reduce",),
    "zero1": ("--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"),
    "zero2": ("--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"),
    "zero3": ("--use-megatron-fsdp", "--data-parallel-sharding-strategy optim_grads_params", "--overlap-grad-reduce",
              "--overlap-param-gather"),
    "fsdp": ("--use-torch-fsdp2", "--no-gradient-accumulation-fusion"),
}
# recompute as p2sim's step times it (p2sim.workload.recompute: selective recomputes attention, its modules what
# they name, full the whole layer): --recompute-granularity, --recompute-method, --recompute-num-layers,
# --recompute-modules (arguments.py, _add_training_args)
_RECOMPUTE = {"none": (), "selective": ("--recompute-granularity selective",),
              "full": ("--recompute-granularity full", "--recompute-method uniform", "--recompute-num-layers 1")}
# a MoE model's layer as p2sim's step times it (p2sim.workload.compute: the experts as one grouped GEMM, the
# router's top-k and the permutation fused) and its token dispatcher: TransformerConfig's moe_grouped_gemm,
# moe_router_fusion, moe_permute_fusion, moe_token_dispatcher_type (Megatron-LM's default is allgather) and
# moe_flex_dispatcher_backend (megatron/core/transformer/transformer_config.py, options by ArgumentGroupFactory)
_MOE = ("--moe-grouped-gemm", "--moe-router-fusion", "--moe-permute-fusion")
_DISPATCHER = {"alltoall": ("--moe-token-dispatcher-type alltoall",),
               "deepep": ("--moe-token-dispatcher-type flex", "--moe-flex-dispatcher-backend deepep"),
               "hybridep": ("--moe-token-dispatcher-type flex", "--moe-flex-dispatcher-backend hybridep")}
# the weights' type: --bf16 / --fp16 (arguments.py, _add_mixed_precision_args); fp32 is Megatron-LM's default
_DTYPE = {"bf16": ("--bf16",), "fp16": ("--fp16",), "fp32": ()}


@dataclass(frozen=True)
class MegatronLaunch:
    """How Megatron-LM's ranks land on p2sim's devices: the order it runs and the device of each of its ranks."""

    order: str  # the rank order Megatron-LM runs
    matched: bool  # it lays ranks out as the placement: no device order needed
    device: tuple[int, ...]  # device[m]: p2sim's device (node x G + GPU) of Megatron-LM's rank m
    why: str  # why no order matches ("" when one does)


def megatron_device_order(c: MeshChoice) -> MegatronLaunch:
    """The Megatron-LM order to run and the p2sim device of each of its ranks.

    A :class:`PlacementError` names the axis that is no Megatron-LM dimension, or says why Megatron-LM
    lays out no ranks for these axes (separate context and expert axes).
    """
    megatron_axes(c.names, c.placement.axes, "emit megatron: axes")  # refuses an axis that is none, by name
    have = rank_mesh(c.placement)
    tables = {o: megatron_ranks(c.placement.axes, c.names, o) for o in MEGATRON_ORDERS}
    for order, table in tables.items():
        if not isinstance(table, str) and np.array_equal(table, have):
            return MegatronLaunch(order, True, tuple(range(c.placement.devices)), "")
    default = tables[MEGATRON_ORDERS[0]]
    if isinstance(default, str):
        raise PlacementError(f"emit megatron: axes {axes_text(c.placement.axes, c.names)}: {default}")
    device = np.empty(c.placement.devices, dtype=np.int64)
    device[default.ravel()] = have.ravel()  # Megatron's rank at each coordinate runs on p2sim's device there
    why = f"neither of Megatron-LM's rank orders ({', '.join(MEGATRON_ORDERS)}) lays ranks out as this placement"
    return MegatronLaunch(MEGATRON_ORDERS[0], False, tuple(int(d) for d in device), why)


def _sizes(c: MeshChoice) -> dict[str, int]:
    dims = megatron_axes(c.names, c.placement.axes)
    return {m: (int(c.placement.axes[dims[m]]) if m in dims else 1) for m in ("tp", "cp", "ep", "dp", "pp")}


def _nccl_lines(c: MeshChoice) -> list[str]:
    """``export`` lines for the algorithm and protocol the prediction assumed, where not NCCL's choice."""
    algos = sorted({r.algo for r in c.reductions if r.algo != "auto"})
    lines = []
    if len(algos) == 1 and len({r.algo for r in c.reductions}) == 1:
        name = algos[0]
        nccl = algorithm(name).nccl if name in ALGORITHMS else _COLLNET_NCCL
        lines.append(f"export NCCL_ALGO={nccl}  # p2sim predicted with {name}: NCCL runs it for every collective of "
                     "the job")
    elif algos:
        lines.append(f"# NCCL_ALGO: p2sim predicted the reductions with {', '.join(sorted({r.algo for r in c.reductions}))}; "
                     "one NCCL_ALGO cannot set each (--emit nccl-tuner sets them per communicator)")
    if c.proto != "auto":
        lines.append(f"export NCCL_PROTO={c.proto}  # p2sim predicted with {c.proto}: NCCL uses it for every "
                     "collective of the job")
    return lines


def _stage_args(t: TrainingAssumed, pp: int) -> list[str]:
    """Megatron-LM's options for the pipeline stages' layers where uneven.

    p2sim's split (:func:`p2sim.workload.schedule.chunk_layers`, model order): even chunks need nothing; the
    embedding and the loss counted as a layer each is ``--account-for-embedding-in-pipeline-split
    --account-for-loss-in-pipeline-split`` (Megatron-Core then takes one layer fewer on the first and last
    chunk); without virtual stages, first and last counts around even middle stages are
    ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers`` (arguments.py).  Any other
    split -- with virtual stages, where Megatron-LM would spread the first and last counts over a stage's chunks,
    which is not p2sim's split -- is ``--pipeline-model-parallel-layout`` (:func:`_layout`), which sets every
    chunk's layers and, from their number, the virtual stages.
    """
    v = t.training.virtual_stages
    flat = chunk_layers(t.num_layers, pp, v)
    n = len(flat)
    if len(set(flat)) == 1:
        return []
    if n >= 2 and (t.num_layers + 2) % n == 0:
        each = (t.num_layers + 2) // n
        if flat == (each - 1,) + (each,) * (n - 2) + (each - 1,):
            return ["--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"]
    if v == 1 and len(set(flat[1:-1])) <= 1:
        return [f"--decoder-first-pipeline-num-layers {flat[0]}", f"--decoder-last-pipeline-num-layers {flat[-1]}"]
    return [f'--pipeline-model-parallel-layout "{_layout(flat)}"']


def _layout(flat: tuple[int, ...]) -> str:
    """The chunks' layers as Megatron-LM's ``--pipeline-model-parallel-layout`` string.

    Its grammar (megatron/core/transformer/pipeline_parallel_layer_layout.py, ``parse_str_to_list``; Megatron-LM's
    docs/user-guide/features/pipeline_parallel_layout.md): chunks split by ``|`` in virtual-stage order (chunk
    ``i`` runs on pipeline rank ``i mod p``, virtual stage ``i div p`` -- p2sim's model order), ``t`` a decoder
    layer, ``E`` the embedding (first chunk), ``L`` the loss (last chunk), ``x*n`` and ``(..)*n`` repetitions,
    commas cosmetic.  Megatron-LM derives the virtual stages from the chunks' number (arguments.py), so
    ``--num-virtual-stages-per-pipeline-rank`` is not given beside it.

    Examples
    --------
    >>> _layout((3, 4, 4, 4, 4, 4, 4, 2))
    'Et*3|(t*4|)*6t*2,L'
    >>> _layout((2, 1, 2))
    'Et*2|t|t*2,L'
    """
    def chunk(n: int) -> str:
        return "t" * n if n <= 1 else f"t*{n}"

    middle, i = "", 1
    while i < len(flat) - 1:
        j = i
        while j + 1 < len(flat) - 1 and flat[j + 1] == flat[i]:
            j += 1
        run = j - i + 1
        middle += f"({chunk(flat[i])}|)*{run}" if run > 1 else f"{chunk(flat[i])}|"
        i = j + 1
    return f"E{chunk(flat[0])}|{middle}{chunk(flat[-1])},L"


def megatron_training_args(t: TrainingAssumed, size: dict[str, int], dp: int) -> tuple[list[str], list[str]]:
    """Megatron-LM's options for every training setting the prediction assumed, and comments for what none sets
    (none today: every setting p2sim assumes has its option).

    ``size``: Megatron-LM's parallel sizes by dimension (tp, cp, ep, dp, pp); ``dp``: its data-parallel size,
    ``world / (tp x cp x pp)``.  The global batch not given is Megatron-LM's default, one micro-batch per
    data-parallel rank.
    """
    tr, extra = t.training, t.extra
    args = [f"--seq-length {tr.seq_length}", f"--micro-batch-size {tr.micro_batch}",
            f"--global-batch-size {tr.global_batch if tr.global_batch is not None else tr.micro_batch * dp}"]
    args += list(_DTYPE.get(tr.param_dtype, ()))
    if tr.grad_dtype == "bf16":
        args.append("--grad-reduce-in-bf16")  # arguments.py: gradients reduced in bf16, not fp32
    if extra.fp8:
        args.append("--fp8-format hybrid")  # TransformerEngine's E4M3 forward, E5M2 backward (arguments.py)
    if tr.sequence_parallel:
        args.append("--sequence-parallel")
    stages = _stage_args(t, size["pp"])
    if tr.virtual_stages > 1 and not any(a.startswith("--pipeline-model-parallel-layout") for a in stages):
        # the interleaved schedule (a layout sets it by its chunks: Megatron-LM refuses both)
        args.append(f"--num-virtual-stages-per-pipeline-rank {tr.virtual_stages}")
    args += stages
    args += list(_DATA_PARALLEL[tr.data_parallel])
    if extra.recompute in _RECOMPUTE:
        args += list(_RECOMPUTE[extra.recompute])
    else:  # selective modules (p2sim.workload.recompute): TransformerConfig.recompute_modules
        args += ["--recompute-granularity selective", f"--recompute-modules {' '.join(extra.recompute.split('+'))}"]
    if extra.offload:  # activation offloading (Megatron-Core's TransformerConfig.cpu_offloading_num_layers)
        args += ["--cpu-offloading", f"--cpu-offloading-num-layers {extra.offload}"]
    if extra.tp_overlap:
        args.append("--tp-comm-overlap")
    if t.moe:
        args += list(_MOE) + list(_DISPATCHER[extra.dispatcher])
    return args, []


def _header(c: MeshChoice, launch: MegatronLaunch) -> list[str]:
    pl = c.placement
    lines = ["#!/bin/bash",
             f"# p2sim: {c.system}, {c.nodes} nodes x {c.gpus_per_node} GPUs; axes {axes_text(pl.axes, c.names)}; "
             f"matrix {format_matrix(pl.matrix)}",
             f"# placement: {c.described}"]
    for r in c.reductions:
        lines.append(f"# reduce over {', '.join(c.names[a] for a in r.axes)}: {r.algo} {r.program} "
                     f"({format_seconds(r.seconds)} predicted)")
        if r.program != ALLREDUCE_TEXT:  # Megatron's DDP reduces a bucket with one collective over the group
            lines.append("#   Megatron-LM reduces gradients over its groups with collectives of its own, not this "
                         "program: --emit torch|jax runs it")
        if r.note:
            lines.append(f"#   {r.note}")
    lines += [f"# note: {n}" for n in c.notes]
    own = "model and data" if c.training is not None else "model, training and data"
    lines.append(f"# node n of the system, in p2sim's order, runs torchrun --node_rank n; GPU g of a node is CUDA "
                 f"device g; the {own} arguments are this script's own (\"$@\")")
    if launch.matched:
        default = " (its default)" if launch.order == MEGATRON_ORDERS[0] else ""
        lines.append(f"# Megatron-LM's rank order {launch.order}{default} lays ranks out as this placement: "
                     "torchrun's ranks as they come")
    else:
        lines.append(f"# {launch.why}: Megatron-LM runs its default {launch.order} and its ranks move onto "
                     "p2sim's devices")
    return lines


def _blocks_kept(launch: MegatronLaunch, gpus: int) -> tuple[int, ...] | None:
    """The GPU of each local rank when every node keeps its own ranks and all nodes move them alike, else None."""
    local = tuple(d % gpus for d in launch.device[:gpus])
    for m, d in enumerate(launch.device):
        if d // gpus != m // gpus or d % gpus != local[m % gpus]:
            return None
    return local


def megatron_script(c: MeshChoice) -> str:
    """The shell script that starts Megatron-LM's ``pretrain_gpt.py`` with this placement on every node."""
    launch = megatron_device_order(c)
    size, g = _sizes(c), c.gpus_per_node
    out = _header(c, launch) + _nccl_lines(c)
    moved = None if launch.matched else _blocks_kept(launch, g)
    if moved is not None:
        out += [f"# every node keeps its ranks; local rank l runs on GPU CUDA_VISIBLE_DEVICES[l] (Megatron-LM's "
                f"rank node x {g} + l)",
                f"export CUDA_VISIBLE_DEVICES={','.join(str(x) for x in moved)}"]
    wrapped = not launch.matched and moved is None
    if wrapped:
        out += [f"# Megatron-LM's rank m runs on another node than torchrun's rank m: torchrun starts a process per "
                f"device r = node x {g} + LOCAL_RANK and this wrapper gives it Megatron-LM's rank RANK_OF[r]",
                "cat > megatron_rank.sh <<'EOF'",
                "#!/bin/bash",
                "RANK_OF=("]
        rank_of = [0] * len(launch.device)
        for m, d in enumerate(launch.device):
            rank_of[d] = m
        out += ["    " + " ".join(str(m) for m in rank_of[n * g:(n + 1) * g]) for n in range(c.nodes)]
        out += [")",
                'export RANK="${RANK_OF[$RANK]}"',
                'exec python pretrain_gpt.py "$@"',
                "EOF",
                "chmod +x megatron_rank.sh"]
    out += ["DISTRIBUTED_ARGS=(",
            f"    --nproc_per_node {g}",
            f"    --nnodes {c.nodes}",
            f'    --node_rank "${{NODE_RANK:?this node\'s index in p2sim\'s order, 0..{c.nodes - 1}}}"',
            '    --master_addr "${MASTER_ADDR:?the address of node_rank 0}"',
            '    --master_port "${MASTER_PORT:-29500}"',
            ")",
            "MODEL_PARALLEL_ARGS=("]
    out += [f"    {option} {size[m]}" for m, option in _SIZE_OPTIONS]
    if size["ep"] > 1:
        out.append(f"    {_EXPERT_TP_OPTION} {size['tp']}")
    if launch.order != MEGATRON_ORDERS[0]:
        out.append(f"    {_SECOND_ORDER_OPTION}")
    model = size["tp"] * size["cp"] * size["pp"]
    out += [")",
            f"# Megatron-LM's data-parallel size is what is left: {c.placement.devices} GPUs / (tensor {size['tp']} x "
            f"context {size['cp']} x pipeline {size['pp']}) = {c.placement.devices // model}"
            + (f" (its expert layers': expert {size['ep']} x expert-data "
               f"{c.placement.devices // model // size['ep']})" if size["ep"] > 1 else "")]
    arrays = '"${MODEL_PARALLEL_ARGS[@]}"'
    if c.training is not None:
        args, notes = megatron_training_args(c.training, size, c.placement.devices // model)
        out += ["# the training settings p2sim predicted the step with"] + notes + ["TRAINING_ARGS=("]
        out += [f"    {a}" for a in args] + [")"]
        arrays += ' "${TRAINING_ARGS[@]}"'
    if wrapped:
        out.append(f'torchrun --no-python "${{DISTRIBUTED_ARGS[@]}}" ./megatron_rank.sh {arrays} "$@"')
    else:
        out.append(f'torchrun "${{DISTRIBUTED_ARGS[@]}}" pretrain_gpt.py {arrays} "$@"')
    return "\n".join(out) + "\n"
