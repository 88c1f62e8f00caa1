#!/usr/bin/env bash
# Issue 16 diagnostic, second step: builds notes/diagnostics/device/link_drift.cu into OUTDIR and runs its
# three modes (time: 25 s of one context's copies every ~0.1 s; pins: 8 pinned allocations x 3
# passes; ctx: 5 driver contexts x 3 passes); OUTDIR/summary.txt condenses them.
# BINARY is not used (kept for the scripts/device calling convention).
# Usage: bash notes/diagnostics/device/link_drift.sh BINARY OUTDIR   (about 60 s on the H200)
set -u
BIN=${1:?usage: link_drift.sh BINARY OUTDIR}
OUT=${2:?usage: link_drift.sh BINARY OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
: "$BIN"
mkdir -p "$OUT"
if ! nvcc -O3 -arch=sm_90 -o "$OUT/link_drift" "$HERE/link_drift.cu" -lcuda > "$OUT/build.log" 2>&1; then
  echo "build failed:"; cat "$OUT/build.log"; exit 1
fi
for m in "time 25" pins ctx; do
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout 90 "$OUT/link_drift" $m > "$OUT/${m%% *}.txt" 2>&1
  echo "${m%% *} exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
done
python3 "$HERE/link_drift_summary.py" "$OUT" > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
