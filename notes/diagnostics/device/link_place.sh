#!/usr/bin/env bash
# Issue 16 diagnostic: is the spread of the pageable and bidirectional link lines a property of the
# process (its CPU, its context) or of each host allocation? Builds notes/diagnostics/device/link_place.cu into
# OUTDIR; runs `alloc` in 3 processes (3 contexts x 4 pageable buffers x 3 pinned pairs each), then
# `cpu` under taskset -c K for every CPU K, twice over; OUTDIR/summary.txt tabulates the medians.
# BINARY is not used (kept for the scripts/device calling convention).
# Usage: bash notes/diagnostics/device/link_place.sh BINARY OUTDIR   (about 2-3 minutes on the H200)
set -u
BIN=${1:?usage: link_place.sh BINARY OUTDIR}
OUT=${2:?usage: link_place.sh BINARY OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
: "$BIN"
mkdir -p "$OUT"
t0=$(date +%s)
if ! nvcc -O3 -arch=sm_90 -o "$OUT/link_place" "$HERE/link_place.cu" > "$OUT/build.log" 2>&1; then
  echo "build failed:"; cat "$OUT/build.log"; exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s" | tee "$OUT/steps.log"
for i in 1 2 3; do
  t0=$(date +%s)
  timeout 100 "$OUT/link_place" alloc "proc$i" > "$OUT/alloc$i.txt" 2>&1
  echo "alloc$i exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
done
n=$(nproc)
for pass in 1 2; do
  for k in $(seq 0 $((n - 1))); do
    timeout 30 taskset -c "$k" "$OUT/link_place" cpu "pass$pass-cpu$k" >> "$OUT/cpu.txt" 2>&1
  done
  echo "cpu pass $pass done at $(date +%T)" | tee -a "$OUT/steps.log"
done
python3 - "$OUT" > "$OUT/summary.txt" 2>&1 <<'PY'
import collections, re, sys
out = sys.argv[1]
rows = []
for f in ["alloc1.txt", "alloc2.txt", "alloc3.txt", "cpu.txt"]:
    try:
        for ln in open(f"{out}/{f}"):
            m = re.match(r"(\S+) round=(\d+) buf=(\S+) cpu=(\d+) (\S+) :: med=([0-9.]+) min=([0-9.]+) max=([0-9.]+)", ln)
            if m:
                rows.append(m.groups())
    except OSError:
        pass
metrics = sorted({r[4] for r in rows})
print("== alloc mode: median GB/s per buffer; columns = buffers of one context; rows = process/round")
for met in metrics:
    print(f"-- {met}")
    by = collections.OrderedDict()
    for lab, rnd, buf, cpu, m, med, mn, mx in rows:
        if m == met and lab.startswith("proc"):
            by.setdefault(f"{lab} r{rnd} cpu{cpu}", []).append(f"{float(med):7.2f}")
    for k, v in by.items():
        print(f"   {k:<18} {' '.join(v)}")
print("== cpu mode: median GB/s per CPU (pass1 / pass2)")
cpu = collections.defaultdict(dict)
for lab, rnd, buf, c, m, med, mn, mx in rows:
    mm = re.match(r"pass(\d)-cpu(\d+)", lab)
    if mm:
        cpu[m].setdefault(int(mm.group(2)), {})[mm.group(1)] = float(med)
for met in metrics:
    if met not in cpu:
        continue
    print(f"-- {met}")
    print("   " + "  ".join(f"{k}:{v.get('1', 0):.1f}/{v.get('2', 0):.1f}" for k, v in sorted(cpu[met].items())))
PY
cat "$OUT/summary.txt"
