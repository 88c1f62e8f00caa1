#!/usr/bin/env bash
# Issue 25 (l2bw below a public L2 benchmark): an independent all-SM read-bandwidth sweep over
# footprints 1-48 MiB (plus 256 MiB, DRAM) for several kernel designs, compiled by nvcc from
# notes/diagnostics/device/l2read_variants.cu (the design legend is at the top of that file and in the
# output). BIN (the memscope binary) is not used; it is taken for the common calling form.
#   bash notes/diagnostics/device/l2read_variants.sh target/gpu-run/memscope OUTDIR
# Writes OUTDIR/l2read_variants.txt (the table, best design per footprint, plausibility lines)
# and OUTDIR/log.txt. Never changes clocks, power or modes. Device time about 10-20 s (limit 90 s).
set -u
bin=${1:?usage: l2read_variants.sh MEMSCOPE_BINARY OUTDIR}
out=${2:?usage: l2read_variants.sh MEMSCOPE_BINARY OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
log="$out/log.txt"
{
  echo "== $(date -u +%FT%TZ) host $(hostname) (memscope binary $bin not used)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  echo "== $nvcc_bin -O3 -arch=sm_90 -o $out/l2read_variants $here/l2read_variants.cu"
  if "$nvcc_bin" -O3 -arch=sm_90 -o "$out/l2read_variants" "$here/l2read_variants.cu"; then
    start=$(date +%s%N)
    timeout 90 "$out/l2read_variants" > "$out/l2read_variants.txt"
    echo "exit $?"
    echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
    cat "$out/l2read_variants.txt"
  else
    echo "nvcc failed"
  fi
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  echo "== $(date -u +%FT%TZ) done"
} 2>&1 | tee "$log"
