#!/usr/bin/env bash
# GPU smoke test for bench_nccl, for a machine with one (or more) NVIDIA GPUs; under 3 minutes on one.
#
#   bash bench_nccl/smoke_gpu.sh [OUT]        (OUT: the folder for every log, default ./smoke-out)
#
# It installs nothing and needs no installed p2sim: it runs from the repository with PYTHONPATH set
# to it, with $PYTHON (default python3), which must import numpy and CuPy with NCCL (e.g. cupy-cuda12x
# and nvidia-nccl-cu12, or cupy-cuda13x and nvidia-nccl-cu13). The single-GPU steps (single, sweep,
# compare) never import simpy, networkx or scipy; only the multi-GPU program runs need p2sim's
# dependencies, and are skipped without them. Steps:
#   1. preflight   CuPy, the driver, the GPUs and NCCL, in one line
#   2. single      every collective through the real backend on one rank: a one-rank commSplit (or
#                  ncclCommInitRank), each as a program step and as sweep calls in and out of place
#   3. sweep       AllReduce from 1 KiB to 1 GiB, nccl-tests' table (sweep_allreduce.txt) and log
#                  (sweep_allreduce.jsonl), every size checked against numpy
#   4. readers     p2sim reads the printed table (nccl-tests reader) and the log (sweep-log reader)
#   5. compare     every collective, 1 KiB..1 MiB, with --backend numpy and with NCCL: the results'
#                  checksums and #wrong must be equal (compare.txt)
#   6. programs    (two or more GPUs, with simpy) every program of a one-node system of these GPUs
# and ends with a summary table. Exit status: 0 when every step passed.
set -uo pipefail
OUT_ARG=${1:-./smoke-out}
mkdir -p "$OUT_ARG"
OUT=$(cd "$OUT_ARG" && pwd)
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
SUMMARY=()
STATUS=0

now() { date +%s%N; }
since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
record() {  # step status seconds note
  SUMMARY+=("$(printf '%-10s %-5s %8.1f  %s' "$1" "$2" "$3" "$4")")
  [ "$2" = "PASS" ] || [ "$2" = "SKIP" ] || STATUS=1
}
run_step() {  # name command...: runs it, its output also into OUT/name.txt and OUT/name.err
  local name=$1; shift
  local t0; t0=$(now)
  echo "=== $name: $*"
  "$@" 2> >(tee "$OUT/$name.err" >&2) | tee "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  LAST_SECONDS=$(since "$t0")
  return "$rc"
}

echo "smoke_gpu: logs in $OUT"
t0=$(now)
if INFO=$("$PY" -c "from bench_nccl.gpu import preflight; print(preflight(1).line())" 2>"$OUT/preflight.err"); then
  echo "$INFO" | tee "$OUT/preflight.txt"
  record preflight PASS "$(since "$t0")" "$INFO"
else
  cat "$OUT/preflight.err" >&2
  record preflight FAIL "$(since "$t0")" "$(tail -1 "$OUT/preflight.err")"
  printf '%s\n' "--- summary" "step       state   seconds  note" "${SUMMARY[@]}" | tee "$OUT/summary.txt"
  exit 1
fi
GPUS=$("$PY" -c "from bench_nccl.gpu import preflight; print(preflight(1).devices)")

if run_step single "$PY" -m bench_nccl single --bytes 64MiB; then
  record single PASS "$LAST_SECONDS" "$(head -1 "$OUT/single.txt" | sed 's/^single: //')"
else
  record single FAIL "$LAST_SECONDS" "$(grep -c FAIL "$OUT/single.txt") FAIL lines; see single.txt/.err"
fi

rm -f "$OUT/sweep_allreduce.jsonl"
if run_step sweep_allreduce "$PY" -m bench_nccl sweep --ranks 1 -C AllReduce -b 1KiB -e 1GiB -f 2 -w 5 -n 20 \
    --log "$OUT/sweep_allreduce.jsonl"; then
  record sweep PASS "$LAST_SECONDS" "AllReduce 1KiB..1GiB: $(grep -c '^ ' "$OUT/sweep_allreduce.txt") sizes, $(grep 'Out of bounds' "$OUT/sweep_allreduce.txt" | sed 's/# //')"
else
  record sweep FAIL "$LAST_SECONDS" "see sweep_allreduce.txt/.err"
fi

t0=$(now)
if "$PY" - "$OUT" > "$OUT/readers.txt" 2>&1 <<'PYEOF'
import sys
from p2sim.measurements.nccltests import read_nccltests
from p2sim.measurements.sweep_log import read_sweep_log
out = sys.argv[1]
table = read_nccltests(f"{out}/sweep_allreduce.txt", system="smoke")
log = read_sweep_log(f"{out}/sweep_allreduce.jsonl", system="smoke")
assert [(r.size_bytes, r.in_place) for r in table] == [(r.size_bytes, r.in_place) for r in log]
big = [r for r in log if not r.in_place][-1]
print(f"{len(table)} rows from the printed table, {len(log)} from the log; "
      f"{big.size_bytes / 2**30:g} GiB out of place: {big.seconds * 1e6:.1f} us, algbw {big.algbw / 1e9:.1f} GB/s")
PYEOF
then
  record readers PASS "$(since "$t0")" "$(cat "$OUT/readers.txt")"
else
  cat "$OUT/readers.txt" >&2
  record readers FAIL "$(since "$t0")" "$(tail -1 "$OUT/readers.txt")"
fi

t0=$(now)
rm -f "$OUT/compare_numpy.jsonl" "$OUT/compare_nccl.jsonl"
ok=1
for c in AllReduce ReduceScatter AllGather Broadcast Reduce; do
  for b in numpy nccl; do
    "$PY" -m bench_nccl sweep --backend "$b" --ranks 1 -C "$c" -b 1KiB -e 1MiB -f 4 -w 1 -n 3 \
        --log "$OUT/compare_$b.jsonl" >> "$OUT/compare_sweeps.txt" 2>&1 || ok=0
  done
done
"$PY" -m bench_nccl compare "$OUT/compare_numpy.jsonl" "$OUT/compare_nccl.jsonl" > "$OUT/compare.txt" 2>&1 || ok=0
tail -1 "$OUT/compare.txt"
if [ $ok = 1 ]; then
  record compare PASS "$(since "$t0")" "numpy vs nccl, 5 collectives: $(tail -1 "$OUT/compare.txt")"
else
  record compare FAIL "$(since "$t0")" "$(tail -1 "$OUT/compare.txt"); see compare.txt, compare_sweeps.txt"
fi

if [ "$GPUS" -ge 2 ]; then
  t0=$(now)
  if "$PY" -c "import simpy, networkx, scipy" 2>/dev/null; then
    # a one-node system of exactly these GPUs: its programs use all five collectives
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
    ok=1
    for algo in ring tree; do
      "$PY" -m bench_nccl run --system "$OUT/local.toml" --axes "$GPUS" --reduce 0 --algo "$algo" --bytes 64MiB \
          --warmup 2 --iters 5 --log "$OUT/programs.jsonl" --timeout 120 >> "$OUT/programs.txt" 2>&1 || ok=0
    done
    grep -q '"pass":false' "$OUT/programs.jsonl" && ok=0
    if [ $ok = 1 ]; then
      record programs PASS "$(since "$t0")" "$(tail -1 "$OUT/programs.txt")"
    else
      record programs FAIL "$(since "$t0")" "see programs.txt"
    fi
  else
    record programs SKIP 0 "$GPUS GPUs, but $PY lacks simpy/networkx/scipy (pip install -e .)"
  fi
fi

printf '%s\n' "--- summary ($OUT)" "step       state   seconds  note" "${SUMMARY[@]}" | tee "$OUT/summary.txt"
exit $STATUS
