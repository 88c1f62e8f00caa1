#!/usr/bin/env python3
"""Summarize the device call of the fast helper (go.sh beside this): walls, per-probe seconds, launch
floors with their blocks, run A vs B, --quick, link pageable vs PyTorch (per size; memscope's
pageable plateau finding against PyTorch's 1 GiB copy). Usage: summary.py OUTDIR"""
import json, math, os, sys

O = sys.argv[1]


def load(name):
    p = os.path.join(O, name, "results.json")
    if not os.path.exists(p):
        return None
    return json.load(open(p))


def wall(d):
    from datetime import datetime
    e = d["environment"]
    f = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")
    return (f(e["finished_at"]) - f(e["started_at"])).total_seconds()


def val(d, k):
    f = d["findings"].get(k)
    if not f:
        return None
    v = f.get("value")
    return v if isinstance(v, (int, float)) else None


runs = {}
for name in ["runA", "runB", "alone1", "alone2", "alone3", "quick"]:
    d = load(name)
    if d is None:
        print(f"== {name}: missing")
        continue
    runs[name] = d
    ps = sorted(((v.get("duration_s", 0), k.split("@")[0], v["status"]) for k, v in d["probes"].items() if k.endswith("@cuda:0") or k.endswith("@cpu")), reverse=True)
    ok = [(round(s, 2), k) for s, k, st in ps if st == "ok"]
    waived = [k for s, k, st in ps if st == "waived" and "--quick" in (d["probes"][k + "@cuda:0"].get("reason", "") if k + "@cuda:0" in d["probes"] else "")]
    gpu_sum = sum(s for s, k, st in ps if st == "ok" and not k.startswith("cpu."))
    sl = next((s for s, k, st in ps if k == "l2.slices" and st == "ok"), None)
    print(f"== {name}: wall {wall(d):.1f} s ({d['environment']['started_at']} .. {d['environment']['finished_at']}); GPU probes sum {gpu_sum:.1f} s"
          + (f"; with l2.slices at 7 s: {wall(d) - sl + 7:.1f} s" if sl else ""))
    print("  probes:", ", ".join(f"{k} {s}" for s, k in ok))
    if waived:
        print("  left out by --quick:", ", ".join(waived))
    lane = d["environment"].get("cpu_lane")
    if lane:
        print("  cpu_lane:", json.dumps(lane))
    fl = d["findings"].get("launch.floor_s")
    if fl:
        print(f"  launch.floor_s {fl['value']*1e6:.3f} us  spread {json.dumps(fl.get('spread'))}")
        print(f"    method: {fl['method']}")
        print(f"    note: {fl.get('note')}")
        cl = {k.split('.')[2][:-8]: round(v['value'] * 1e6, 3) for k, v in d["findings"].items() if k.startswith("launch.op.") and isinstance(v.get("value"), (int, float))}
        print("  class floors us:", cl)
        note = d["findings"].get("launch.op.add_floor_s", {}).get("note", "")
        print("  class note:", note[-260:])
    if name == "quick":
        fs = d["findings"]
        marked = sum(1 for f in fs.values() if (f.get("note") or "").startswith("quick run"))
        print(f"  findings {len(fs)}, marked quick {marked}")
        for k in ["l1.hit_latency_ns", "l2.hit_latency_ns", "dram.latency_ns", "l1.capacity_bytes", "l2.capacity_bytes",
                  "bw.read_bytes_per_s", "bw.write_bytes_per_s", "bw.copy_bytes_per_s", "peak.fp32_flops_per_s",
                  "launch.floor_s", "link.host_to_device_memcpy_ce_bytes_per_s", "cpu.l1d.hit_latency_ns", "cpu.dram.latency_ns"]:
            f = fs.get(k)
            print(f"    {k} {f.get('value') if f else None} {f.get('confidence') if f else ''}")

if "runA" in runs and "runB" in runs:
    a, b = runs["runA"]["findings"], runs["runB"]["findings"]
    print("== runA vs runB")
    rows = []
    for k in sorted(set(a) & set(b)):
        va, vb = a[k].get("value"), b[k].get("value")
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and not isinstance(va, bool):
            if va != vb and max(abs(va), abs(vb)) > 0:
                rows.append((abs(va - vb) / max(abs(va), abs(vb)) * 100, k, va, vb))
        elif va != vb:
            print("  differs (non-numeric)", k)
    for g in ["latency_ns", "capacity", "ways", "sets", "bw.", "line"]:
        sel = [r for r in rows if g in r[1] and not r[1].startswith("cpu.") and not r[1].startswith("link.")]
        print(f"  max over *{g}* (GPU): {max([r[0] for r in sel], default=0):.3f} % ({len(sel)} differing)")
    for r in sorted(rows, reverse=True)[:25]:
        print(f"  {r[0]:8.3f} %  {r[1]}  {r[2]:.6g}  {r[3]:.6g}")

fl = {n: val(d, "launch.floor_s") for n, d in runs.items()}
print("== launch floor (us):", {n: round(v * 1e6, 3) for n, v in fl.items() if v})
for r in ["runA", "runB"]:
    for al in ["alone1", "alone2", "alone3"]:
        if fl.get(r) and fl.get(al):
            print(f"  {r}/{al}: {fl[r] / fl[al]:.4f}")

print("== link pageable vs PyTorch (memscope / PyTorch)")
ratios = {}
for i in "123":
    p = os.path.join(O, "link", f"link{i}", "results.json")
    q = os.path.join(O, "link", f"pt{i}.json")
    if not (os.path.exists(p) and os.path.exists(q)):
        print("  missing", i)
        continue
    m = json.load(open(p)); t = json.load(open(q))
    for name, pk in [("host_to_device_memcpy_ce_pageable", "pageable_h2d"), ("device_to_host_memcpy_ce_pageable", "pageable_d2h"),
                     ("host_to_device_memcpy_ce", "pinned_h2d"), ("device_to_host_memcpy_ce", "pinned_d2h")]:
        s = m["series"]["link." + name]
        line = []
        for row in t["rows"]:
            by = row["bytes"]
            if by in s["x"]:
                j = s["x"].index(by)
                r = s["y"][j] / row[pk + "_bytes_per_s"]
                ratios.setdefault((name, by), []).append(r)
                line.append(f"{by >> 20}M {s['y'][j] / 1e9:.2f}/{row[pk + '_bytes_per_s'] / 1e9:.2f}={r:.3f}")
            elif "pageable" in name:
                # (pageable copies stop at 256 MiB: the finding, the plateau, against PyTorch's copy)
                v = m["findings"]["link." + name + "_bytes_per_s"]["value"]
                r = v / row[pk + "_bytes_per_s"]
                ratios.setdefault((name + " (finding)", by), []).append(r)
                line.append(f"{by >> 20}M finding {v / 1e9:.2f}/{row[pk + '_bytes_per_s'] / 1e9:.2f}={r:.3f}")
        print(f"  {i} {name}: " + "  ".join(line))
    hm = m["findings"].get("link.host_memcpy_pageable_to_pinned_bytes_per_s", {}).get("value")
    print(f"  {i} host memcpy pageable->pinned {hm / 1e9 if hm else 0:.2f} GB/s")
print("  geometric means over the alternations:")
for (name, by), rs in sorted(ratios.items()):
    g = math.exp(sum(math.log(x) for x in rs) / len(rs))
    print(f"    {name} {by >> 20} MiB: {g:.3f}  (min {min(rs):.3f}, n {len(rs)})")

p = os.path.join(O, "pages.json")
if os.path.exists(p):
    try:
        g = json.load(open(p))
        print("== page kinds (PyTorch, 256 MiB):", json.dumps(g["thp"]), "AnonHugePages kB", json.dumps(g["anon_huge_kib"]))
        print("  medians GB/s:", json.dumps(g["median_gb_s"]))
        for k, v in g.items():
            if "_over_" in k:
                print(f"  {k}: {v}")
    except Exception as e:
        print("== page kinds: unreadable", e)
