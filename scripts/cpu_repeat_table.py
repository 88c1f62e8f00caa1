#!/usr/bin/env python3
"""Table of the CPU lane's capacities over the runs of scripts/cpu-repeat.sh: per run the L1d, L2
and L3 capacity (undetermined ones with the start of their reason), the load, wall time and
hypervisor steal from the log; then per level and mode the determined values' range and spread (max / min - 1) against
the 10 % repeatability bar, and each private level's (L1d, L2) distance from the OS's figure
against the 25 % bar.
Usage: cpu_repeat_table.py OUTDIR"""
import json
import os
import re
import sys

LEVELS = ["l1d", "l2", "l3"]
PRIVATE = {"l1d", "l2"}


def kib(v):
    return f"{v / 1024:.1f} KiB" if v < (1 << 20) else f"{v / (1 << 20):.2f} MiB"


def runs(out):
    names = [d for d in os.listdir(out) if re.fullmatch(r"(quick|full)-\d+", d)]
    return sorted(names, key=lambda d: (int(d.split("-")[1]), d.split("-")[0] != "quick"))


def log_facts(out):
    """Load, wall time and the hypervisor's steal per run from log.txt."""
    facts, cur = {}, None
    path = os.path.join(out, "log.txt")
    if not os.path.exists(path):
        return facts
    for line in open(path):
        m = re.match(r"== ((?:quick|full)-\d+) (\S+) load (\S+):", line)
        if m:
            cur = m.group(1)
            facts[cur] = {"utc": m.group(2), "load": m.group(3)}
        m = re.match(r"wall_ms (\d+)", line)
        if m and cur:
            facts[cur]["wall"] = f"{int(m.group(1)) / 1000:.1f} s"
        m = re.match(r"steal_ms (\d+)", line)
        if m and cur:
            facts[cur]["steal"] = f"{int(m.group(1))} ms"
    return facts


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
    facts = log_facts(out)
    values = {(lv, mode): [] for lv in LEVELS for mode in ("quick", "full")}
    os_size = {}
    print("| run | UTC | load | wall | steal | " + " | ".join(f"{lv} capacity" for lv in LEVELS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(LEVELS))
    for run in runs(out):
        path = os.path.join(out, run, "results.json")
        if not os.path.exists(path):
            print(f"| {run} | | | | no results.json |")
            continue
        f = json.load(open(path))["findings"]
        cells = []
        for lv in LEVELS:
            cap = f.get(f"cpu.{lv}.capacity_bytes", {})
            osv = f.get(f"cpu.{lv}.os_capacity_bytes", {}).get("value")
            if osv:
                os_size[lv] = osv
            v = cap.get("value")
            if v is None:
                cells.append("undet. (" + (cap.get("note") or "no reason")[:90].replace("|", "/") + ")")
            else:
                values[(lv, run.split("-")[0])].append(v)
                cells.append(kib(v))
        x = facts.get(run, {})
        print(f"| {run} | {x.get('utc', '')} | {x.get('load', '')} | {x.get('wall', '')} | {x.get('steal', '')} | " + " | ".join(cells) + " |")
    print()
    print("| level | mode | determined | range | spread (bar 10 %) | worst distance from OS (bar 25 %, private levels) |")
    print("|---|---|---|---|---|---|")
    for lv in LEVELS:
        for mode in ("quick", "full", "both"):
            vs = values[(lv, "quick")] + values[(lv, "full")] if mode == "both" else values[(lv, mode)]
            total = len([r for r in runs(out) if mode == "both" or r.startswith(mode)])
            if not vs:
                print(f"| {lv} | {mode} | 0 of {total} | - | - | - |")
                continue
            spread = max(vs) / min(vs) - 1
            ok = "ok" if spread <= 0.10 else "OVER"
            dist = "-"
            if lv in PRIVATE and lv in os_size:
                d = max(abs(v / os_size[lv] - 1) for v in vs)
                dist = f"{d * 100:.1f} % ({'ok' if d <= 0.25 else 'OVER'}; OS {kib(os_size[lv])})"
            print(f"| {lv} | {mode} | {len(vs)} of {total} | {kib(min(vs))} .. {kib(max(vs))} | {spread * 100:.1f} % ({ok}) | {dist} |")


if __name__ == "__main__":
    main()
