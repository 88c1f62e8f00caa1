#!/usr/bin/env python3
"""Summarize the CPU lane of a memscope results file: the clock and its cross-checks, each cache
level measured beside what the OS reports, the DRAM latency, and the CPU probes' durations.
With two files (A B), also compare the non-CPU (GPU) findings of A and B.
Usage: cpu_summary.py RESULTS.json [OTHER.json]"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def cpu_target(d):
    return next((t for t in d.get("targets", [d["target"]]) if t["kind"] == "cpu"), None)


def ghz(v):
    return "-" if v is None else f"{v / 1e9:.3f} GHz"


def summary(path):
    d = load(path)
    t = cpu_target(d)
    if t is None:
        print(f"{path}: no CPU target")
        return
    det = t.get("details", {})
    c = det.get("clock", {})
    print(f"== {path}: {t['name']}, {t['units']} CPUs, hypervisor {det.get('hypervisor')}")
    print(f"clock used for cycles: {ghz(t.get('clock_hz'))} ({c.get('method')})")
    print(f"  median of tries: {ghz(c.get('primary_median_hz'))}; witness: {c.get('witness_note')}")
    for k, v in (c.get("sources_hz") or {}).items():
        rel = (c.get("check", {}).get("measured_over_source_minus_1") or {}).get(k)
        print(f"  source {k:<18} {ghz(v)}   measured/source - 1 = {rel:+.3f}" if rel is not None else f"  source {k} {ghz(v)}")
    ck = c.get("check", {})
    rng = ck.get("range_hz")
    print(f"  verdict: {ck.get('verdict')} (nominal {ghz(ck.get('nominal_hz'))} from {ck.get('nominal_source')}, "
          f"range {ghz(rng[0]) if rng else '-'} .. {ghz(rng[1]) if rng else '-'}, top: {ck.get('top_source')})")
    f = d["findings"]
    for lvl in ["l1d", "l2", "l3"]:
        cap = f.get(f"cpu.{lvl}.capacity_bytes", {})
        os_ = f.get(f"cpu.{lvl}.os_capacity_bytes", {})
        lat = f.get(f"cpu.{lvl}.hit_latency_ns", {})
        mv, ov = cap.get("value"), os_.get("value")
        ratio = f"{mv / ov:.2f}" if mv and ov else "-"
        cyc = lat.get("cycles")
        print(f"{lvl:>4}: measured {mv if mv is not None else 'undetermined'} B, OS {ov} B, ratio {ratio}; "
              f"hit {lat.get('value')} ns = {cyc if cyc is None else round(cyc, 2)} cycles")
        note = cap.get("note") or ""
        if "DISAGREES" in note or mv is None:
            print(f"      note: {note}")
    dram = f.get("cpu.dram.latency_ns", {})
    print(f"dram: {dram.get('value')} ns, {dram.get('cycles')} cycles; line {f.get('cpu.line_bytes', {}).get('value')} B")
    for k, p in d.get("probes", {}).items():
        if k.endswith("@cpu") and p.get("status") == "ok":
            print(f"probe {k}: {p['duration_s']:.1f} s; warnings: {len(p.get('warnings') or [])}")
    lane = d.get("environment", {}).get("cpu_lane")
    if lane:
        print(f"cpu lane: {lane}")


def compare(a, b):
    da, db = load(a), load(b)
    print(f"== non-CPU findings, {a} vs {b} (relative difference of numeric values)")
    worst = []
    for k, fa in sorted(da["findings"].items()):
        fb = db["findings"].get(k)
        if k.startswith("cpu.") or fb is None:
            continue
        va, vb = fa.get("value"), fb.get("value")
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and va:
            rel = vb / va - 1
            worst.append((abs(rel), k, va, vb))
    worst.sort(reverse=True)
    for r, k, va, vb in worst[:15]:
        print(f"  {k:<40} {va:>14.6g} {vb:>14.6g}  {r * 100:6.2f} %")
    print(f"  {len(worst)} numeric findings; {sum(1 for w in worst if w[0] <= 0.02)} within 2 %")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    summary(sys.argv[1])
    if len(sys.argv) > 2:
        summary(sys.argv[2])
        compare(sys.argv[1], sys.argv[2])
