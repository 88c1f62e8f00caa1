#!/usr/bin/env python3
"""Before/after check of `memscope run` results: for every finding of the GPU target in
two runs of the old binary (A1, A2) and two of the new (B1, B2), the new/old ratio of the medians,
the old path's own run-to-run difference, and whether the new value lies within the old path's
spread (the larger of: its run-to-run difference, the finding's recorded spread, 1 %).
Usage: compare_runs.py A1.json A2.json B1.json B2.json  (prints a table and a summary line)."""
import json
import sys


def findings(path):
    doc = json.load(open(path))
    tid = doc["target"]["id"]
    out = {}
    for key, f in doc["findings"].items():
        if f.get("target", tid) != tid:
            continue
        out[key] = f
    return out


def num(f):
    v = f.get("value")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def rel_spread(f):
    s = f.get("spread") or {}
    v = num(f)
    if not v or "min" not in s or "max" not in s:
        return 0.0
    return abs(s["max"] - s["min"]) / abs(v)


def main(a1, a2, b1, b2):
    A1, A2, B1, B2 = map(findings, (a1, a2, b1, b2))
    keys = sorted(set(A1) | set(B1))
    rows, within, outside, changed, only = [], 0, [], [], []
    for k in keys:
        fa = [x.get(k) for x in (A1, A2)]
        fb = [x.get(k) for x in (B1, B2)]
        if any(f is None for f in fa + fb):
            only.append(k)
            continue
        va = [num(f) for f in fa]
        vb = [num(f) for f in fb]
        if any(v is None for v in va + vb):
            same = all(json.dumps(f.get("value"), sort_keys=True) == json.dumps(fa[0].get("value"), sort_keys=True) for f in fa + fb)
            if same:
                within += 1
            else:
                changed.append((k, [f.get("value") for f in fa + fb]))
            continue
        old = sorted(va)[0] if len(va) == 1 else (va[0] + va[1]) / 2
        new = (vb[0] + vb[1]) / 2
        if old == 0:
            ok = new == 0
            ratio = float("nan")
            tol = 0.0
        else:
            run_to_run = abs(va[0] - va[1]) / abs(old)
            tol = max(run_to_run, rel_spread(fa[0]), rel_spread(fa[1]), 0.01)
            ratio = new / old
            ok = abs(ratio - 1) <= tol or (min(vb) <= max(va) and max(vb) >= min(va))
        rows.append((k, old, new, ratio, tol, ok))
        if ok:
            within += 1
        else:
            outside.append((k, ratio, tol))
    print(f"{'finding':<52} {'old (mean of 2)':>16} {'new (mean of 2)':>16} {'new/old':>8} {'old spread':>10}  within")
    for k, old, new, ratio, tol, ok in rows:
        print(f"{k:<52} {old:>16.6g} {new:>16.6g} {ratio:>8.4f} {100*tol:>9.2f}%  {'yes' if ok else 'NO'}")
    for k, vals in changed:
        text = " | ".join(json.dumps(v)[:60] for v in vals)
        print(f"{k:<52} non-numeric value differs (old1 | old2 | new1 | new2): {text}")
    print(f"\nsummary: {within} findings within the old path's spread, {len(outside)} outside, "
          f"{len(changed)} non-numeric changed, {len(only)} not in all four runs")
    for k, r, t in outside:
        print(f"  outside: {k} new/old {r:.4f} (old spread {100*t:.2f} %)")
    for k in only:
        print(f"  not in all four: {k}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: compare_runs.py A1.json A2.json B1.json B2.json")
    main(*sys.argv[1:])
