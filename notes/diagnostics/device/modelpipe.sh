#!/usr/bin/env bash
# Issue 24, "memscope model reads its ceilings from findings of the same session": the old and the
# new `memscope model --all` in one sitting on the GPU machine, alternating (old 1, new 1, old 2,
# new 2), then notes/diagnostics/compare_model_runs.py side by side (ceilings, the 58 points' summary,
# fusion, the spread between the two runs of each path), and one new `memscope run -p launch`
# showing the per-class launch-floor findings. Built elsewhere:
#   NEW_BIN: this branch, `cargo build --release -p memscope`, stripped (target/gpu-run/memscope)
#   OLD_BIN: main before the branch (writes memscope/bottleneck-model/1), stripped
#   there:   bash notes/diagnostics/device/modelpipe.sh NEW_BIN OLD_BIN OUTDIR
# Writes OUTDIR/{old,new}-model-{1,2}.json + .log (wall time: /usr/bin/time -v when present, and
# date stamps), OUTDIR/launch/results.json + launch.log, OUTDIR/compare.txt and compare.md,
# OUTDIR/log.txt. Stops itself after 450 s (each step gets at most its cap and what is left); a
# failed step does not stop the next. Never changes clocks, power or modes.
set -u
new=${1:?usage: modelpipe.sh NEW_BIN OLD_BIN OUTDIR}
old=${2:?usage: modelpipe.sh NEW_BIN OLD_BIN OUTDIR}
out=${3:?usage: modelpipe.sh NEW_BIN OLD_BIN OUTDIR}
mkdir -p "$out"
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
new=$(abs "$new")
old=$(abs "$old")
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../../.."
export MEMSCOPE_NO_SCHEDULER=1
t0=$(date +%s)
budget() { # the step's limit: min(cap, what is left of 450 s), at least 5 s
  local left=$((450 - ($(date +%s) - t0)))
  [ "$left" -lt "$1" ] && echo $((left > 5 ? left : 5)) || echo "$1"
}
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -v)
step() { # name cap logfile command...
  local name=$1 cap=$2 file=$3
  shift 3
  local lim
  lim=$(budget "$cap")
  echo "== $(date -u +%FT%TZ) $name: timeout $lim $*"
  local start
  start=$(date +%s%N)
  { echo "== start $(date -u +%FT%T.%NZ): $*"; } >"$file"
  timeout "$lim" ${timer[@]+"${timer[@]}"} "$@" >>"$file" 2>&1
  local rc=$?
  local ms=$((($(date +%s%N) - start) / 1000000))
  echo "== end $(date -u +%FT%T.%NZ) rc=$rc wall_ms=$ms" >>"$file"
  echo "rc=$rc wall_ms=$ms"
  grep -Ev '^[[:space:]]' "$file" | tail -n 14
  grep -E 'Elapsed \(wall clock\)|Maximum resident' "$file"
}
{
  echo "== $(date -u +%FT%TZ) host $(hostname), $(nproc) CPUs; new $("$new" --version 2>&1), old $("$old" --version 2>&1)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  for i in 1 2; do
    step "old model --all ($i)" 100 "$out/old-model-$i.log" "$old" model --all --out "$out/old-model-$i.json"
    step "new model --all ($i)" 130 "$out/new-model-$i.log" "$new" model --all --out "$out/new-model-$i.json"
  done
  step "new run -p launch" 40 "$out/launch.log" "$new" run --target cuda:0 -p launch --out "$out/launch" --quiet
  python3 - "$out/launch/results.json" <<'PY' 2>&1
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(f"launch results unreadable: {e}")
for k, f in sorted(d["findings"].items()):
    if k.startswith("launch."):
        s = f.get("spread") or {}
        print(f"{k:34} {f['value'] * 1e6 if isinstance(f['value'], float) else f['value']:>8.3f} us  "
              f"[{(s.get('min') or 0) * 1e6:.3f}..{(s.get('max') or 0) * 1e6:.3f}]  {f.get('note', '')[:90]}")
for k, p in d.get("probes", {}).items():
    print(f"probe {k}: {p.get('status')} in {p.get('duration_s', 0):.2f} s")
PY
  # The new file is read by predict --ceilings as any memscope run results file.
  step "new predict --ceilings new-model-1.json" 10 "$out/predict.log" "$new" predict --ceilings "$out/new-model-1.json" --op matmul --m 1024 --k 1024 --n 1024
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv 2>&1 || true
  files=()
  for f in old-model-1 old-model-2 new-model-1 new-model-2; do
    [ -s "$out/$f.json" ] && files+=("$out/$f.json")
  done
  python3 notes/diagnostics/compare_model_runs.py "${files[@]}" 2>&1 | tee "$out/compare.txt"
  python3 notes/diagnostics/compare_model_runs.py --markdown "${files[@]}" >"$out/compare.md" 2>&1
  echo "== $(date -u +%FT%TZ) done in $(($(date +%s) - t0)) s"
} 2>&1 | tee "$out/log.txt"
