#!/usr/bin/env bash
# Issue 25's shared-memory, atomics and bandwidth-by-level/parallelism probes on the GPU machine:
#   bash notes/diagnostics/device/smem.sh BINARY OUTDIR
# 1. two back-to-back `BINARY run --target cuda:0 --probes l2bw,l2.slices,smem,atomics,levelbw,inflight`
#    (inflight brings line and latency along, its `needs`; l2bw and l2.slices give levelbw the L2
#    plateau and the slice count it compares), OUTDIR/run1 and OUTDIR/run2, wall time of each;
# 2. the repeatability table of the two runs (scripts/repeatability_table.py) -> OUTDIR/table.md;
# 3. the new probes' own durations -> OUTDIR/durations.txt;
# 4. a second opinion: notes/diagnostics/device/smem_check.cu (written apart from the probe's kernels),
#    built with nvcc, its JSON -> OUTDIR/smem_check.json, set beside run1's findings in
#    OUTDIR/compare.txt.
# Everything is logged to OUTDIR/log.txt. Keeps going after a failed step; never changes clocks.
set -u
bin=${1:?usage: smem.sh BINARY OUTDIR}
out=${2:?usage: smem.sh BINARY OUTDIR}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
probes=l2bw,l2.slices,smem,atomics,levelbw,inflight
{
  echo "== $(date -u +%FT%TZ) host $(hostname); $("$bin" --version 2>&1)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  for k in 1 2; do
    echo "== run$k: $bin run --target cuda:0 --probes $probes --out $out/run$k --quiet"
    start=$(date +%s%N)
    "$bin" run --target cuda:0 --probes "$probes" --out "$out/run$k" --quiet > "$out/run$k.summary.txt" 2>&1
    echo "exit $?"
    echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
  done
  echo "== repeatability table"
  python3 "$here/../../../scripts/repeatability_table.py" "$out" --md "$out/table.md" --json "$out/table.json" || echo "table failed: $?"
  echo "== durations of the new probes (s), run1 and run2"
  python3 - "$out" > "$out/durations.txt" <<'EOF' || echo "durations failed: $?"
import json, sys
out = sys.argv[1]
new = ["smem", "atomics", "levelbw", "inflight"]
for run in ("run1", "run2"):
    try:
        r = json.load(open(f"{out}/{run}/results.json"))
    except Exception as e:
        print(run, "unreadable:", e)
        continue
    total = 0.0
    for k in new:
        p = r["probes"].get(f"{k}@cuda:0", {})
        d = p.get("duration_s", float("nan"))
        total += d
        print(f"{run} {k:10s} {p.get('status', '?'):8s} {d:7.2f} s {p.get('reason', '')}")
    print(f"{run} total of the new probes {total:.2f} s")
EOF
  cat "$out/durations.txt"
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  echo "== second opinion: $nvcc -O3 -arch=sm_90 -o $out/smem_check $here/smem_check.cu"
  if "$nvcc" -O3 -arch=sm_90 -o "$out/smem_check" "$here/smem_check.cu"; then
    timeout 60 "$out/smem_check" > "$out/smem_check.json"; echo "exit $?"
    cat "$out/smem_check.json"
  else
    echo "nvcc failed: $?"
  fi
  echo "== compare (run1 against the second opinion)"
  python3 - "$out" > "$out/compare.txt" <<'EOF' || echo "compare failed: $?"
import json, sys
out = sys.argv[1]
r = json.load(open(f"{out}/run1/results.json"))
f = r["findings"]
try:
    c = json.load(open(f"{out}/smem_check.json"))
except Exception as e:
    c = {}
    print("no second opinion:", e)
def cyc(k):
    v = f.get(k, {})
    return v.get("cycles")
print(f"shared load latency, cycles: memscope {cyc('smem.load_latency_ns')}  second opinion {c.get('chase_cycles')}")
print(f"shared atomic latency, cycles: memscope {cyc('atomics.shared_latency_ns')}  second opinion {c.get('atomic_cycles')}")
print(f"shared bandwidth, B/cycle/SM: memscope {f.get('smem.bandwidth_bytes_per_cycle_per_sm', {}).get('value')}  second opinion {c.get('bw_bytes_per_cycle')}")
print(f"banks {f.get('smem.banks', {}).get('value')} of {f.get('smem.bank_width_bytes', {}).get('value')} bytes ({f.get('smem.banks', {}).get('confidence')})")
m = r["series"].get("smem.conflict_by_stride", {}).get("y", [])
o = c.get("stride_cycles", [])
print("stride  memscope  second-opinion  (cycles per warp access)")
for i in range(max(len(m), len(o))):
    a = f"{m[i]:8.2f}" if i < len(m) else "       -"
    b = f"{o[i]:8.2f}" if i < len(o) else "       -"
    print(f"{i + 1:6d}  {a}  {b}")
EOF
  cat "$out/compare.txt"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  echo "== $(date -u +%FT%TZ) done"
} 2>&1 | tee "$out/log.txt"
