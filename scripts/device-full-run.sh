#!/usr/bin/env bash
# The full characterization of a GPU machine, as committed under results/<gpu>/: run on the GPU
# machine with a memscope binary built elsewhere (the GPU machine may have no Rust toolchain).
#   here:  cargo build --release -p memscope && strip -o target/gpu-run/memscope target/release/memscope
#   there: bash scripts/device-full-run.sh target/gpu-run/memscope OUTDIR
# Writes OUTDIR/{run1,run2}/results.json (run1: every GPU and the host CPU, all probes; run2: the
# GPU again, for run-to-run agreement), OUTDIR/pytorch_bw.json and pytorch_bw2.json (PyTorch's
# sum/fill/copy right after run1 and right after run2, when PyTorch is there) and OUTDIR/log.txt.
# Never changes clocks, power or modes.
set -uo pipefail
bin=${1:?usage: device-full-run.sh MEMSCOPE_BINARY OUTDIR}
out=${2:?usage: device-full-run.sh MEMSCOPE_BINARY OUTDIR}
mkdir -p "$out/run1" "$out/run2"
log="$out/log.txt"
{
  echo "== $(date -u +%FT%TZ) host $(hostname), $(nproc) CPUs"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  echo "== run1: $bin run --out $out/run1 --quiet   (default targets: every GPU and the CPU)"
  start=$(date +%s%N)
  "$bin" run --out "$out/run1" --quiet; echo "exit $?"
  echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
  if python3 -c 'import torch' 2>/dev/null && [ -f scripts/pytorch_bw.py ]; then
    echo "== PyTorch bandwidth right after run1"
    python3 scripts/pytorch_bw.py --out "$out/pytorch_bw.json"; echo "exit $?"
  fi
  echo "== run2: $bin run --target cuda:0 --out $out/run2 --quiet"
  start=$(date +%s%N)
  "$bin" run --target cuda:0 --out "$out/run2" --quiet; echo "exit $?"
  echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
  if python3 -c 'import torch' 2>/dev/null && [ -f scripts/pytorch_bw.py ]; then
    echo "== PyTorch bandwidth right after run2"
    python3 scripts/pytorch_bw.py --out "$out/pytorch_bw2.json"; echo "exit $?"
  fi
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  echo "== $(date -u +%FT%TZ) done"
} 2>&1 | tee "$log"
