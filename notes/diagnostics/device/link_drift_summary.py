#!/usr/bin/env python3
"""Condenses notes/diagnostics/device/link_drift.sh's output folder: time mode per 2.5 s window (median of
each quantity) and the whole run's range; pins and ctx as tables (rows: passes, columns: buffers
or contexts), so a placement effect shows as a column pattern repeated in every row."""
import collections, re, statistics, sys

out = sys.argv[1]


def rows(name):
    try:
        lines = open(f"{out}/{name}.txt").read().splitlines()
    except OSError:
        return []
    res = []
    for ln in lines:
        if ln.startswith(name + " "):
            res.append({k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", ln)})
    return res


t = rows("time")
if t:
    qs = ["host", "page_h2d", "page_d2h", "pinned_h2d", "bidir_h2d", "bidir_d2h"]
    print(f"== time mode: {len(t)} iterations; median per 2.5 s window (GB/s)")
    print("  window " + " ".join(f"{q:>10}" for q in qs))
    win = collections.defaultdict(list)
    for r in t:
        win[int(r["t"] // 2.5)].append(r)
    for w in sorted(win):
        print(f"  {w * 2.5:6.1f} " + " ".join(f"{statistics.median(r[q] for r in win[w]):10.2f}" for q in qs))
    print("  whole run: median / min / max / (max-min)/median")
    for q in qs:
        v = [r[q] for r in t]
        m = statistics.median(v)
        print(f"    {q:<11} {m:7.2f} {min(v):7.2f} {max(v):7.2f} {100 * (max(v) - min(v)) / m:6.1f} %")
    # correlation of the pageable lines with the host's own copy, iteration by iteration
    h = [r["host"] for r in t]
    for q in ["page_h2d", "page_d2h", "bidir_h2d"]:
        v = [r[q] for r in t]
        if len(v) > 2:
            print(f"    corr(host, {q}) = {statistics.correlation(h, v):.2f}")
for name, col in [("pins", "buf"), ("ctx", "ctx")]:
    r = rows(name)
    if not r:
        continue
    qs = [k for k in r[0] if k not in ("t", "pass", col)]
    for q in qs:
        print(f"== {name} mode: {q} (GB/s); rows: passes, columns: {col} 0..")
        by = collections.defaultdict(dict)
        for x in r:
            by[int(x["pass"])][int(x[col])] = x[q]
        for p in sorted(by):
            print(f"  pass {p} " + " ".join(f"{by[p][c]:7.2f}" for c in sorted(by[p])))
