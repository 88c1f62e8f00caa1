#!/usr/bin/env bash
# The CPU lane alone on this host: the clock and its cross-checks, each cache level measured
# beside what the OS reports, the wall time. Run on the GPU machine with a binary built here:
#   here:  cargo build --release -p memscope && strip -o target/gpu-run/memscope target/release/memscope
#   there: bash scripts/cpu-check.sh target/gpu-run/memscope OUTDIR
# Writes OUTDIR/cpu/results.json and OUTDIR/cpu-check.log.
set -uo pipefail
bin=${1:?usage: cpu-check.sh MEMSCOPE_BINARY OUTDIR}
out=${2:?usage: cpu-check.sh MEMSCOPE_BINARY OUTDIR}
mkdir -p "$out/cpu"
here=$(cd "$(dirname "$0")" && pwd)
{
  echo "== $(date -u +%FT%TZ) host $(hostname), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo)"
  grep -m1 -E '^cpu family' /proc/cpuinfo; grep -m1 -E '^model[[:space:]]' /proc/cpuinfo
  for d in /sys/devices/system/cpu/cpu0/cache/index*; do
    echo "sysfs $(basename "$d"): L$(cat "$d/level") $(cat "$d/type") $(cat "$d/size") shared $(cat "$d/shared_cpu_list")"
  done
  echo "== $bin run --target cpu --out $out/cpu --quiet"
  start=$(date +%s%N)
  "$bin" run --target cpu --out "$out/cpu" --quiet; echo "exit $?"
  echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
  python3 "$here/cpu_summary.py" "$out/cpu/results.json" || echo "(python3 missing: read $out/cpu/results.json)"
} 2>&1 | tee "$out/cpu-check.log"
