import json, sys, datetime, os
o = sys.argv[1]
def load(p):
    try: return json.load(open(p))
    except Exception as e: print("cannot read", p, e); return None
def wall(d):
    e = d["environment"]; f = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")
    return (f(e["finished_at"]) - f(e["started_at"])).total_seconds()
runs = {k: load(f"{o}/{k}/results.json") for k in ("runA", "runB", "launch-alone", "quick")}
for k, d in runs.items():
    if not d: continue
    print(f"== {k}: wall {wall(d)} s  ({d['environment']['started_at']} .. {d['environment']['finished_at']})")
    pr = sorted(((v["duration_s"], kk) for kk, v in d["probes"].items() if v["duration_s"] > 0.05), reverse=True)
    print("  probes:", ", ".join(f"{kk.split('@')[0]} {s:.2f}" for s, kk in pr))
    bad = [kk for kk, v in d["probes"].items() if v["status"] == "failed"]
    if bad: print("  FAILED:", bad)
    cl = d["environment"].get("cpu_lane")
    if cl: print("  cpu_lane:", json.dumps(cl)[:600])
    fl = d["findings"].get("launch.floor_s", {}).get("value")
    print("  launch.floor_s", fl, {x: round(d["findings"][x]["value"] * 1e6, 3) for x in d["findings"] if x.startswith("launch.op.") and isinstance(d["findings"][x].get("value"), float)})
    if k == "quick":
        notes = [f.get("note") or "" for f in d["findings"].values()]
        print("  findings", len(notes), "marked quick", sum(n.startswith("quick run") for n in notes))
        for x in ("l1.hit_latency_ns", "l2.hit_latency_ns", "dram.latency_ns", "l1.capacity_bytes", "l2.capacity_bytes", "bw.read_bytes_per_s", "bw.copy_bytes_per_s", "peak.fp32_flops_per_s", "launch.floor_s"):
            f = d["findings"].get(x); print("   ", x, f and f.get("value"), f and f.get("confidence"))
A, Bd = runs["runA"], runs["runB"]
if A and Bd:
    print("== runA vs runB (numeric findings of cuda:0)")
    worst = []
    for kk, f in A["findings"].items():
        g = Bd["findings"].get(kk)
        if not g: print("  missing in B:", kk); continue
        if f.get("confidence") != g.get("confidence"): print("  confidence differs", kk, f.get("confidence"), g.get("confidence"))
        v, w = f.get("value"), g.get("value")
        if isinstance(v, (int, float)) and isinstance(w, (int, float)) and not isinstance(v, bool) and v:
            worst.append((abs(w - v) / abs(v), kk, v, w))
        elif v != w: print("  differs (non-numeric)", kk)
    worst.sort(reverse=True)
    for r, kk, v, w in worst[:40]: print(f"  {r*100:7.3f} %  {kk}  {v:.6g}  {w:.6g}")
    for kk in ("latency", "capacity", "ways", "line", "slices", "bytes_per_s"):
        sel = [x for x in worst if kk in x[1]]
        if sel: print(f"  max over *{kk}*: {max(x[0] for x in sel)*100:.3f} % ({len(sel)} findings)")
la = runs["launch-alone"]
if la and A and Bd:
    base = la["findings"]["launch.floor_s"]["value"]
    for n, d in (("A", A), ("B", Bd)):
        print(f"== launch floor {n} / alone: {d['findings']['launch.floor_s']['value']/base:.4f}")
print("== link vs PyTorch pageable (memscope / PyTorch), by size")
for r in (1, 2, 3):
    m = load(f"{o}/link/run{r}/results.json"); p = load(f"{o}/link/pt{r}.json")
    if not (m and p): continue
    for t, k in (("host_to_device_memcpy_ce_pageable", "pageable_h2d"), ("device_to_host_memcpy_ce_pageable", "pageable_d2h")):
        s = m["series"]["link." + t]; ms = {int(x): y for x, y in zip(s["x"], s["y"])}
        pv = {row["bytes"]: row[k + "_bytes_per_s"] for row in p["rows"]}
        print(r, t, " ".join(f"{sz>>20}MiB {ms.get(sz,0)/1e9:.2f}/{pv[sz]/1e9:.2f}={ms.get(sz,0)/pv[sz]:.3f}" for sz in sorted(pv)))
    print(r, "memscope link probe", round(m["probes"]["link@cuda:0"]["duration_s"], 2), "s")
v = load(f"{o}/link/pt-variants.json")
if v: print("== PyTorch pageable variants (GB/s medians):", json.dumps(v["median_gb_s"]))
