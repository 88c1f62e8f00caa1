#!/usr/bin/env python3
"""PyTorch's own host <-> device copies on the same GPU, the peer of `memscope run --probes link`
(the bar: memscope's figures must be at least PyTorch's in the same call).

Per size (256 MiB, 512 MiB, 1 GiB): pinned H2D = d.copy_(h_pinned, non_blocking=True), pinned D2H =
h_pinned.copy_(d, non_blocking=True), pinned H2D through tensor.to('cuda', non_blocking=True),
pageable H2D = d.copy_(h) and pageable D2H = h.copy_(d) (h from torch.empty, not pinned), and the
bidirectional pinned pair (H2D on one stream, D2H on another, each timed by its own events). Each
sample times a batch of copies lasting >= ~2 ms between torch.cuda events after 3 warm-ups; the
value is the median of --reps samples. JSON on stdout (and --out FILE), a table on stderr.
"""
import argparse, json, statistics, sys, time

import torch


def time_batch(fn, reps, min_ms=2.0):
    stream = torch.cuda.current_stream()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter(); fn(); torch.cuda.synchronize()
    one_ms = (time.perf_counter() - t0) * 1e3
    batch = max(1, min(256, int(min_ms / max(one_ms, 1e-4)) + 1))
    out = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(stream)
        for _ in range(batch):
            fn()
        b.record(stream); b.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / batch)
    return out


def bidirectional(h_src, d_dst, d_src, h_dst, reps):
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    res = {"h2d": [], "d2h": []}
    for r in range(reps + 1):
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        with torch.cuda.stream(s1):
            ev[0].record(s1); d_dst.copy_(h_src, non_blocking=True); ev[1].record(s1)
        with torch.cuda.stream(s2):
            ev[2].record(s2); h_dst.copy_(d_src, non_blocking=True); ev[3].record(s2)
        ev[1].synchronize(); ev[3].synchronize()
        if r > 0:  # the first is the warm-up
            res["h2d"].append(ev[0].elapsed_time(ev[1]) / 1e3)
            res["d2h"].append(ev[2].elapsed_time(ev[3]) / 1e3)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="268435456,536870912,1073741824")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    dev = torch.device("cuda:0")
    mx = max(sizes)
    h_pin = torch.empty(mx, dtype=torch.uint8, pin_memory=True).fill_(7)
    h_pin2 = torch.empty(mx, dtype=torch.uint8, pin_memory=True).fill_(0)
    h_page = torch.empty(mx, dtype=torch.uint8).fill_(5)
    d = torch.empty(mx, dtype=torch.uint8, device=dev)
    d2 = torch.empty(mx, dtype=torch.uint8, device=dev).fill_(3)
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "reps": args.reps, "rows": []}
    for size in sizes:
        hp, hp2, hg, dd, dd2 = h_pin[:size], h_pin2[:size], h_page[:size], d[:size], d2[:size]
        row = {"bytes": size}
        cases = [
            ("pinned_h2d", lambda: dd.copy_(hp, non_blocking=True)),
            ("pinned_d2h", lambda: hp2.copy_(dd2, non_blocking=True)),
            ("pinned_to_cuda", lambda: hp.to("cuda", non_blocking=True)),
            ("pageable_h2d", lambda: dd.copy_(hg)),
            ("pageable_d2h", lambda: hg.copy_(dd2)),
        ]
        for name, fn in cases:
            secs = time_batch(fn, args.reps)
            row[name + "_bytes_per_s"] = statistics.median([size / t for t in secs])
        bi = bidirectional(hp, dd, dd2, hp2, args.reps)
        row["bidirectional_h2d_bytes_per_s"] = statistics.median([size / t for t in bi["h2d"]])
        row["bidirectional_d2h_bytes_per_s"] = statistics.median([size / t for t in bi["d2h"]])
        res["rows"].append(row)
        print(f"{size:>11} " + " ".join(f"{k[:-12]} {v/1e9:6.2f}" for k, v in row.items() if k != "bytes") + " GB/s",
              file=sys.stderr)
    text = json.dumps(res, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
