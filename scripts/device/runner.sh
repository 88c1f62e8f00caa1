#!/usr/bin/env bash
# Issue 24 (the run loop moved into crates/session) on the GPU machine: `memscope run` on the GPU
# and the CPU (--quick), a GPU beside a simulated GPU (the parallel lanes), and a fault injected
# in the line probe (the remaining probes continue in a fresh process); then a check of each
# results file: statuses, findings tagged by target, the NVML snapshots around the GPU, the CPU
# lane record, the continuation message.
# Usage: scripts/device/runner.sh BINARY OUTDIR      (about 2-3 minutes on the H200)
set -u
BIN=${1:?usage: runner.sh BINARY OUTDIR}
OUT=${2:?usage: runner.sh BINARY OUTDIR}
mkdir -p "$OUT"
export MEMSCOPE_NO_SCHEDULER=1
step() { echo "+ $*" | tee -a "$OUT/steps.log"; }
run() {
  local name=$1
  shift
  step "$@"
  local t0 rc
  t0=$(date +%s)
  "$@" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"
  rc=$?
  echo "  exit $rc after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
  echo "$rc" > "$OUT/$name.rc"
  return 0
}

run gpu_cpu timeout 150 "$BIN" run --target cuda:0,cpu --quick --quiet --out "$OUT/run"
run gpu_sim timeout 60 "$BIN" run --target cuda:0,sim:rtx4090 --probes line,latency --quick --quiet --out "$OUT/parallel"
run fault env MEMSCOPE_FAULT_IN_PROBE=line timeout 60 "$BIN" run --target cuda:0 --probes latency,line,indexing \
  --quick --quiet --out "$OUT/fault"

step "check the results files"
python3 - "$OUT" <<'PY' 2>&1 | tee "$OUT/checks.txt"
import json, os, sys
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(os.path.join(out, p)))
    except Exception as e:
        print(f"CANNOT READ {p}: {e}")
        return None
def check(name, ok):
    print(("ok   " if ok else "FAIL ") + name)
d = load("run/results.json")
if d:
    env = d["environment"]
    check("run: finished", (d.get("run") or {}).get("state") == "finished")
    check("run: targets cuda:0 then cpu", [t["id"] for t in d["targets"]] == ["cuda:0", "cpu"])
    check("run: nvml_cuda:0_before and _after", "nvml_cuda:0_before" in env and "nvml_cuda:0_after" in env)
    check("run: cpu_lane recorded", "cpu_lane" in env)
    check("run: every finding tagged cuda:0 or cpu", all(f.get("target") in ("cuda:0", "cpu") for f in d["findings"].values()))
    st = {}
    for k, p in d["probes"].items():
        st[p["status"]] = st.get(p["status"], 0) + 1
    print("     statuses:", st, "findings:", len(d["findings"]))
    for k, p in d["probes"].items():
        if p["status"] == "failed":
            print("     failed:", k, (p.get("reason") or "")[:200])
p = load("parallel/results.json")
q = load("parallel/results-sim-rtx4090.json")
if p and q:
    check("parallel: gpu_lanes recorded", "gpu_lanes" in p["environment"])
    check("parallel: sim findings tagged sim:rtx4090", all(f.get("target") == "sim:rtx4090" for f in q["findings"].values()))
    check("parallel: results-all.json", os.path.exists(os.path.join(out, "parallel/results-all.json")))
f = load("fault/results.json")
if f:
    pr = f["probes"]
    line = [v for k, v in pr.items() if k.startswith("line@")]
    check("fault: line failed with a CUDA error", bool(line) and "CUDA_ERROR" in (line[0].get("reason") or ""))
    check("fault: latency ok", any(v["status"] == "ok" for k, v in pr.items() if k.startswith("latency@")))
    check("fault: indexing recorded (ran in the fresh process)", any(k.startswith("indexing@") for k in pr))
    err = open(os.path.join(out, "fault.stderr")).read()
    check("fault: exit 1", open(os.path.join(out, "fault.rc")).read().strip() == "1")
    check("fault: continuation message", "the remaining probes ran in a fresh process" in err)
PY
echo "done" | tee -a "$OUT/steps.log"
