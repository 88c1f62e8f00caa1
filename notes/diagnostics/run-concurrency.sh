#!/usr/bin/env bash
# What running the CPU lane beside the GPU probes costs: the default `memscope run` (every GPU
# and the CPU; the CPU on its own core) and the same with --cpu-sequential, wall time of each,
# and the GPU findings of the two runs side by side. On the GPU machine:
#   bash notes/diagnostics/run-concurrency.sh target/gpu-run/memscope OUTDIR
# Writes OUTDIR/{concurrent,sequential}/results.json and OUTDIR/concurrency.log.
set -uo pipefail
bin=${1:?usage: run-concurrency.sh MEMSCOPE_BINARY OUTDIR}
out=${2:?usage: run-concurrency.sh MEMSCOPE_BINARY OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/concurrent" "$out/sequential"
{
  echo "== $(date -u +%FT%TZ) host $(hostname), $(nproc) CPUs"
  for mode in concurrent sequential; do
    flag=""; [ "$mode" = sequential ] && flag="--cpu-sequential"
    echo "== $mode: $bin run $flag --out $out/$mode --quiet"
    start=$(date +%s%N)
    "$bin" run $flag --out "$out/$mode" --quiet > "$out/$mode/stdout.txt"; echo "exit $?"
    echo "wall_ms $mode $(( ($(date +%s%N) - start) / 1000000 ))"
  done
  python3 "$here/../../scripts/cpu_summary.py" "$out/concurrent/results.json" "$out/sequential/results.json" \
    || echo "(python3 missing: compare the two results.json files with memscope compare)"
} 2>&1 | tee "$out/concurrency.log"
