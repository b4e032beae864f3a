"""Published training steps (Megatron-Bridge 25.11's performance summary): measured against predicted throughput.

Reads ``validation/step_times/step_times_dev.csv`` (each row with its ``source``: the repository, file
and commit it was read from) and predicts each row with :func:`p2sim.studies.step_time.run_step`, as
``p2sim step`` does, from the row's configuration only:

* the axes: ``tensor=tp, pipeline=pp, context=cp, expert=ep`` and ``data = gpus / (tp pp cp ep)`` (p2sim's
  data axis is Megatron-Core's data-parallel size over the expert size: ``p2sim.workload.training``);
* ``--train``: the row's sequence, micro and global batch, ``vp``, sequence parallelism with ``tp > 1``,
  FP8 GEMMs for the FP8 recipes (``FP8-CS``, ``FP8-MX``), the distributed optimizer (``zero=1``), or FSDP
  where the row says so; BF16 gradient reduction (Megatron-Bridge's performance configurations,
  ``grad_reduce_in_fp32`` off -- assumed: the rows do not say); the Llama 3 recipes' tensor-parallel
  communication overlap (``tp_overlap=on`` with ``tp > 1``); the MoE token dispatcher of Megatron-Bridge 25.11's
  performance configurations (scripts/performance/configs/{qwen,deepseek,gpt_oss}/*_workload_base_configs.py at
  the rows' commit): HybridEP (``dispatcher=hybridep``) for Qwen3 and DeepSeek-V3 on GB200 and GB300, the alltoall
  dispatcher otherwise; recompute: the least of none, selective, full that fits the GPU's memory (the
  rows do not publish it);
* the system: DGX H100 ``dgx-h100``, DGX B200 ``dgx-b200``, GB200 / GB300 NVL72 ``gb200-nvl72-pod`` /
  ``gb300-nvl72-pod`` (racks of 72, the job on its first GPUs).

Per row: measured and predicted tokens/s per GPU, measured / predicted (``m/p``), the model TFLOP/s per
GPU measured and predicted, and the step by part.  Then the median of m/p and its geometric spread
(``exp(std(log(m/p)))``).  ``--fit`` searches :class:`~p2sim.workload.op_time.EfficiencyParams` inside their
bounds for the least squared log error over all rows (a coarse grid: fit nothing to single rows).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from p2sim.workload import load_model
from p2sim.workload.recompute import ladder
from p2sim.studies.step_time import run_step
from p2sim.util.errors import InputError
from p2sim.workload.op_time import BOUNDS, DEFAULT, EfficiencyParams

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "validation" / "step_times" / "step_times_dev.csv"
MODELS = {"LLAMA3_8B": "llama3-8b", "LLAMA3_70B": "llama3-70b", "LLAMA3.1_405B": "llama3-405b",
          "DeepSeekV3": "deepseek-v3", "GPT OSS 120B": "gpt-oss-120b", "Qwen3_30B_a3B": "qwen3-30b-a3b",
          "Qwen3_235B_a22B": "qwen3-235b-a22b"}
# the models whose Megatron-Bridge 25.11 performance configurations run HybridEP on GB200 and GB300 (Qwen3's and
# DeepSeek-V3's workload base configs; GPT-OSS's name no flex dispatcher backend)
HYBRIDEP = ("Qwen3_30B_a3B", "Qwen3_235B_a22B", "DeepSeekV3")
SYSTEMS = {"DGX-H100": "dgx-h100", "DGX-B200": "dgx-b200", "DGX-GB200": "gb200-nvl72-pod",
           "DGX-GB300": "gb300-nvl72-pod"}


def configuration(row: dict[str, str]) -> tuple[dict[str, int], str]:
    """The row's axes and ``--train`` text (recompute left out)."""
    gpus, tp, pp, cp = (int(row[k]) for k in ("gpus", "tp", "pp", "cp"))
    ep = 1 if row["ep"] in ("", "n/a") else int(row["ep"])
    vp = 1 if row["vp"] in ("", "n/a") else int(row["vp"])
    dp = gpus // (tp * pp * cp)
    axes = {"tensor": tp, "pipeline": pp, "context": cp, "expert": ep, "data": dp // ep}
    train = [f"seq={row['seq']}", f"micro_batch={row['mbs']}", f"global_batch={row['gbs']}",
             f"sp={'on' if tp > 1 else 'off'}", f"vp={vp}",
             f"dtype={'fp8' if row['precision'].startswith('FP8') else 'bf16'}",
             "zero=fsdp" if row["fsdp"] == "1" else "zero=1", "grad_dtype=bf16"]
    if tp > 1 and row["model"].startswith("LLAMA"):
        train.append("tp_overlap=on")  # Megatron-Bridge's Llama 3 recipes: CommOverlapConfig(tp_comm_overlap=True)
    if row["model"] in HYBRIDEP and row["system"] in ("DGX-GB200", "DGX-GB300"):
        train.append("dispatcher=hybridep")  # moe_flex_dispatcher_backend="hybridep" in their 25.11 base configs
    return axes, ",".join(train)


def predict(row: dict[str, str], params: EfficiencyParams = DEFAULT):
    """The row's prediction with the least recompute that fits, or the reason none does."""
    axes, train = configuration(row)
    last, exposed = None, None
    # as the configuration search: no recompute, then activation offloading where it runs (no pipeline) and
    # costs nothing (its copies hide under the compute), then the model's recompute ladder (recompute.ladder);
    # unlike the search, a row that nothing else fits keeps an offloading whose copies are exposed
    steps = ladder(load_model(MODELS[row["model"]]))
    rungs = ["recompute=none"] + (["offload=auto"] if axes["pipeline"] == 1 else []) + [
        f"recompute={rc}" for rc in steps[1:]]
    for rung in rungs:
        try:
            r = run_step(model=MODELS[row["model"]], system=SYSTEMS[row["system"]], gpus=int(row["gpus"]),
                         axes=axes, train=f"{train},{rung}", params=params)
        except InputError as e:
            last = e
            if "GiB per GPU" not in str(e) and "host memory" not in str(e):
                break
            continue
        if rung != "offload=auto" or r.offload_seconds == 0.0:
            return r
        exposed = r  # offloading fits but waits for its copies: the answer if no recompute fits
    return exposed if exposed is not None else str(last)


def spread(ratios: list[float]) -> tuple[float, float]:
    logs = [math.log(r) for r in ratios]
    return statistics.median(ratios), math.exp(statistics.pstdev(logs)) if len(logs) > 1 else 1.0


def score(rows: list[dict[str, str]], params: EfficiencyParams) -> float:
    err = 0.0
    for row in rows:
        r = predict(row, params)
        if isinstance(r, str):
            return float("inf")
        err += math.log(float(row["tokens_per_s_per_gpu"]) / r.tokens_per_s_per_gpu) ** 2
    return err


def fit(rows: list[dict[str, str]]) -> EfficiencyParams:
    """A coarse grid over the bounded parameters, then the best point printed."""
    # memory and launch held at their sources' typical values (0.8 of HBM, 3 us); a grid with launch free
    # ends every parameter at a bound (FP8 no faster than BF16): a sign of what the MoE layers lack, not a fit
    grid = {"matmul": (0.6, 0.7, 0.8), "fp8": (0.5, 0.65, 0.8), "attention": (0.35, 0.5, 0.65),
            "host": (0.0, 1e-5, 2e-5), "k_half": (0.0, 256.0), "grouped": (0.3, 0.5, 0.7, 1.0)}
    best, best_err = DEFAULT, float("inf")
    for values in itertools.product(*grid.values()):
        p = replace(DEFAULT, **dict(zip(grid, values)))
        err = score(rows, p)
        if err < best_err:
            best, best_err = p, err
    print(f"fit: {best} (sum of squared log errors {best_err:.4f}; bounds {BOUNDS})")
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="fit the efficiency parameters on the rows first")
    ap.add_argument("--rows", default=None, help="only these ids, comma-separated")
    args = ap.parse_args(argv)
    rows = list(csv.DictReader(ROWS.open()))
    if args.rows:
        rows = [r for r in rows if r["id"] in args.rows.split(",")]
    start = time.perf_counter()
    params = fit(rows) if args.fit else DEFAULT
    ratios = []
    print(f"{'id':4} {'model':16} {'system':10} {'gpus':>5} {'prec':7} {'meas tok/s':>10} {'pred tok/s':>10} {'m/p':>6} "
          f"{'meas TF':>8} {'pred TF':>8} {'GiB':>6}  step by part (s): compute bubble exposed-comm optimizer")
    for row in rows:
        r = predict(row, params)
        if isinstance(r, str):
            print(f"{row['id']:4} {row['model']:16} cannot predict: {r}")
            continue
        ratio = float(row["tokens_per_s_per_gpu"]) / r.tokens_per_s_per_gpu
        ratios.append(ratio)
        comm = ",".join(f"{k[:2]}={v:.3f}" for k, v in r.exposed_comm_seconds.items() if v > 0)
        print(f"{row['id']:4} {row['model']:16} {row['system']:10} {row['gpus']:>5} {row['precision']:7} "
              f"{float(row['tokens_per_s_per_gpu']):10.0f} {r.tokens_per_s_per_gpu:10.0f} {ratio:6.3f} "
              f"{float(row['model_tflops_per_gpu']):8.0f} {r.model_tflops_per_gpu:8.0f} {r.memory_gib_per_gpu:6.1f}  "
              f"{r.compute_seconds:.3f} {r.bubble_seconds:.3f} [{comm}] {r.optimizer_seconds:.3f} "
              f"recompute={r.training['recompute']}"
              + (f" offload={r.training['offload']}" if r.training.get("offload") else ""))
    if ratios:
        med, gsd = spread(ratios)
        print(f"\n{len(ratios)} of {len(rows)} rows: median m/p {med:.3f}, geometric spread {gsd:.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f}); {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
