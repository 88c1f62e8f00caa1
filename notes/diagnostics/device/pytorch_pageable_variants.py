#!/usr/bin/env python3
"""Pageable host <-> device copies in PyTorch, variants interleaved copy by copy so the host's
drift (docs/INTERCONNECT.md) pairs out: does the start of the pageable buffer within its page, or
the stream, move the rate? Variants, 256 MiB each, one buffer per variant:
  aligned   : a pageable buffer starting on a 4 KiB page boundary, default stream
  off16     : the same starting 16 bytes into a page (where malloc puts a large mmap'd block)
  side      : page-aligned, on a torch.cuda.Stream() (not the legacy default stream)
Per rep every variant copies H2D then D2H once (host wall clock around copy + synchronize),
after 2 warm-ups; medians over --reps, GB/s (1e9 bytes/s). JSON on stdout.
Usage: pytorch_pageable_variants.py [--bytes N] [--reps R]
"""
import argparse, json, statistics, time

import torch


def page_view(size, offset):
    raw = torch.empty(size + 8192, dtype=torch.uint8)
    base = (-raw.data_ptr()) % 4096
    v = raw[base + offset: base + offset + size]
    v.fill_(5)
    return raw, v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=256 << 20)
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args()
    n = a.bytes
    d = torch.empty(n, dtype=torch.uint8, device="cuda:0").fill_(3)
    side = torch.cuda.Stream()
    keep = []
    variants = {}
    for name, off in (("aligned", 0), ("off16", 16), ("side", 0)):
        raw, v = page_view(n, off)
        keep.append(raw)
        variants[name] = v
    res = {k: {"h2d": [], "d2h": []} for k in variants}

    def one(name, direction):
        h = variants[name]
        ctx = torch.cuda.stream(side) if name == "side" else torch.cuda.stream(torch.cuda.default_stream())
        with ctx:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            if direction == "h2d":
                d.copy_(h)
            else:
                h.copy_(d)
            torch.cuda.synchronize()
            return time.perf_counter() - t0

    for rep in range(a.reps + 2):
        for name in variants:
            for direction in ("h2d", "d2h"):
                s = one(name, direction)
                if rep >= 2:
                    res[name][direction].append(n / s / 1e9)
    out = {"bytes": n, "reps": a.reps, "device": torch.cuda.get_device_name(0),
           "median_gb_s": {k: {dd: round(statistics.median(v[dd]), 3) for dd in v} for k, v in res.items()},
           "samples_gb_s": {k: {dd: [round(x, 3) for x in v[dd]] for dd in v} for k, v in res.items()}}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
