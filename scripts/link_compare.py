#!/usr/bin/env python3
"""Compare two `memscope run --probes link` results with each other (repeatability: within 3 %)
and with PyTorch's copies (scripts/pytorch_link.py JSON; the bar: memscope at least as
high) at the sizes PyTorch measured (256 MiB .. 1 GiB), reading memscope's series `link.<test>`
(median per size) and its plateau findings. Prints a table and a verdict per line.
Usage: link_compare.py RUN1.json RUN2.json PYTORCH.json
"""
import json, sys

PAIRS = [  # memscope test, pytorch key
    ("host_to_device_memcpy_ce", "pinned_h2d"),
    ("device_to_host_memcpy_ce", "pinned_d2h"),
    ("host_to_device_memcpy_ce", "pinned_to_cuda"),
    ("host_to_device_memcpy_ce_pageable", "pageable_h2d"),
    ("device_to_host_memcpy_ce_pageable", "pageable_d2h"),
    ("host_to_device_bidirectional_memcpy_ce", "bidirectional_h2d"),
    ("device_to_host_bidirectional_memcpy_ce", "bidirectional_d2h"),
]


def at(doc, test, size):
    s = doc.get("series", {}).get("link." + test)
    if not s:
        return None
    for x, y in zip(s["x"], s["y"]):
        if int(x) == size:
            return y
    return None


def main():
    r1, r2, pt = (json.load(open(p)) for p in sys.argv[1:4])
    bad = 0
    print("repeatability of the findings (run 1 vs run 2, bar 3 %):")
    for k, f in sorted(r1["findings"].items()):
        if not (k.startswith("link.") and f.get("unit") in ("bytes/s", "ns")) or not isinstance(f.get("value"), (int, float)):
            continue
        g = r2["findings"].get(k, {}).get("value")
        if not isinstance(g, (int, float)):
            print(f"  {k}: missing in run 2"); bad += 1; continue
        rel = abs(g - f["value"]) / f["value"]
        ok = rel <= 0.03
        bad += not ok
        print(f"  {k:<62} {f['value']:.4e} {g:.4e} {100*rel:5.2f} % {'ok' if ok else 'OVER 3 %'}")
    print("memscope vs PyTorch (GB/s, per size; bar: memscope >= PyTorch):")
    for row in pt["rows"]:
        size = row["bytes"]
        for test, key in PAIRS:
            p = row.get(key + "_bytes_per_s")
            ms = [at(r, test, size) for r in (r1, r2)]
            if p is None or None in ms:
                print(f"  {size:>11} {test}: not in both (memscope {ms}, pytorch {p})")
                continue
            worst = min(ms)
            ok = worst >= p
            bad += not ok
            print(f"  {size:>11} {test:<42} memscope {ms[0]/1e9:7.2f} {ms[1]/1e9:7.2f}  pytorch {key} {p/1e9:7.2f}"
                  f"  ratio {worst/p:5.3f} {'ok' if ok else 'BELOW PyTorch'}")
    print(f"{bad} line(s) off the bar")


if __name__ == "__main__":
    main()
