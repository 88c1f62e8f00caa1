#!/usr/bin/env python3
"""Diagnostic (not a test): does the kind of page behind a pageable buffer set the rate of a pageable
host <-> device copy? PyTorch's copies from and into three 256 MiB host buffers, alternated round by
round so the host's memory drift is paired out: `torch.empty` (PyTorch's allocator: 64-byte aligned
malloc, huge pages only where THP is `always`), an anonymous mmap on a 2 MiB boundary advised
MADV_HUGEPAGE before its first touch (what memscope's link probe uses), and the same advised
MADV_NOHUGEPAGE. Prints the THP settings, each buffer's AnonHugePages, and per round and buffer the
rates (median of 5 batches of >= ~2 ms after 3 warm-ups, events), then the medians over rounds.
"""
import json, mmap, statistics, sys

import torch

SIZE = 256 << 20
ALIGN = 2 << 20


def thp():
    out = {}
    for k in ("enabled", "defrag"):
        try:
            out[k] = open(f"/sys/kernel/mm/transparent_hugepage/{k}").read().strip()
        except OSError as e:
            out[k] = f"unreadable ({e})"
    return out


def anon_huge_kib(addr, size):
    """AnonHugePages (kB) of the smaps entries overlapping [addr, addr+size)."""
    total, inside = 0, False
    try:
        for line in open("/proc/self/smaps"):
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                inside = lo < addr + size and hi > addr
            elif inside and line.startswith("AnonHugePages:"):
                total += int(head[1])
    except OSError:
        return None
    return total


def mapped(advice):
    m = mmap.mmap(-1, SIZE + ALIGN, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = torch.frombuffer(m, dtype=torch.uint8)
    off = (-base.data_ptr()) % ALIGN
    m.madvise(advice, off, SIZE)  # (off is a whole number of pages: mmap returns a page boundary)
    t = base[off:off + SIZE]
    t.fill_(5)
    return m, t


def time_batch(fn, reps=5, min_ms=2.0):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
    a.record(); fn(); b.record(); b.synchronize()
    batch = max(1, min(256, int(min_ms / max(a.elapsed_time(b), 1e-4)) + 1))
    out = []
    for _ in range(reps):
        a.record()
        for _ in range(batch):
            fn()
        b.record(); b.synchronize()
        out.append(SIZE * batch / (a.elapsed_time(b) / 1e3))
    return statistics.median(out)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    res = {"thp": thp(), "bytes": SIZE, "rounds": []}
    bufs = {"torch_empty": (None, torch.empty(SIZE, dtype=torch.uint8).fill_(5))}
    bufs["mmap_hugepage"] = mapped(mmap.MADV_HUGEPAGE)
    bufs["mmap_nohugepage"] = mapped(mmap.MADV_NOHUGEPAGE)
    res["anon_huge_kib"] = {k: anon_huge_kib(t.data_ptr(), SIZE) for k, (_, t) in bufs.items()}
    res["align_4k_offset"] = {k: t.data_ptr() % 4096 for k, (_, t) in bufs.items()}
    d = torch.empty(SIZE, dtype=torch.uint8, device="cuda")
    d2 = torch.empty(SIZE, dtype=torch.uint8, device="cuda").fill_(3)
    for r in range(rounds):
        row = {}
        for k, (_, h) in bufs.items():
            row[k + "_h2d"] = time_batch(lambda: d.copy_(h))
            row[k + "_d2h"] = time_batch(lambda: h.copy_(d2))
        res["rounds"].append(row)
        print(f"round {r}: " + " ".join(f"{k} {v / 1e9:.2f}" for k, v in row.items()), file=sys.stderr)
    keys = res["rounds"][0].keys()
    res["median_gb_s"] = {k: round(statistics.median(r[k] for r in res["rounds"]) / 1e9, 3) for k in keys}
    for dirn in ("h2d", "d2h"):
        base = [r[f"torch_empty_{dirn}"] for r in res["rounds"]]
        for k in ("mmap_hugepage", "mmap_nohugepage"):
            res[f"{k}_over_torch_empty_{dirn}"] = [round(r[f"{k}_{dirn}"] / b, 3) for r, b in zip(res["rounds"], base)]
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
