#!/usr/bin/env bash
# The bandwidth comparison (issue 5) and the L1 carveout check, run on the GPU machine with a
# memscope binary built elsewhere:
#   here:  cargo build --release -p memscope && mkdir -p target/gpu-run && strip -o target/gpu-run/memscope target/release/memscope
#          scripts/gpu-test.sh --build   (test binaries, stripped, in target/gpu-bin)
#   there: bash results/h200/bw-2026-11-30T0115/run.sh target/gpu-run/memscope OUTDIR
# 1. the L1 probes with the driver's own shared-memory carveout (MEMSCOPE_CHASE_CARVEOUT=default);
# 2. pair 1: every GPU probe but l2.slices (chase carveout 0), then scripts/pytorch_bw.py;
# 3. pair 2: the bw probe alone, then scripts/pytorch_bw.py; 4. the GPU tests.
# Never changes clocks, power or modes.
set -uo pipefail
bin=${1:?usage: run.sh MEMSCOPE OUTDIR}
out=${2:?usage: run.sh MEMSCOPE OUTDIR}
mkdir -p "$out"
probes=line,latency,evset,ways,tlb,indexing,index,sets,l2ways,l2policy,dram,launch,bw,store,fence,coalesce,peak
smi() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1 || true; }
{
  echo "== $(date -u +%FT%TZ) host $(hostname)"; smi
  echo "== 1: MEMSCOPE_CHASE_CARVEOUT=default $bin run --target cuda:0 --probes line,latency,evset,ways,index,sets --out $out/l1-default --quiet"
  MEMSCOPE_CHASE_CARVEOUT=default timeout 90 "$bin" run --target cuda:0 --probes line,latency,evset,ways,index,sets --out "$out/l1-default" --quiet; echo "exit $?"
  echo "== 2a: $bin run --target cuda:0 --probes $probes --out $out/run1 --quiet"
  s=$(date +%s%N); timeout 150 "$bin" run --target cuda:0 --probes "$probes" --out "$out/run1" --quiet; echo "exit $? wall_ms $(( ($(date +%s%N) - s) / 1000000 ))"
  echo "== 2b: python3 scripts/pytorch_bw.py --out $out/pytorch1.json"; smi
  timeout 60 python3 scripts/pytorch_bw.py --out "$out/pytorch1.json" >/dev/null; echo "exit $?"
  echo "== 3a: $bin run --target cuda:0 --probes bw --out $out/bw2 --quiet"; smi
  s=$(date +%s%N); timeout 90 "$bin" run --target cuda:0 --probes bw --out "$out/bw2" --quiet; echo "exit $? wall_ms $(( ($(date +%s%N) - s) / 1000000 ))"
  echo "== 3b: python3 scripts/pytorch_bw.py --out $out/pytorch2.json"; smi
  timeout 60 python3 scripts/pytorch_bw.py --out "$out/pytorch2.json" >/dev/null; echo "exit $?"
  smi
  echo "== 4: scripts/gpu-test.sh > $out/gpu-test.log"
  if [ -d target/gpu-bin ]; then timeout 90 bash scripts/gpu-test.sh >"$out/gpu-test.log" 2>&1; echo "exit $?"; grep -E "test result|FAILED|panicked" "$out/gpu-test.log"; fi
  echo "== $(date -u +%FT%TZ) done"
  python3 "$(dirname "$0")/compare.py" "$out"
} 2>&1 | tee "$out/log.txt"
