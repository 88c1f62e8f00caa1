#!/usr/bin/env python3
"""Summary of a bw-*/run.sh output folder: memscope bw vs PyTorch per pair and size, L1 findings
with the driver's carveout and with carveout 0."""
import json, os, sys

out = sys.argv[1] if len(sys.argv) > 1 else "."


def load(p):
    try:
        return json.load(open(os.path.join(out, p)))
    except Exception as e:  # a missing file is reported, not fatal
        print(f"{p}: {e}")
        return None


for ms, pt in [("bw1/results.json", "pytorch1.json"), ("bw2/results.json", "pytorch2.json")]:
    m, p = load(ms), load(pt)
    if not m or not p:
        continue
    rows = {r["bytes"]: r for r in p["rows"]}
    print(f"== {ms} vs {pt} (TB/s; ratio memscope / PyTorch)")
    for k, pk in [("read", "read"), ("write", "write"), ("copy", "copy")]:
        s = m["series"].get(f"bw.{k}")
        if not s:
            continue
        line = []
        for x, y in zip(s["x"], s["y"]):
            r = rows.get(int(x))
            if r:
                line.append(f"{int(x) >> 20}M {y / 1e12:.3f}/{r[pk + '_bytes_per_s'] / 1e12:.3f}={y / r[pk + '_bytes_per_s']:.3f}")
        print(f"  {k:5} " + "  ".join(line))
        f = m["findings"].get(f"bw.{k}_bytes_per_s", {})
        print(f"        {f.get('method', '')[:160]}")
        print(f"        note: {f.get('note', '')[:1500]}")
for name in ["l1/results.json"]:
    m = load(name)
    if not m:
        continue
    f = m["findings"]
    print(f"== {name}: carveout {m['target']['details'].get('chase_shared_carveout', '?')[:70]}")
    for k in ["l1.capacity_bytes", "l1.ways", "l1.sets", "l1.line_bytes", "l1.hit_latency_ns", "l2.capacity_bytes"]:
        v = f.get(k, {})
        print(f"  {k:22} {v.get('value')}  {str(v.get('method', ''))[:90]}  {str(v.get('note', ''))[:120]}")
    print("  index masks:", f.get("l1.index_masks", {}).get("value"))
