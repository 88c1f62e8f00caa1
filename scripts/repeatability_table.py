#!/usr/bin/env python3
"""The repeatability table of scripts/repeatability.sh (docs/TRUST.md): every finding of OUTDIR/run*/
results.json and OUTDIR/alone-*/results.json side by side. Numeric findings get min, median, max
and their spread as (max - min) / median over the back-to-back runs, and the alone run's value and
its difference from the runs' median; a finding determined in some runs and undetermined in others
is a flip. `--ran-probes FILE` prints the probe keys that ran (status ok) on the file's GPU target."""
import argparse
import glob
import json
import os
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def ran_probes(path):
    doc = load(path)
    keys = []
    for name, p in doc.get("probes", {}).items():
        key, _, target = name.partition("@")
        if p.get("status") == "ok" and target != "cpu" and key not in keys:
            keys.append(key)
    return keys


def findings(doc):
    out = {}
    for key, f in doc.get("findings", {}).items():
        if f.get("target") == "cpu":
            continue
        out[key] = f
    return out


def number(f):
    v = f.get("value")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def shown(f):
    if f is None:
        return "-"
    v = f.get("value")
    if v is None:
        return "undetermined"
    if isinstance(v, float):
        return f"{v:.6g}"
    s = json.dumps(v) if not isinstance(v, str) else v
    return s if len(s) <= 40 else s[:37] + "..."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--ran-probes")
    ap.add_argument("--md")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.ran_probes:
        print(" ".join(ran_probes(a.ran_probes)))
        return 0
    runs = sorted(glob.glob(os.path.join(a.outdir, "run*", "results.json")))
    alone = {}
    for p in sorted(glob.glob(os.path.join(a.outdir, "alone-*", "results.json"))):
        probe = os.path.basename(os.path.dirname(p))[len("alone-"):]
        alone[probe] = findings(load(p))
    run_f = [findings(load(p)) for p in runs]
    # Which probe produced each key: the alone run whose probe is the one asked for holds it.
    keys = sorted(set().union(*[set(r) for r in run_f]))
    rows = []
    flips = 0
    for key in keys:
        fs = [r.get(key) for r in run_f]
        det = [f is not None and f.get("value") is not None for f in fs]
        flip = any(det) and not all(det)
        vals = [number(f) for f in fs if f is not None]
        vals = [v for v in vals if v is not None]
        alone_vals = [fa.get(key) for fa in alone.values() if key in fa]
        alone_f = alone_vals[-1] if alone_vals else None
        row = {"key": key, "unit": next((f.get("unit", "") for f in fs if f), ""), "runs": [shown(f) for f in fs],
               "alone": shown(alone_f), "flip": flip}
        if len(vals) == len(fs) and vals:
            med = statistics.median(vals)
            row.update(min=min(vals), median=med, max=max(vals),
                       spread=(max(vals) - min(vals)) / abs(med) if med else 0.0)
            av = number(alone_f) if alone_f else None
            if av is not None and med:
                row["alone_diff"] = (av - med) / abs(med)
        else:
            texts = {json.dumps(f.get("value")) if f else "-" for f in fs}
            row["identical"] = len(texts) == 1
            if alone_f is not None and fs[0] is not None:
                row["alone_identical"] = json.dumps(alone_f.get("value")) == json.dumps(fs[0].get("value"))
        if flip:
            flips += 1
        rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "alone": sorted(alone), "rows": rows, "flips": flips}, f, indent=1)
    lines = [f"# Repeatability: {len(runs)} back-to-back runs and {len(alone)} probes alone ({a.outdir})", "",
             f"determined/undetermined flips: {flips}", "",
             "| finding | unit | runs | min | median | max | spread | alone | alone vs median |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "median" in r:
            cells = [f"{r['min']:.6g}", f"{r['median']:.6g}", f"{r['max']:.6g}", f"{100 * r['spread']:.2f} %"]
            ad = f"{100 * r['alone_diff']:+.2f} %" if "alone_diff" in r else "-"
        else:
            same = "identical" if r.get("identical") else "DIFFER"
            cells = ["", "", "", same]
            ad = {True: "identical", False: "DIFFERS"}.get(r.get("alone_identical"), "-")
        flag = " (FLIP)" if r["flip"] else ""
        lines.append(f"| {r['key']}{flag} | {r['unit']} | {' / '.join(r['runs'])} | " + " | ".join(cells) + f" | {r['alone']} | {ad} |")
    text = "\n".join(lines) + "\n"
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
