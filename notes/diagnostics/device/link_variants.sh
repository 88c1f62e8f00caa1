#!/usr/bin/env bash
# Issue 16 diagnostic: why the link probe's pageable copies and host round trip vary between runs.
# Builds notes/diagnostics/device/link_variants.cu (standalone, CUDA runtime API) into OUTDIR, records the
# host's THP, CPU and NUMA setup, then runs the program 3 times as separate processes and once more
# under `taskset -c 2`; OUTDIR/summary.txt sets each measurement's median side by side per run with
# the spread over runs 1-3. BINARY is not used (kept for the scripts/device calling convention).
# Usage: bash notes/diagnostics/device/link_variants.sh BINARY OUTDIR   (about 60-80 s on the H200, build included)
set -u
BIN=${1:?usage: link_variants.sh BINARY OUTDIR}
OUT=${2:?usage: link_variants.sh BINARY OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
: "$BIN"
mkdir -p "$OUT"
{
  echo "== date"; date -u +%FT%TZ
  for f in enabled defrag khugepaged/defrag; do
    echo "== /sys/kernel/mm/transparent_hugepage/$f"; cat "/sys/kernel/mm/transparent_hugepage/$f"
  done
  echo "== nproc"; nproc
  echo "== lscpu"; lscpu
  echo "== numactl -H"; if command -v numactl > /dev/null; then numactl -H; else echo "numactl not installed"; fi
  echo "== scaling_governor (count per value)"
  cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor 2> /dev/null | sort | uniq -c
  echo "== cpu MHz"; grep MHz /proc/cpuinfo | sort | uniq -c
  echo "== numa_balancing"; cat /proc/sys/kernel/numa_balancing
  echo "== nvidia-smi topo -m"; nvidia-smi topo -m
} > "$OUT/env.txt" 2>&1
t0=$(date +%s)
if ! nvcc -O3 -arch=sm_90 -o "$OUT/link_variants" "$HERE/link_variants.cu" > "$OUT/build.log" 2>&1; then
  echo "build failed:"; cat "$OUT/build.log"; exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s" | tee "$OUT/steps.log"
for i in 1 2 3; do
  t0=$(date +%s)
  timeout 120 "$OUT/link_variants" "run$i" > "$OUT/run$i.txt" 2>&1
  echo "run$i exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
done
t0=$(date +%s)
timeout 120 taskset -c 2 "$OUT/link_variants" taskset2 > "$OUT/taskset2.txt" 2>&1
echo "taskset2 exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
python3 - "$OUT" > "$OUT/summary.txt" 2>&1 <<'PY'
import re, sys
out = sys.argv[1]
runs = ["run1", "run2", "run3", "taskset2"]
keys, med = [], {}
for r in runs:
    try:
        lines = open(f"{out}/{r}.txt").read().splitlines()
    except OSError:
        continue
    for ln in lines:
        if ln.startswith(("start", "end", "madvise", "check")):
            print(f"[{r}] {ln}")
        if " :: " not in ln or ln.startswith("smaps"):
            if ln.startswith("smaps"):
                print(f"[{r}] {ln}")
            continue
        k, v = ln.split(" :: ", 1)
        m = re.search(r"med=([0-9.]+)", v)
        if not m:
            continue
        if k not in med:
            keys.append(k)
            med[k] = {}
        med[k][r] = float(m.group(1))
print("\nmedian per run (GB/s for bandwidth, ns for rtt); spread = (max-min)/min over run1-3")
print(f"{'measurement':<72} " + " ".join(f"{r:>9}" for r in runs) + "   spread")
for k in keys:
    vals = [med[k].get(r) for r in runs]
    three = [x for x in vals[:3] if x is not None]
    sp = f"{100 * (max(three) - min(three)) / min(three):6.1f} %" if len(three) > 1 and min(three) > 0 else "   -"
    print(f"{k:<72} " + " ".join(f"{x:9.2f}" if x is not None else f"{'-':>9}" for x in vals) + f"  {sp}")
PY
cat "$OUT/summary.txt"
