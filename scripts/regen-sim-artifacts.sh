#!/usr/bin/env bash
# Regenerate the simulator artifacts (docs/SIMULATORS.md) from one GPU results file (default: the
# committed H200 run): results/h200/h200-preset.json (sim calibrate) with its source table,
# results/h200/accel-sim/gpgpusim.config (export accel-sim), a `memscope run` on the preset
# (results/h200/sim-run/), and the comparison table between the markers in docs/SIMULATORS.md.
# Usage: bash scripts/regen-sim-artifacts.sh [RESULTS.json]   (a path relative to the repo root)
set -euo pipefail
cd "$(dirname "$0")/.."
RES="${1:-results/h200/full-2026-11-30T0233/run1/results.json}"
[ -f "$RES" ] || { echo "regen-sim-artifacts: no results file $RES" >&2; exit 2; }
cargo build --release --quiet
M=./target/release/memscope
echo "$RES" > results/h200/sim-artifacts.source
$M sim calibrate "$RES" --out results/h200/h200-preset.json > results/h200/h200-preset.sources.txt
$M export accel-sim "$RES" --out results/h200/accel-sim
mkdir -p results/h200/sim-run && find results/h200/sim-run -mindepth 1 ! -name README.md -delete
$M run --target sim:results/h200/h200-preset.json --out results/h200/sim-run --quiet > results/h200/sim-run.log 2>&1 || true
python3 scripts/sim-compare.py "$RES" results/h200/sim-run/results.json docs/SIMULATORS.md
echo "regenerated from $RES: results/h200/h200-preset.json, results/h200/accel-sim/, results/h200/sim-run/, docs/SIMULATORS.md table"
