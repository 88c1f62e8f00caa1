#!/usr/bin/env bash
# The GPU tests of memscope-cuda (crates/cuda/tests/gpu*.rs) and memscope-gpu (the NVRTC kernel-compile tests) on a
# machine with a CUDA GPU. Two steps, because the GPU machine has no Rust toolchain:
#   here (with cargo):            scripts/gpu-test.sh --build   -> test binaries in target/gpu-bin/
#   on the GPU machine (device):  scripts/gpu-test.sh           -> runs target/gpu-bin/* (carry target/gpu-bin)
# With cargo and a GPU on one machine, `scripts/gpu-test.sh --build && scripts/gpu-test.sh` does both.
# The GPU tests are #[ignore]d (a plain `cargo test` lists them as ignored: "needs a CUDA GPU");
# this script runs them with --include-ignored. Where there is no GPU they print "skipped: no CUDA GPU".
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/gpu-bin
if [ "${1:-}" = "--build" ]; then
  rm -rf "$bin" && mkdir -p "$bin"
  cargo test --release -p memscope-gpu -p memscope-cuda --no-run --message-format=json 2>/dev/null |
    python3 -c 'import sys,json
for l in sys.stdin:
    try: m=json.loads(l)
    except Exception: continue
    if m.get("reason")=="compiler-artifact" and m.get("profile",{}).get("test") and m.get("executable"): print(m["executable"])' |
    while read -r exe; do strip -o "$bin/$(basename "$exe")" "$exe"; done
  # The memscope binary itself, for the end-to-end fault-path check below.
  cargo build --release -p memscope && strip -o "$bin/memscope" target/release/memscope
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
# libcupti of the toolkit, for the slices child's CUPTI test (crates/cuda/tests/cuda/gpu_slices.rs).
for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  if ls "$d"/libcupti.so* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    break
  fi
done
status=0
for t in "$bin"/*; do
  [ "$(basename "$t")" = memscope ] && continue
  echo "== $(basename "$t")"
  "$t" --test-threads=1 --nocapture --include-ignored || status=1
done
# End to end: a GPU fault in one probe (MEMSCOPE_FAULT_IN_PROBE, a test hook) is reported with its
# error, the probes after it run in a fresh process, the results keep everything, and run exits 1.
if [ -x "$bin/memscope" ]; then
  echo "== memscope run with a fault injected in the line probe"
  out=$(mktemp -d)
  rc=0
  MEMSCOPE_FAULT_IN_PROBE=line "$bin/memscope" run --target cuda:0 --probes latency,line,indexing --quick \
    --quiet --out "$out" >"$out/stdout" 2>"$out/stderr" || rc=$?
  cat "$out/stderr"
  if python3 - "$out/results.json" "$rc" <<'PY'
import json, sys
doc, rc = json.load(open(sys.argv[1])), int(sys.argv[2])
probes = doc["probes"]
ok = lambda k: any(p["status"] == "ok" for key, p in probes.items() if key.split("@")[0] == k or key == k)
failed = [p for key, p in probes.items() if key.split("@")[0] == "line" or key == "line"]
checks = {
    "exit code 1": rc == 1,
    "latency ran before the fault": ok("latency"),
    "line failed with a CUDA error": bool(failed) and "CUDA_ERROR" in (failed[0].get("reason") or ""),
    "indexing ran after it (fresh process)": ok("indexing"),
    "l1 latency kept": "l1.hit_latency_ns" in doc["findings"],
}
for name, good in checks.items():
    print(("ok   " if good else "FAIL ") + name)
sys.exit(0 if all(checks.values()) else 1)
PY
  then echo "fault path: ok"; else echo "fault path: FAILED"; status=1; fi
fi
exit $status
