#!/usr/bin/env bash
# Issue 24 on the GPU machine: `memscope run` (every GPU and the CPU, the default) with the binary
# before the one-pipeline redesign (OLD) and after it (NEW), alternated in one sitting
# (old, new, old, new), then scripts/compare_runs.py: every GPU finding of the new runs against
# the old runs' own run-to-run spread.
#   there: bash notes/diagnostics/device/pipeline-runs.sh NEW_BIN OLD_BIN OUTDIR
# Writes OUTDIR/{old1,new1,old2,new2}/results.json, OUTDIR/*.log (with wall times) and
# OUTDIR/compare.txt. Never changes clocks, power or modes.
set -u
new=${1:?usage: pipeline-runs.sh NEW_BIN OLD_BIN OUTDIR}
old=${2:?usage: pipeline-runs.sh NEW_BIN OLD_BIN OUTDIR}
out=${3:?usage: pipeline-runs.sh NEW_BIN OLD_BIN OUTDIR}
mkdir -p "$out"
export MEMSCOPE_NO_SCHEDULER=1
for r in old1 new1 old2 new2; do
  case $r in old*) bin=$old ;; *) bin=$new ;; esac
  start=$(date +%s%N)
  echo "== $(date -u +%FT%TZ) $r: $bin run --out $out/$r --quiet" | tee "$out/$r.log"
  timeout 120 "$bin" run --out "$out/$r" --quiet >>"$out/$r.log" 2>&1
  echo "rc=$? wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))" | tee -a "$out/$r.log"
done
python3 "$(dirname "$0")/../../../scripts/compare_runs.py" "$out"/old1/results.json "$out"/old2/results.json \
  "$out"/new1/results.json "$out"/new2/results.json >"$out/compare.txt" 2>&1
grep -A40 '^summary' "$out/compare.txt"
