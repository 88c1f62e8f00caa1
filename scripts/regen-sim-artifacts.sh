#!/usr/bin/env bash
# Regenerate the simulator artifacts (docs/SIMULATORS.md) from one GPU results file (default: the
# committed H200 run) and further runs of the same GPU whose findings fill what it
# lacks (default: the slice function of the l2.slices.function probe run, results/h200/l2-slices-function-probe/run1):
# results/h200/h200-preset.json (sim calibrate --with) with its source table,
# results/h200/accel-sim/gpgpusim.config (export accel-sim --with), a `memscope run` on the preset
# (results/h200/sim-run/), and the comparison table between the markers in docs/SIMULATORS.md.
# Usage: bash scripts/regen-sim-artifacts.sh [RESULTS.json [WITH.json ...]]   (paths relative to the repo root)
set -euo pipefail
cd "$(dirname "$0")/.."
RES="${1:-results/h200/repeatability/run1/results.json}"
[ -f "$RES" ] || { echo "regen-sim-artifacts: no results file $RES" >&2; exit 2; }
if [ $# -ge 2 ]; then WITH=("${@:2}"); else WITH=(results/h200/l2-slices-function-probe/run1/results.json.gz); fi
WITH_ARGS=()
for w in "${WITH[@]}"; do
  [ -f "$w" ] || { echo "regen-sim-artifacts: no results file $w" >&2; exit 2; }
  WITH_ARGS+=(--with "$w")
done
cargo build --release --quiet
M=./target/release/memscope
printf '%s\n' "$RES" "${WITH[@]}" > results/h200/sim-artifacts.source
$M sim calibrate "$RES" "${WITH_ARGS[@]}" --out results/h200/h200-preset.json > results/h200/h200-preset.sources.txt
$M export accel-sim "$RES" "${WITH_ARGS[@]}" --out results/h200/accel-sim
mkdir -p results/h200/sim-run && find results/h200/sim-run -mindepth 1 ! -name README.md -delete
$M run --target sim:results/h200/h200-preset.json --out results/h200/sim-run --quiet > results/h200/sim-run.log 2>&1 || true
python3 scripts/sim-compare.py "$RES" results/h200/sim-run/results.json docs/SIMULATORS.md
echo "regenerated from $RES: results/h200/h200-preset.json, results/h200/accel-sim/, results/h200/sim-run/, docs/SIMULATORS.md table"
