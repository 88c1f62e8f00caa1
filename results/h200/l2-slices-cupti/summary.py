"""Summarise the l2.slices runs of device.sh: times, counters, findings, partitions compared pairwise, timing check."""
import json, os, sys
o = sys.argv[1]
names = ["cupti1", "ncu1", "cupti2", "both", "quick", "ncu2", "cupti3", "lines512", "map16", "map64"]
runs = {}
for name in names:
    p = os.path.join(o, name, "results.json")
    if not os.path.exists(p):
        print(name, "no results.json"); continue
    d = json.load(open(p)); f = d["findings"]; runs[name] = f
    g = lambda k: f.get(k, {})
    print(f"== {name}: probe_seconds {g('l2.slices.probe_seconds').get('value')} run {d['run'].get('started_at')} .. {d['run'].get('finished_at')}")
    for k in ["l2.slices.count", "l2.slices.clear_fraction", "l2.slices.page_slices_seen", "l2.slices.page_slices_estimate", "l2.slices.far_fraction", "l2.slices.timing_check", "l2.slices.page_masks", "l2.slices.function"]:
        v = g(k); val = v.get("value")
        if isinstance(val, (dict, list)): val = json.dumps(val)[:1200]
        print(f"  {k} = {val} [{v.get('confidence')}] {(v.get('note') or v.get('reason') or '')[:600]}")
    pp = g("l2.slices.page_partition")
    print("  method:", (pp.get("method") or "")[-160:])
    print("  partition note:", (pp.get("note") or "")[:400])
    for w in d.get("warnings", []) or []:
        if "slices" in str(w): print("  warning:", str(w)[:400])
def classes(f):
    v = f.get("l2.slices.page_partition", {}).get("value")
    if not isinstance(v, dict): return None
    return {int(x, 16): i for i, c in enumerate(v["classes"]) for x in c}
ok = [n for n in runs if classes(runs[n])]
print("== partition disagreements (pairs differing / pairs on lines both determined)")
for a in ok:
    A = classes(runs[a]); row = []
    for b in ok:
        B = classes(runs[b]); ks = sorted(set(A) & set(B))
        d = sum(1 for i in range(len(ks)) for j in range(i + 1, len(ks)) if (A[ks[i]] == A[ks[j]]) != (B[ks[i]] == B[ks[j]]))
        row.append(f"{d:5d}/{len(ks)*(len(ks)-1)//2}")
    print(" ".join(row), a)
