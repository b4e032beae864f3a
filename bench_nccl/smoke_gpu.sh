#!/usr/bin/env bash
# GPU smoke test for bench_nccl: on a machine with one or more NVIDIA GPUs, runs every
# collective on as many ranks as there are GPUs (one rank per GPU), checks every result,
# and prints the log summary. It installs nothing: numpy, networkx, scipy, simpy and CuPy
# (with NCCL) must already be importable by $PYTHON (default: python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${SMOKE_OUT:-$(mktemp -d)}
BYTES=${SMOKE_BYTES:-64MiB}

if ! "$PY" -c "import numpy, networkx, scipy, simpy" 2>/dev/null; then
  echo "smoke_gpu: $PY lacks numpy/networkx/scipy/simpy; install p2sim's dependencies first (pip install -e .)" >&2
  exit 1
fi
if ! GPUS=$("$PY" -c "import cupy; print(cupy.cuda.runtime.getDeviceCount())" 2>/dev/null); then
  echo "smoke_gpu: CuPy with CUDA is not importable by $PY; install the wheel for the local CUDA," \
       "e.g. 'pip install cupy-cuda12x' (CUDA 12) -- this script installs nothing itself" >&2
  exit 1
fi
echo "smoke_gpu: $GPUS GPU(s); logs in $OUT"
"$PY" -c "import cupy; from cupy.cuda import nccl; print('CuPy', cupy.__version__, 'NCCL', nccl.get_version())"

if [ "$GPUS" -lt 2 ]; then
  # One GPU cannot reduce across ranks; check the five NCCL calls on a one-rank communicator.
  "$PY" -m bench_nccl single --bytes "$BYTES"
  exit $?
fi

# A one-node system of exactly these GPUs: its three programs use all five collectives
# (AllReduce; ReduceScatter + AllGather; Reduce + Broadcast).
cat > "$OUT/local.toml" <<TOML
name = "local"
description = "this machine: $GPUS GPUs (smoke test)"
default_nodes = 1
levels = [{ name = "node", cardinality = "nodes" }, { name = "gpu", cardinality = $GPUS }]
[classes]
nvlink = { bandwidth = 100.0, latency = 2.0 }
[node]
gpus = "gpu[0-$((GPUS - 1))]"
components = [{ name = "fabric", kind = "nvswitch" }]
links = [{ class = "nvlink", pairs = [["gpu[0-$((GPUS - 1))]", "fabric"]] }]
TOML

status=0
for algo in ring tree; do
  "$PY" -m bench_nccl run --system "$OUT/local.toml" --axes "$GPUS" --reduce 0 --algo "$algo" \
      --bytes "$BYTES" --warmup 2 --iters 5 --log "$OUT/smoke.jsonl" --timeout 120 || status=1
done
if [ "$GPUS" -ge 4 ] && [ $((GPUS % 2)) -eq 0 ]; then
  # the same GPUs seen as two halves: every synthesized program of a two-level hierarchy
  sed -e 's/name = "local"/name = "local2"/' \
      -e "s/{ name = \"gpu\", cardinality = $GPUS }/{ name = \"half\", cardinality = 2 }, { name = \"gpu\", cardinality = $((GPUS / 2)) }/" \
      "$OUT/local.toml" > "$OUT/local2.toml"
  "$PY" -m bench_nccl run --system "$OUT/local2.toml" --axes "$GPUS" --reduce 0 --algo ring \
      --bytes "$BYTES" --warmup 1 --iters 3 --log "$OUT/smoke.jsonl" --timeout 120 || status=1
fi
echo "--- summary"
"$PY" -m bench_nccl summary "$OUT/smoke.jsonl"
if grep -q '"pass":false' "$OUT/smoke.jsonl"; then
  echo "smoke_gpu: some results were wrong" >&2
  status=1
fi
exit $status
