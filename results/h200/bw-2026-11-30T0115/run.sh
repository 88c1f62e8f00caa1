#!/usr/bin/env bash
# The bandwidth comparison (issue 5) and the L1 carveout check, run on the GPU machine with a
# memscope binary built elsewhere:
#   here:  cargo build --release -p memscope && mkdir -p target/gpu-run && strip -o target/gpu-run/memscope target/release/memscope
#   there: bash results/h200/bw-2026-11-30T0115/run.sh target/gpu-run/memscope OUTDIR
# 1. the L1 probes with the chase kernels' shared-memory carveout 0 (the default now);
# 2. pair 1: the bw probe, then scripts/pytorch_bw.py; 3. pair 2: scripts/pytorch_bw.py, then the
# bw probe (the order swapped, so neither side always runs second on a warmer GPU).
# (attempt1/ is the first run of this folder, with an earlier version of this script: see README.md.)
# Never changes clocks, power or modes.
set -uo pipefail
bin=${1:?usage: run.sh MEMSCOPE OUTDIR}
out=${2:?usage: run.sh MEMSCOPE OUTDIR}
mkdir -p "$out"
smi() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1 || true; }
ms_bw() {
  echo "== $bin run --target cuda:0 --probes bw --out $out/$1 --quiet"; smi
  s=$(date +%s%N); timeout 120 "$bin" run --target cuda:0 --probes bw --out "$out/$1" --quiet; echo "exit $? wall_ms $(( ($(date +%s%N) - s) / 1000000 ))"
}
pt_bw() {
  echo "== python3 scripts/pytorch_bw.py --out $out/$1"; smi
  timeout 60 python3 scripts/pytorch_bw.py --out "$out/$1" >/dev/null; echo "exit $?"
}
{
  echo "== $(date -u +%FT%TZ) host $(hostname)"; smi
  echo "== $bin run --target cuda:0 --probes line,latency,ways,index,sets --out $out/l1 --quiet"
  timeout 60 "$bin" run --target cuda:0 --probes line,latency,ways,index,sets --out "$out/l1" --quiet; echo "exit $?"
  ms_bw bw1; pt_bw pytorch1.json
  pt_bw pytorch2.json; ms_bw bw2
  smi; echo "== $(date -u +%FT%TZ) done"
  python3 "$(dirname "$0")/compare.py" "$out"
} 2>&1 | tee "$out/log.txt"
