#!/usr/bin/env bash
# Issue 25 (constant cache, read-only/texture path, what shares L1, miss penalties) on the GPU
# machine: the memscope probes twice (repeatability within 2 % is the bar) and an independent
# constant-cache chase compiled by nvcc (notes/diagnostics/device/constmem_check.cu) as the second opinion.
#   bash notes/diagnostics/device/constmem.sh target/gpu-run/memscope OUTDIR
# Writes OUTDIR/run1, OUTDIR/run2 (results.json of constmem, texture, l1share, penalty and what
# they need: line, latency), OUTDIR/constmem_check.json, OUTDIR/summary.txt and OUTDIR/log.txt.
# Never changes clocks, power or modes. Keeps going after a failed step. Under 4 minutes.
set -u
bin=${1:?usage: constmem.sh MEMSCOPE_BINARY OUTDIR}
out=${2:?usage: constmem.sh MEMSCOPE_BINARY OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
log="$out/log.txt"
probes=constmem,texture,l1share,penalty
{
  echo "== $(date -u +%FT%TZ) host $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  for r in 1 2; do
    echo "== run$r: $bin run --target cuda:0 --probes $probes --out $out/run$r --quiet"
    start=$(date +%s%N)
    timeout 100 "$bin" run --target cuda:0 --probes "$probes" --out "$out/run$r" --quiet
    echo "exit $?"
    echo "wall_ms $(( ($(date +%s%N) - start) / 1000000 ))"
  done
  echo "== second opinion: nvcc constmem_check.cu"
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if "$nvcc_bin" -O3 -arch=sm_90 -o "$out/constmem_check" "$here/constmem_check.cu"; then
    timeout 60 "$out/constmem_check" > "$out/constmem_check.json"
    echo "exit $?"
    cat "$out/constmem_check.json"
  else
    echo "nvcc failed"
  fi
  echo "== summary"
  python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, os, sys
out = sys.argv[1]
runs = []
for r in ("run1", "run2"):
    try:
        runs.append(json.load(open(os.path.join(out, r, "results.json"))))
    except Exception as e:
        print(f"{r}: no results ({e})")
prefixes = ("const.", "tex.", "l1.shared_with", "l1.instances_per_sm", "l1.miss_penalty", "l2.miss_penalty",
            "l2.far_penalty", "l1.hit_latency", "l2.hit_latency", "l1.sector_bytes", "l1.capacity", "dram.latency")
keys = sorted({k for d in runs for k in d.get("findings", {}) if k.startswith(prefixes)})
for k in keys:
    vals = [d["findings"].get(k, {}) for d in runs]
    v = [f.get("value") for f in vals]
    cyc = [f.get("cycles") for f in vals]
    line = f"{k:34s} " + "  ".join(str(round(x, 3)) if isinstance(x, float) else json.dumps(x) for x in v)
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v) and len(v) == 2 and v[0]:
        line += f"   run-to-run {100 * abs(v[1] - v[0]) / abs(v[0]):.2f}%"
    if cyc and cyc[0] is not None:
        line += f"   cycles {cyc[0]:.1f}"
    conf = vals[0].get("confidence")
    line += f"   [{conf}]"
    print(line)
    if vals[0].get("note") and (k.endswith("shared_with") or k.endswith("instances_per_sm") or vals[0].get("value") is None):
        print("    note:", vals[0]["note"])
for d, r in zip(runs, ("run1", "run2")):
    for p, s in d.get("probes", {}).items():
        if p.split("@")[0] in ("constmem", "texture", "l1share", "penalty"):
            print(f"{r} {p}: {s.get('status')} {s.get('duration_s', 0):.2f} s {s.get('reason', '')}")
try:
    chk = json.load(open(os.path.join(out, "constmem_check.json")))
    pts = chk["points"]
    print(f"second opinion (constmem_check.cu, clock {chk['clock_ghz']:.3f} GHz): footprint -> cycles/hop LDC (uniform ULDC)")
    for p in pts:
        print(f"  {p['footprint_bytes']:6d} B: {p['cycles_per_hop']:7.2f} ({p['uniform_cycles_per_hop']:7.2f})  {p['ns_per_hop']:.2f} ns")
    if runs:
        f = runs[0]["findings"]
        for k, lo, hi in (("const.l1.hit_latency_ns", 0, 1024), ("const.l1_5.hit_latency_ns", 16384, 65536)):
            ours = f.get(k, {}).get("value")
            sel = [p["ns_per_hop"] for p in pts if lo <= p["footprint_bytes"] <= hi]
            if ours and sel:
                sel.sort()
                theirs = sel[len(sel) // 2]
                print(f"  {k}: memscope {ours:.2f} ns, constmem_check {theirs:.2f} ns ({lo}-{hi} B), {100 * (theirs - ours) / ours:+.1f}%")
except Exception as e:
    print(f"second opinion: none ({e})")
PY
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 || true
  echo "== $(date -u +%FT%TZ) done"
} 2>&1 | tee "$log"
