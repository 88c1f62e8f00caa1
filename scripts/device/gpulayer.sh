#!/usr/bin/env bash
# Issue 24 on the GPU machine: the one GPU layer (crates/cuda/src/gpu/) with the probes and the
# bottleneck model both on it. Runs (1) scripts/gpu-test.sh: the carried GPU test binaries
# (target/gpu-bin, built elsewhere with `scripts/gpu-test.sh --build`), among them
# tests/gpu_layer.rs (the ops on a CudaTarget's GPU after target work) and the fault path end to
# end; (2) `memscope model` (ceilings, the 58 operations, fusion, batch) on the layer;
# (3) `memscope run --target cuda:0`, the discovery probes on the layer. Built elsewhere:
#   here:  cargo build --release -p memscope && strip -o target/gpu-run/memscope target/release/memscope
#          scripts/gpu-test.sh --build
#   there: bash scripts/device/gpulayer.sh target/gpu-run/memscope OUTDIR
# Writes OUTDIR/gpu-test.txt, OUTDIR/model.json + model-log.txt, OUTDIR/run/ (results.json) +
# run-log.txt, OUTDIR/summary.txt and OUTDIR/log.txt. The whole script stops itself after 230 s
# (each step gets at most its cap and what is left); a failed step does not stop the next.
# Never changes clocks, power or modes.
set -u
bin=${1:?usage: gpulayer.sh MEMSCOPE_BINARY OUTDIR}
out=${2:?usage: gpulayer.sh MEMSCOPE_BINARY OUTDIR}
mkdir -p "$out"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
log="$out/log.txt"
export MEMSCOPE_NO_SCHEDULER=1
t0=$(date +%s)
budget() { # the step's limit: min(cap, what is left of 230 s), at least 5 s
  local left=$(( 230 - ($(date +%s) - t0) ))
  [ "$left" -lt "$1" ] && echo $(( left > 5 ? left : 5 )) || echo "$1"
}
step() { # name cap logfile command...
  local name=$1 cap=$2 file=$3; shift 3
  local lim; lim=$(budget "$cap")
  echo "== $(date -u +%FT%TZ) $name: timeout $lim $*"
  local start; start=$(date +%s%N)
  timeout "$lim" "$@" >"$file" 2>&1
  echo "rc=$? wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))"
}
{
  echo "== $(date -u +%FT%TZ) host $(hostname), $(nproc) CPUs"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  step "GPU tests" 110 "$out/gpu-test.txt" bash scripts/gpu-test.sh
  grep -E '^== |test result|FAILED|panicked' "$out/gpu-test.txt" | head -60
  step "model" 60 "$out/model-log.txt" "$bin" model --out "$out/model.json"
  tail -n 25 "$out/model-log.txt"
  step "run" 80 "$out/run-log.txt" "$bin" run --target cuda:0 --out "$out/run" --quiet
  tail -n 15 "$out/run-log.txt"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv 2>&1 || true
  python3 - "$out" <<'PY' 2>&1 | tee "$out/summary.txt"
import json, os, sys
out = sys.argv[1]
try:
    m = json.load(open(os.path.join(out, "model.json")))
    s = (m.get("model") or {}).get("summary") or {}
    a = s.get("all") or {}
    print("model: checks ok", all(c.get("ok") for c in m.get("checks", [])),
          "| points", a.get("count"), "median measured/predicted", a.get("median_ratio"),
          "within 2x", a.get("within_2x"))
    f = m.get("fusion") or {}
    print("fusion fp16 speedup (two kernels, fused):", f.get("fp16_speedup_two_kernels"), f.get("fp16_speedup_fused"))
except Exception as e:
    print("model.json unreadable:", e)
try:
    r = json.load(open(os.path.join(out, "run", "results.json")))
    probes = r.get("probes", {})
    st = {}
    for k, p in probes.items():
        st.setdefault(p.get("status"), []).append(k)
    print("run: findings", len(r.get("findings", {})), "| probes by status",
          {k: len(v) for k, v in st.items()})
    for k, v in st.items():
        if k != "ok":
            print(" ", k, ":", ", ".join(sorted(v)))
except Exception as e:
    print("run/results.json unreadable:", e)
PY
  echo "== $(date -u +%FT%TZ) done in $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$log"
