"""Summarise the l2.slices runs of device.sh: times, findings, partitions compared pairwise."""
import json, os, sys
o = sys.argv[1]
runs = {}
for name in ["packed1", "packed2", "both", "pages6", "quick"]:
    p = os.path.join(o, name, "results.json")
    if not os.path.exists(p):
        print(name, "no results.json"); continue
    d = json.load(open(p))
    f = d["findings"]
    runs[name] = f
    print(f"== {name}: run {d['run'].get('started_at')} .. {d['run'].get('finished_at')}")
    for k in sorted(f):
        if k.startswith("l2.slices"):
            v = f[k]
            val = v.get("value")
            if isinstance(val, (dict, list)):
                val = json.dumps(val)[:120]
            print(f"  {k} = {val} [{v.get('confidence')}] {(v.get('note') or v.get('reason') or '')[:900]}")
    for w in d.get("warnings", []) or []:
        if "slices" in str(w): print("  warning:", str(w)[:300])
    pr = d.get("probes")
    if isinstance(pr, dict) and "l2.slices" in pr: print("  probe record:", json.dumps(pr["l2.slices"])[:300])
def classes(f):
    v = f.get("l2.slices.page_partition", {}).get("value")
    if not isinstance(v, dict): return None
    lab = {}
    for i, c in enumerate(v["classes"]):
        for x in c: lab[int(x, 16)] = i
    return lab
names = [n for n in runs if classes(runs[n])]
print("== partition disagreements (pairs)")
for a in names:
    A = classes(runs[a]); row = []
    for b in names:
        B = classes(runs[b]); ks = sorted(set(A) & set(B))
        d = sum(1 for i in range(len(ks)) for j in range(i+1, len(ks)) if (A[ks[i]] == A[ks[j]]) != (B[ks[i]] == B[ks[j]]))
        row.append(f"{d:5d}/{len(ks)*(len(ks)-1)//2}")
    print(" ".join(row), a)
