#!/usr/bin/env python3
"""PyTorch's own bandwidth on the same GPU, to compare with `memscope run --probes bw` run back to
back (the bar: memscope's read/write/copy must be at least what PyTorch's sum/fill/copy give).

For each size: read = x.sum() over a float32 tensor (bytes = size), write = x.fill_(v) (bytes = size),
copy = y.copy_(x) (bytes = 2 x size: read plus write). Each sample times a batch of calls between
torch.cuda events after warm-up; the value is the median of the samples. Output: JSON on stdout (and
--out FILE), plus a short table on stderr.
"""
import argparse, json, statistics, sys, time

import torch


def time_op(fn, reps, min_ms=2.0):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter(); fn(); torch.cuda.synchronize()
    one_ms = (time.perf_counter() - t0) * 1e3
    batch = max(1, min(2000, int(min_ms / max(one_ms, 1e-4))))
    out = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(batch):
            fn()
        b.record(); b.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / batch)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-bytes", type=int, default=4 << 30)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out")
    args = ap.parse_args()
    dev = torch.device("cuda:0")
    sizes = []
    s = 4096
    while s <= args.max_bytes:
        sizes.append(s); s *= 4
    n_max = args.max_bytes // 4
    x = torch.rand(n_max, device=dev, dtype=torch.float32) + 1.0
    y = torch.empty_like(x)
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "reps": args.reps, "rows": []}
    for size in sizes:
        n = size // 4
        xs, ys = x[:n], y[:n]
        row = {"bytes": size}
        for name, fn, factor in [
            ("read", lambda: torch.sum(xs), 1),
            ("write", lambda: ys.fill_(1.5), 1),
            ("copy", lambda: ys.copy_(xs), 2),
        ]:
            secs = time_op(fn, args.reps)
            rates = [size * factor / t for t in secs]
            row[name + "_bytes_per_s"] = statistics.median(rates)
        res["rows"].append(row)
        print(f"{size:>12} read {row['read_bytes_per_s']/1e12:6.3f} write {row['write_bytes_per_s']/1e12:6.3f} "
              f"copy {row['copy_bytes_per_s']/1e12:6.3f} TB/s", file=sys.stderr)
    text = json.dumps(res, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
