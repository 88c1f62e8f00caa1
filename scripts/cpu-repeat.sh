#!/usr/bin/env bash
# The CPU lane's capacities over repeated runs (docs/TRUST.md, "The CPU lane's capacities on a
# shared machine"): N quick and N full `memscope run --target cpu` runs, alternating (quick-1,
# full-1, quick-2, ...), the load average before each and the hypervisor's steal during each, then cpu_repeat_table.py's table of the
# L1d, L2 and L3 capacities (undetermined ones with their reason) and their spread per mode.
#   bash scripts/cpu-repeat.sh MEMSCOPE_BINARY OUTDIR [N=5]
# Writes OUTDIR/{quick,full}-K/results.json, OUTDIR/log.txt, OUTDIR/table.md and OUTDIR/pack/
# (table.md, log.txt.gz and each run's results as NAME.json.gz: what results/dev-cpu/
# cpu-lane-repeat keeps). Build the binary first (`cargo build --release -p memscope`, then
# target/release/memscope). Run it on a quiet machine: other processes on the same core or its
# sibling evict the chase's lines (the lane then says undetermined rather than give a number that
# moves).
set -uo pipefail
bin=${1:?usage: cpu-repeat.sh MEMSCOPE_BINARY OUTDIR [N]}
out=${2:?usage: cpu-repeat.sh MEMSCOPE_BINARY OUTDIR [N]}
n=${3:-5}
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$bin" ]; then
  echo "cpu-repeat.sh: no executable memscope binary at '$bin' (build it: cargo build --release -p memscope)" >&2
  exit 2
fi
case "$n" in ''|*[!0-9]*) echo "cpu-repeat.sh: N must be a positive integer, got '$n'" >&2; exit 2 ;; esac
mkdir -p "$out"
log="$out/log.txt"
# The hypervisor's steal (time a runnable vCPU waited while the host ran something else on its
# core), summed over the guest's CPUs from /proc/stat, in clock ticks; 0 where not accounted.
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
steal_ticks() { awk '/^cpu /{print $9+0; exit}' /proc/stat 2>/dev/null || echo 0; }
{
  echo "== $(date -u +%FT%TZ) host $(hostname), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo); $("$bin" --version 2>&1)"
  for d in /sys/devices/system/cpu/cpu0/cache/index*; do
    echo "sysfs $(basename "$d"): L$(cat "$d/level") $(cat "$d/type") $(cat "$d/size") shared $(cat "$d/shared_cpu_list")"
  done
  for k in $(seq 1 "$n"); do
    for mode in quick full; do
      flag=()
      if [ "$mode" = quick ]; then flag=(--quick); fi
      dir="$out/$mode-$k"
      echo "== $mode-$k $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg): $bin run --target cpu ${flag[*]} --quiet --out $dir"
      start=$(date +%s%N); steal0=$(steal_ticks)
      "$bin" run --target cpu "${flag[@]}" --quiet --out "$dir"; echo "exit $?"
      echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
      echo "steal_ms $(( ($(steal_ticks) - steal0) * 1000 / hz ))"
    done
  done
} 2>&1 | tee "$log"
python3 "$here/cpu_repeat_table.py" "$out" | tee "$out/table.md"
mkdir -p "$out/pack"
cp "$out/table.md" "$out/pack/table.md"
gzip -9c "$log" > "$out/pack/log.txt.gz"
for d in "$out"/quick-* "$out"/full-*; do
  [ -f "$d/results.json" ] && gzip -9c "$d/results.json" > "$out/pack/$(basename "$d").json.gz"
done
