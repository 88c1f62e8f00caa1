#!/usr/bin/env bash
# Issue 16 on the GPU machine: the host <-> device link probe twice (repeatability), PyTorch's
# pinned and pageable copies between them (the peer), the comparison, the nvbandwidth-layout
# export, the HTML report, the link as nvidia-smi sees it, bw once (the copy engine's device-local
# copy, bw.copy_ce), and a parallel two-target run (the GPU beside a simulated GPU: one thread
# each). The peer matrix is waived on one GPU (the probe record says why).
# Usage: notes/diagnostics/device/link.sh BINARY OUTDIR      (under 4 minutes on the H200)
set -u
BIN=${1:?usage: link.sh BINARY OUTDIR}
OUT=${2:?usage: link.sh BINARY OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
export MEMSCOPE_NO_SCHEDULER=1
step() { echo "+ $*" | tee -a "$OUT/steps.log"; }
run() {
  step "$@"
  local t0 rc
  t0=$(date +%s)
  "$@"
  rc=$?
  echo "  exit $rc after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
  return 0
}

step "link info (nvidia-smi)"
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
grep -i -A3 "link" "$OUT/nvidia-smi-q.txt" > "$OUT/nvidia-smi-link.txt" 2>&1
nvidia-smi topo -m > "$OUT/nvidia-smi-topo.txt" 2>&1
nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max \
  --format=csv > "$OUT/nvidia-smi-pcie.csv" 2>&1

run "$BIN" run --target cuda:0 --probes link,peer --quiet --out "$OUT/run1" > "$OUT/run1.log" 2>&1
run python3 "$HERE/../../../scripts/pytorch_link.py" --out "$OUT/pytorch_link.json" > /dev/null 2> "$OUT/pytorch_link.log"
run "$BIN" run --target cuda:0 --probes link,peer --quiet --out "$OUT/run2" > "$OUT/run2.log" 2>&1
run python3 "$HERE/../../../scripts/link_compare.py" "$OUT/run1/results.json" "$OUT/run2/results.json" "$OUT/pytorch_link.json" \
  > "$OUT/compare.txt" 2>&1
run "$BIN" export nvbandwidth "$OUT/run1/results.json" > "$OUT/nvbandwidth-layout.txt" 2>&1
run "$BIN" report "$OUT/run1/results.json" --html "$OUT/report-link.html" > /dev/null 2>&1
run "$BIN" run --target cuda:0 --probes bw --quiet --out "$OUT/bw" > "$OUT/bw.log" 2>&1
run "$BIN" run --target cuda:0,sim:rtx4090 --probes line,link --quick --quiet --out "$OUT/parallel" \
  > "$OUT/parallel.log" 2>&1
# What to read first.
{
  echo "== probe records (status, seconds, reason)"
  for r in run1 run2 bw parallel; do
    for f in "$OUT/$r"/results*.json; do
      python3 - "$f" "$r" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
for k, p in d.get("probes", {}).items():
    print(sys.argv[2], k, p["status"], round(p.get("duration_s", 0), 2), p.get("reason") or "")
if "gpu_lanes" in d.get("environment", {}):
    print(sys.argv[2], "gpu_lanes", json.dumps(d["environment"]["gpu_lanes"])[:300])
PY
    done
  done
  echo "== bw.copy_ce vs bw.copy"
  python3 -c "import json; f=json.load(open('$OUT/bw/results.json'))['findings']; [print(k, f[k]['value']) for k in ('bw.copy_bytes_per_s','bw.copy_ce_bytes_per_s') if k in f]" 2>&1
  echo "== compare"; cat "$OUT/compare.txt"
  echo "== nvbandwidth layout"; cat "$OUT/nvbandwidth-layout.txt"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
