#!/usr/bin/env bash
# Sectors per request versus stride from Nsight Compute's counters (seed 000 footnote 1), the
# counter-based companion of the timing-based `coalesce` probe. Profiles the probe's own kernel
# (coalesce_load, 4-byte ld.global.cg per lane at stride s words) under ncu with the clocks left
# alone (--clock-control none) and prints one line per stride:
#   stride_bytes requests sectors sectors_per_request
# Usage (on a GPU machine with ncu, as root): scripts/ncu-coalesce.sh [MEMSCOPE_BINARY] [OUT.csv]
set -euo pipefail
bin="${1:-target/release/memscope}"
out="${2:-ncu-coalesce.csv}"
ncu_bin="$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)"
[ -n "$ncu_bin" ] || { echo "ncu-coalesce: ncu not found" >&2; exit 2; }
tmp="$(mktemp -d)"
"$ncu_bin" --clock-control none --kernel-name coalesce_load --csv \
  --metrics l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum \
  "$bin" run --target cuda:0 --probes coalesce --quick -q --out "$tmp" > "$tmp/ncu.csv"
# The probe launches, per stride in order 1,2,4,8,16,32,64 words: 1 warm-up + 3 timed (--quick).
python3 - "$tmp/ncu.csv" "$out" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr = rows[0]; data = rows[1:]
iid, iname, ival = hdr.index("ID"), hdr.index("Metric Name"), hdr.index("Metric Value")
per = {}
for r in data:
    per.setdefault(int(r[iid]), {})[r[iname]] = float(r[ival].replace(",", ""))
strides = [1, 2, 4, 8, 16, 32, 64]
ids = sorted(per)
with open(sys.argv[2], "w") as f:
    f.write("stride_bytes,requests,sectors,sectors_per_request\n")
    for n, s in enumerate(strides):
        m = per[ids[n * 4 + 1]]  # first timed launch of this stride
        req = m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
        sec = m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
        line = f"{s*4},{req:.0f},{sec:.0f},{sec/req:.3f}"
        print(line); f.write(line + "\n")
PY
rm -rf "$tmp"
