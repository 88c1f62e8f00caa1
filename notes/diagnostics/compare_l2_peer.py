#!/usr/bin/env python3
"""Issue 25: memscope's L2 read curve (l2bw series of one or more results.json) against gpu-benches'
gpu-l2-cache output (its table, run in the same device call), at memscope's footprints (the peer's
rate interpolated in log footprint between its two nearest sizes), and the plateau of each over
memscope's plateau range. Usage: compare_l2_peer.py PEER.txt RESULTS.json [RESULTS.json ...]"""
import json, math, statistics, sys

def peer_curve(path):
    pts = []
    for line in open(path):
        f = line.split()
        # block kB, footprint kB, time, spread, bandwidth GB/s (then unused metric columns)
        if len(f) >= 8 and f[1] == "kB" and f[3] == "kB" and f[7] == "GB/s":
            pts.append((float(f[2]) * 1024, float(f[6]) * 1e9))
    return sorted(pts)

def at(pts, x):
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            t = math.log(x / x0) / math.log(x1 / x0)
            return y0 + t * (y1 - y0)
    return None

peer = peer_curve(sys.argv[1])
for path in sys.argv[2:]:
    d = json.load(open(path))
    s = d["series"]["l2bw.read_by_footprint"]
    f = d["findings"]["l2.bandwidth_bytes_per_s"]
    note = f.get("note", "")
    lo, hi = note.split("plateau from ")[1].split(" MiB")[0].split(" to ")
    print(f"{path}: plateau {f['value'] / 1e12:.3f} TB/s over {lo}-{hi} MiB")
    ours_on, peer_on = [], []
    for x, y in zip(s["x"], s["y"]):
        p = at(peer, x)
        mark = ""
        if float(lo) <= x / 2**20 <= float(hi):
            ours_on.append(y)
            if p:
                peer_on.append(p)
            mark = " (plateau)"
        ps = f"{p / 1e12:6.3f}" if p else "     -"
        r = f"{y / p:6.3f}" if p else "     -"
        print(f"  {x / 2**20:6.0f} MiB  memscope {y / 1e12:6.3f}  peer {ps} TB/s  ratio {r}{mark}")
    if peer_on:
        print(f"  plateau range: memscope median {statistics.median(ours_on) / 1e12:.3f}, peer median {statistics.median(peer_on) / 1e12:.3f} TB/s")
