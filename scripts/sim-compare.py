#!/usr/bin/env python3
"""Write the table of a real GPU run's findings beside the findings of `memscope run` on its
calibrated preset into a Markdown file, between the lines `<!-- sim-compare:begin -->` and
`<!-- sim-compare:end -->` (scripts/regen-sim-artifacts.sh calls it).
Usage: sim-compare.py REAL.json SIM.json DOC.md"""
import json, sys

KEYS = ["l1.hit_latency_ns", "l1.capacity_bytes", "l1.line_bytes", "l1.sector_bytes", "l1.ways", "l1.sets",
        "l1.indexing", "tlb.l1.entries", "tlb.l1.miss_ns", "tlb.l1.replacement", "tlb.l1.scope", "tlb.page_bytes",
        "l2.hit_latency_ns", "l2.far_hit_latency_ns", "l2.capacity_bytes", "l2.ways", "l2.line_bytes",
        "l2.indexing", "l2.sets", "l2.policy", "dram.latency_ns", "dram.row_bytes", "dram.refresh_stall_ns",
        "dram.refresh_fraction"]

def show(f):
    if f is None:
        return "not run"
    v = f.get("value")
    if v is None or f.get("confidence") == "undetermined":
        return "undetermined"
    unit = f.get("unit", "")
    if isinstance(v, float):
        if unit == "bytes" and v >= 1 << 20:
            return f"{v / 2**20:.2f} MiB"
        if unit == "ratio":
            return f"{100 * v:.2f} %"
        return f"{v:.4g} {unit}".strip()
    if isinstance(v, int) and unit == "bytes" and v >= 1024:
        return f"{v / 1024:g} KiB" if v < 1 << 20 else f"{v / 2**20:g} MiB"
    return f"{v} {'' if unit == 'count' else unit}".strip()

def spread(f):
    s = (f or {}).get("spread") or {}
    return f"± {s['mad']:.3g} (MAD)" if "mad" in s else ""

def verdict(a, b):
    if a is None or b is None:
        return ""
    va, vb = a.get("value"), b.get("value")
    if va is None or vb is None or a.get("confidence") == "undetermined" or b.get("confidence") == "undetermined":
        return "same" if va is None and vb is None else "differs"
    if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and not isinstance(va, bool):
        if va == vb:
            return "same"
        mad = ((a.get("spread") or {}).get("mad"))
        if mad is not None and abs(va - vb) <= mad:
            return "within spread"
        rel = 100 * (vb - va) / va
        return "same to 0.1 %" if abs(rel) < 0.1 else f"{rel:+.1f} %"
    return "same" if va == vb else "differs"

real, sim, doc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
rows = ["| finding | real GPU | spread | simulated (calibrated preset) | agreement |", "|---|---|---|---|---|"]
for k in KEYS:
    a, b = real["findings"].get(k), sim["findings"].get(k)
    if a is None and b is None:
        continue
    rows.append(f"| `{k}` | {show(a)} | {spread(a)} | {show(b)} | {verdict(a, b)} |")
table = "\n".join(rows)
text = open(doc).read()
begin, end = "<!-- sim-compare:begin -->", "<!-- sim-compare:end -->"
i, j = text.index(begin) + len(begin), text.index(end)
note = f"\n\n(real: `{sys.argv[1]}`; simulated: `{sys.argv[2]}`)\n\n"
open(doc, "w").write(text[:i] + note + table + "\n\n" + text[j:])
