#!/usr/bin/env python3
"""Compare two `memscope run --probes l2.sm_map` results with each other (repeatability, per SM)
and with the independent peer (scripts/peers/sm_map_peer.cu, per SM and over SMs).

    python3 scripts/peers/sm_map_compare.py RUN1.json RUN2.json PEER.csv [PEER2.csv ...] [--md OUT.md]

Files may be gzipped (.gz). With two or more peer files, each peer run is also compared with the
first (the peer's own repeatability).

Per SM the probe's value is its series' point (median over repetitions); the peer's is the median
over its repetitions, in ns at the peer's own measured clock. Prints a markdown summary: medians
and spreads over SMs (MAD, min, max), the per-SM differences run 1 vs run 2 (the 1 % bar) and
probe vs peer.
"""
import csv
import gzip
import io
import json
import statistics
import sys


def opened(path):
    """A text file, gunzipped when its name ends in .gz."""
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8")
    return open(path, encoding="utf-8")


def med(v):
    return statistics.median(v) if v else float("nan")


def mad(v):
    m = med(v)
    return med([abs(x - m) for x in v])


def probe_map(path):
    """{level: {sm: ns}} from the results' l2.sm_map series, and the findings."""
    d = json.load(opened(path))
    out = {"near": {}, "far": {}, "l1": {}}
    for k, s in d["series"].items():
        if not k.startswith("l2.sm_map."):
            continue
        name = k.split(".", 2)[2]
        level = "l1" if name == "l1_control" else name.split("_")[0]
        for x, y in zip(s["x"], s["y"]):
            out[level][int(x)] = y
    return out, d["findings"]


def peer_map(paths):
    rows = {}
    for p in paths:
        for r in csv.DictReader(opened(p)):
            sm = int(r["sm"])
            hz = float(r["clock_hz"])
            e = rows.setdefault(sm, {"near": [], "far": []})
            if r["near_cycles"]:
                e["near"].append(float(r["near_cycles"]) / hz * 1e9)
                e["far"].append(float(r["far_cycles"]) / hz * 1e9)
    return {lv: {sm: med(e[lv]) for sm, e in rows.items() if e[lv]} for lv in ("near", "far")}, rows


def summary(values):
    v = list(values)
    if not v:
        return "none"
    return f"median {med(v):.2f} ns, MAD {mad(v):.2f}, min {min(v):.2f}, max {max(v):.2f} (n={len(v)})"


def main(argv):
    md_out = None
    if "--md" in argv:
        i = argv.index("--md")
        md_out = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    r1, f1 = probe_map(argv[0])
    r2, _ = probe_map(argv[1])
    peer, peer_rows = peer_map(argv[2:])
    lines = ["# l2.sm_map: two runs and the peer", ""]
    for k in ["near_hit_latency_ns", "far_hit_latency_ns", "warm_hit_latency_ns", "l1_hit_latency_ns", "far_fraction", "probe_seconds"]:
        f = f1.get(f"l2.sm_map.{k}", {})
        lines.append(f"- run 1 `l2.sm_map.{k}`: {f.get('value')} {f.get('unit', '')} (spread {f.get('spread')}) {f.get('note', '')[:200]}")
    g = f1.get("l2.sm_map.groups", {}).get("value") or []
    lines.append(f"- run 1 groups: {len(g)}; " + "; ".join(f"group {i + 1}: {len(x['sms'])} SMs, near {x['near_ns']:.2f} ns, far {x['far_ns']:.2f} ns" for i, x in enumerate(g)))
    lines.append(f"- run 1 reference SMs: {json.dumps(f1.get('l2.sm_map.reference_sms', {}).get('value'))}")
    lines.append("")
    lines.append("| level | run 1 over SMs | run 2 over SMs | peer over SMs | SMs within 1 % run 1 vs 2 | largest run 1 vs 2 | peer / run 1 per SM: median, min, max |")
    lines.append("|---|---|---|---|---|---|---|")
    for lv in ("near", "far", "l1"):
        a, b = r1[lv], r2[lv]
        both = sorted(set(a) & set(b))
        rel = [abs(b[s] - a[s]) / a[s] for s in both]
        within = sum(1 for x in rel if x <= 0.01)
        worst = max(rel) if rel else float("nan")
        worst_sm = both[rel.index(worst)] if rel else None
        p = peer.get(lv, {})
        ratio = [p[s] / a[s] for s in sorted(set(p) & set(a))]
        rtxt = f"{med(ratio):.4f}, {min(ratio):.4f}, {max(ratio):.4f} (n={len(ratio)})" if ratio else "n/a"
        lines.append(
            f"| {lv} | {summary(a.values())} | {summary(b.values())} | {summary(p.values()) if p else 'n/a'} | "
            f"{within} of {len(both)} | {100 * worst:.2f} % (SM {worst_sm}) | {rtxt} |"
        )
    if len(argv) > 3:
        first, _ = peer_map(argv[2:3])
        for k, other in enumerate(argv[3:], start=2):
            o, _ = peer_map([other])
            for lv in ("near", "far"):
                both = sorted(set(first[lv]) & set(o[lv]))
                rel = [abs(o[lv][s] - first[lv][s]) / first[lv][s] for s in both]
                if rel:
                    lines.append(
                        f"- peer run {k} vs peer run 1, {lv}: {sum(1 for x in rel if x <= 0.01)} of {len(rel)} SMs within 1 %, "
                        f"largest {100 * max(rel):.2f} %"
                    )
    split = sum(1 for e in peer_rows.values() if e["near"])
    lines.append("")
    lines.append(f"Peer: {len(peer_rows)} SMs, {split} with at least one repetition split in two modes.")
    text = "\n".join(lines)
    print(text)
    if md_out:
        open(md_out, "w").write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
