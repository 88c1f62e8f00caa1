#!/usr/bin/env bash
# Issue 22 on the GPU machine: the composition sweep of `memscope batch --compose` (its ceilings,
# GPT-2 small at contexts 128 and 1,024, batch 1..512, fp32 and fp16, eager and CUDA graph, per-kernel
# events, and the out-of-sample GPT-2-medium shape), twice in two processes (run-to-run agreement),
# each with its log. Built elsewhere (the GPU machine has no Rust toolchain):
#   here:  cargo build --release -p memscope && strip -o target/gpu-run/memscope target/release/memscope
#   there: bash notes/diagnostics/device/compose.sh target/gpu-run/memscope OUTDIR
# Writes OUTDIR/compose-run1.json, compose-run2.json, compose-run{1,2}-log.txt (stderr progress and
# the printed tables; the summary table is at the end of each) and OUTDIR/log.txt. Each run is
# limited to 58 s (one took 17-25 s on the H200 on 2026-12-01; the whole script stays under 2
# minutes); a failed run does not stop the next.
# Never changes clocks, power or modes.
set -u
bin=${1:?usage: compose.sh MEMSCOPE_BINARY OUTDIR}
out=${2:?usage: compose.sh MEMSCOPE_BINARY OUTDIR}
mkdir -p "$out"
log="$out/log.txt"
export MEMSCOPE_NO_SCHEDULER=1
{
  echo "== $(date -u +%FT%TZ) host $(hostname), $(nproc) CPUs"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  for run in 1 2; do
    echo "== run $run: timeout 58 $bin batch --compose --out $out/compose-run$run.json"
    start=$(date +%s%N)
    timeout 58 "$bin" batch --compose --out "$out/compose-run$run.json" >"$out/compose-run$run-log.txt" 2>&1
    echo "rc=$? wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))"
    # The run's summary: everything from the summary table on.
    sed -n '/^model .*ctx .*dtype/,$p' "$out/compose-run$run-log.txt"
    tail -n 3 "$out/compose-run$run-log.txt"
  done
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv 2>&1 || true
  echo "== $(date -u +%FT%TZ) done"
} 2>&1 | tee "$log"
