#!/usr/bin/env bash
# Repeatability of a GPU's findings (docs/TRUST.md): N back-to-back `memscope run --target T` and one run
# of each probe alone (with the probes it declares it needs), then a table of every numeric finding
# (min, median, max, spread) and every determined/undetermined flip, from repeatability_table.py.
#   bash scripts/repeatability.sh MEMSCOPE_BINARY OUTDIR [N=3] [TARGET=cuda:0] [PROBES=all]
# Writes OUTDIR/run1..runN/results.json, OUTDIR/alone-KEY/results.json, OUTDIR/log.txt and
# OUTDIR/table.md (+ table.json). Never changes clocks, power or modes.
set -uo pipefail
bin=${1:?usage: repeatability.sh MEMSCOPE_BINARY OUTDIR [N] [TARGET] [PROBES]}
out=${2:?usage: repeatability.sh MEMSCOPE_BINARY OUTDIR [N] [TARGET] [PROBES]}
n=${3:-3}
target=${4:-cuda:0}
probes=${5:-all}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
log="$out/log.txt"
{
  echo "== $(date -u +%FT%TZ) host $(hostname), $(nproc) CPUs; $("$bin" --version 2>&1)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  sel=()
  if [ "$probes" != all ]; then sel=(--probes "$probes"); fi
  for k in $(seq 1 "$n"); do
    echo "== run$k: $bin run --target $target ${sel[*]} --out $out/run$k --quiet"
    start=$(date +%s%N)
    "$bin" run --target "$target" "${sel[@]}" --out "$out/run$k" --quiet; echo "exit $?"
    echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
  done
  keys=$(python3 "$here/repeatability_table.py" --ran-probes "$out/run1/results.json")
  for key in $keys; do
    echo "== alone: $bin run --target $target --probes $key --out $out/alone-$key --quiet"
    start=$(date +%s%N)
    "$bin" run --target "$target" --probes "$key" --out "$out/alone-$key" --quiet; echo "exit $?"
    echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
  done
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  python3 "$here/repeatability_table.py" "$out" --md "$out/table.md" --json "$out/table.json"
  echo "== $(date -u +%FT%TZ) done"
} 2>&1 | tee "$log"
