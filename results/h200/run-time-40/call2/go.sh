#!/usr/bin/env bash
# The fast helper's second device call (from the repository root as `bash .devcarry/fast/go2.sh`,
# binaries in .devcarry/fast/bin): the launch probe alone six times (the 16-block floor), the bw
# probe alone once (8 finalists at the largest size), the launch probe's GPU tests. $OUT/fast2.tgz.
set -u
D=.devcarry/fast
B=$D/bin/memscope
O=/tmp/fast2; rm -rf $O; mkdir -p $O
export MEMSCOPE_NO_SCHEDULER=1
T() { date +%s.%N; }
el() { python3 -c "print(round($(T)-$1,1))"; }
pack() { (cd /tmp && tar czf $OUT/fast2.tgz fast2); }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; $B --version; } > $O/machine.txt 2>&1
for r in 1 2 3 4 5 6; do s=$(T); timeout 25 $B run --target cuda:0 --probes launch --out $O/alone$r --quiet > $O/alone$r.log 2>&1; echo "alone$r rc $? $(el $s) s"; done
s=$(T); timeout 25 $B run --target cuda:0 --probes bw --out $O/bw --quiet > $O/bw.log 2>&1; echo "bw rc $? $(el $s) s"
pack
s=$(T); timeout 30 $D/bin/gpu_model_ceilings-* --test-threads=1 --include-ignored > $O/gpu-test-launch.txt 2>&1; echo "gpu_model_ceilings rc $? $(el $s) s"
grep -E "test result|FAILED|panicked" $O/gpu-test-launch.txt
python3 - $O <<'PY'
import json, os, sys
O = sys.argv[1]
for r in range(1, 7):
    p = os.path.join(O, f"alone{r}", "results.json")
    if not os.path.exists(p):
        print(f"alone{r} missing"); continue
    f = json.load(open(p))["findings"]["launch.floor_s"]
    print(f"alone{r} {f['value']*1e6:.3f} us mad {f['spread']['mad']*1e6:.3f} n {f['spread']['n']} | {f.get('note')}")
p = os.path.join(O, "bw", "results.json")
if os.path.exists(p):
    d = json.load(open(p))
    for k in ["bw.read_bytes_per_s", "bw.write_bytes_per_s", "bw.copy_bytes_per_s", "bw.copy_ce_bytes_per_s"]:
        f = d["findings"][k]
        print(k, round(f["value"] / 1e12, 4), f["method"][:60])
    print("bw duration_s", d["probes"]["bw@cuda:0"]["duration_s"])
PY
pack
