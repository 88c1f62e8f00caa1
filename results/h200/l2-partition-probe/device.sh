#!/usr/bin/env bash
# The l2.partition probe on the device machine, from the repo root, with target/gpu-bin carried
# (built here by `scripts/gpu-test.sh --build`): the GPU tests that cover the probe (its kernel's
# NVRTC compile and PTX check, the probe's GPU test, the analysis' unit tests), then two
# processes of `memscope run --probes l2.partition`. Every step under timeout; logs under $OUT,
# six files (the device call brings back at most 8): steps.txt (with nvidia-smi's line), tests.log,
# p1.out, p2.out (each run's stdout and stderr), p1/results.json, p2/results.json.
# Worst case 10 + 25 + 50 + 25 + 40 + 40 s = 190 s of timeouts; expected well under a minute.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT to the folder for the logs}"
mkdir -p "$OUT"
bin=target/gpu-bin
log() { echo "$*" | tee -a "$OUT/steps.txt"; }
log "start $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
timeout 10 nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv \
  >>"$OUT/steps.txt" 2>&1 || log "nvidia-smi rc=$?"
# NVRTC of the toolkit for the kernel-compile test (as scripts/gpu-test.sh does).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  if ls "$d"/libnvrtc.so* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" MEMSCOPE_NVRTC_AVAILABLE=1
    break
  fi
done
# The GPU tests with "partition" in their name: gpu-* (the kernel's compile and PTX), cuda-* (the
# probe's GPU test), memscope_cuda-* (the analysis on synthetic cycles and the H200's labels).
for pat in gpu- cuda- memscope_cuda-; do
  for t in "$bin"/"$pat"*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    case "$pat" in gpu-) lim=25 ;; cuda-) lim=50 ;; *) lim=25 ;; esac
    s=$(date +%s.%N)
    echo "== $name" >>"$OUT/tests.log"
    timeout "$lim" "$t" --test-threads=1 --nocapture --include-ignored partition >>"$OUT/tests.log" 2>&1
    rc=$?
    log "test $name rc=$rc $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $s}") s"
  done
done
for run in p1 p2; do
  s=$(date +%s.%N)
  timeout 40 "$bin/memscope" run --target cuda:0 --probes l2.partition --out "$OUT/$run" --quiet \
    >"$OUT/$run.out" 2>&1
  rc=$?
  rm -f "$OUT/$run/.memscope.lock"
  log "run $run rc=$rc $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $s}") s wall"
done
log "end $(date -u +%FT%TZ)"
