#!/usr/bin/env bash
# The GPU tests of memscope-cuda (crates/cuda/tests/gpu.rs and the NVRTC kernel-compile tests) on a
# machine with a CUDA GPU. Two steps, because the GPU machine has no Rust toolchain:
#   here (with cargo):            scripts/gpu-test.sh --build   -> test binaries in target/gpu-bin/
#   on the GPU machine (device):  scripts/gpu-test.sh           -> runs target/gpu-bin/* (carry target/gpu-bin)
# With cargo and a GPU on one machine, `scripts/gpu-test.sh --build && scripts/gpu-test.sh` does both.
# Each GPU test prints "skipped: no CUDA GPU" and passes where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/gpu-bin
if [ "${1:-}" = "--build" ]; then
  rm -rf "$bin" && mkdir -p "$bin"
  cargo test --release -p memscope-cuda --no-run --message-format=json 2>/dev/null |
    python3 -c 'import sys,json
for l in sys.stdin:
    try: m=json.loads(l)
    except Exception: continue
    if m.get("reason")=="compiler-artifact" and m.get("profile",{}).get("test") and m.get("executable"): print(m["executable"])' |
    while read -r exe; do cp "$exe" "$bin/"; done
  ls "$bin"
  exit 0
fi
[ -d "$bin" ] || { echo "gpu-test: $bin missing; run scripts/gpu-test.sh --build first (with cargo)" >&2; exit 2; }
# NVRTC of the CUDA toolkit, if present, for the kernel-compile tests.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  if ls "$d"/libnvrtc.so* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" MEMSCOPE_NVRTC_AVAILABLE=1
    break
  fi
done
status=0
for t in "$bin"/*; do
  echo "== $(basename "$t")"
  "$t" --test-threads=1 --nocapture || status=1
done
exit $status
