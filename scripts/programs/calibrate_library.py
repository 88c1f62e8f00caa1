"""Times PyTorch's own kernels over a grid of shapes: the library calibration `memscope predict
--trace` reads (docs/MODEL.md, "Real programs").

For each op form (the op a program calls, its dtype and its operands' layout) and each shape of
the form's grid, the op is called 3 times, each after an L2 flush (a 256 MiB fill), under
torch.profiler; a call's time is the sum of the durations of the kernels it launched (the
kernels' `External id` names the op, as in any PyTorch trace), and the record keeps the median
of the 3 calls with the op's name, `Input Dims`, `Input Strides` and `Input type` as the
profiler wrote them. The op forms:

- products: `aten::addmm(bias, A, W)`, `aten::mm(A, W)` with W stored (K, N) ("nn", x @ W) or
  (N, K) and transposed ("nt", F.linear's weight); M (rows of A) 1 to 512, K and N a 1, 1.5, 2
  series 512 to 8,192, N up to 131,072 and four unaligned N (not a multiple of 8);
- batched products: `aten::bmm(A, B)` over (count, M, K) x (count, K, N), B contiguous ("nn",
  attention's probabilities x values) or a transposed view ("nt", a query x the keys);
- elementwise and row ops over (rows, cols): add, mul by a scalar and by a tensor, gelu (tanh),
  silu, softmax over the last dimension, layer_norm, copy into a strided slice.

Shapes over the form's caps (operand bytes, FLOPs) are skipped. Chunks run in order of
priority under a time budget; what was not reached is listed in `skipped`.

Usage: python3 calibrate_library.py --out FILE.json [--budget-s S] [--device cuda] [--quick]
"""

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
SERIES = [512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192]
N_WIDE = [16384, 32768, 131072]
N_UNALIGNED = [1025, 4097, 16385, 65537]
M_ROWS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
BMM_COUNT = [8, 32, 128, 512, 2048, 8192]
BMM_M = [1, 16]
BMM_KN = [64, 128, 256, 512, 1024, 2048, 4096]
EW_ROWS = [1, 8, 64, 512, 4096, 32768]
EW_COLS = [128, 1024, 4096]
CALLS = 3
# The ops whose kernels are kept (setup and flush ops are not).
WANTED = {"aten::addmm", "aten::mm", "aten::bmm", "aten::add", "aten::mul", "aten::gelu", "aten::silu", "aten::_softmax", "aten::native_layer_norm", "aten::copy_"}
FLUSH_BYTES = 256 << 20


def product_shapes(quick):
    if quick:
        return [(m, k, n) for m in (1, 8) for k in (64, 96) for n in (64, 65)]
    out = []
    for m in M_ROWS:
        for k in SERIES:
            for n in SERIES + N_WIDE + N_UNALIGNED:
                out.append((m, k, n))
    return out


def bmm_shapes(quick):
    if quick:
        return [(c, 1, k, n) for c in (4, 16) for k in (16, 32) for n in (16, 32)]
    return [(c, m, k, n) for c in BMM_COUNT for m in BMM_M for k in BMM_KN for n in BMM_KN]


def ew_shapes(quick):
    if quick:
        return [(r, c) for r in (1, 8) for c in (16, 64)]
    return [(r, c) for r in EW_ROWS for c in EW_COLS]


class Calibrator:
    def __init__(self, device, budget_s, quick):
        self.device = device
        self.budget_s = budget_s
        self.quick = quick
        self.t0 = time.time()
        self.records = []
        self.skipped = []
        self.chunks = []
        n = (1 << 16) if quick else FLUSH_BYTES // 4
        self.flush_buf = torch.empty(n, dtype=torch.int32, device=device)
        self.flush_dims = [n]

    def flush(self):
        self.flush_buf.zero_()

    def elapsed(self):
        return time.time() - self.t0

    def run_chunk(self, name, calls):
        """calls: list of (setup, fn) producing one op each; profiled in one session."""
        if self.elapsed() > self.budget_s:
            self.skipped.append(name)
            print(f"skip {name}: budget", flush=True)
            return
        t = time.time()
        acts = [torch.profiler.ProfilerActivity.CPU]
        if self.device.startswith("cuda"):
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        done = 0
        with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
            for make in calls:
                try:
                    fn = make()
                except (RuntimeError, torch.OutOfMemoryError) as e:
                    print(f"  {name}: cannot build a shape: {str(e).splitlines()[0]}", flush=True)
                    continue
                for _ in range(CALLS):
                    self.flush()
                    fn()
                done += 1
                del fn
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            path = f.name
        prof.export_chrome_trace(path)
        got = parse(path, self.flush_dims)
        os.unlink(path)
        for r in got:
            r["form"] = name
        self.records.extend(got)
        self.chunks.append(dict(name=name, shapes=done, records=len(got), seconds=round(time.time() - t, 2)))
        print(f"{name}: {done} shapes, {len(got)} records, {time.time() - t:.1f} s (total {self.elapsed():.1f} s)", flush=True)


def parse(path, flush_dims):
    """Per (op, dims, strides, types): the median over its calls of the kernel time per call."""
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    ops = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            x = e.get("args", {}).get("External id")
            if x is not None:
                ops[x] = e
    per_call = {}
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        x = e.get("args", {}).get("External id")
        if x not in ops:
            continue
        c = per_call.setdefault(x, [0.0, [], e.get("ts", 0.0)])
        c[0] += float(e.get("dur", 0.0))
        c[1].append(e["name"])
    groups = {}
    for x, (dur_us, names, ts) in per_call.items():
        op = ops[x]
        if op["name"] not in WANTED:
            continue
        a = op.get("args", {})
        dims = a.get("Input Dims", [])
        if dims and dims[0] == flush_dims:
            continue
        key = json.dumps([op["name"], dims, a.get("Input Strides"), a.get("Input type")])
        groups.setdefault(key, []).append((ts, dur_us, names))
    out = []
    for key, calls in groups.items():
        name, dims, strides, types = json.loads(key)
        calls.sort()
        times = [c[1] * 1e-6 for c in calls]
        out.append(
            dict(
                name=name,
                input_dims=dims,
                input_strides=strides,
                input_types=types,
                kernel_s=statistics.median(times),
                kernel_s_min=min(times),
                kernel_s_max=max(times),
                calls=len(times),
                kernels=[n[:100] for n in calls[-1][2]],
            )
        )
    return out


def product_calls(cal, dtype, op, layout, shapes, max_bytes, max_flops):
    dev = cal.device
    dt = DT[dtype]
    calls = []
    by_kn = {}
    for m, k, n in shapes:
        if 2 * m * k * n > max_flops or k * n * dt.itemsize > max_bytes:
            continue
        by_kn.setdefault((k, n), []).append(m)
    for (k, n), ms in by_kn.items():
        state = {}

        def weights(k=k, n=n, state=state):
            if "w" not in state:
                w = torch.randn(k, n, device=dev, dtype=dt) if layout == "nn" else torch.randn(n, k, device=dev, dtype=dt).t()
                state["w"] = w
                state["b"] = torch.randn(n, device=dev, dtype=dt)
            return state["w"], state["b"]

        for i, m in enumerate(ms):
            last = i == len(ms) - 1

            def make(m=m, k=k, last=last, state=state, weights=weights):
                w, b = weights()
                a = torch.randn(m, k, device=dev, dtype=dt)
                if last:
                    # The weights go after this shape's calls (the closure holds them until then).
                    state.clear()
                if op == "addmm":
                    return lambda: torch.addmm(b, a, w)
                return lambda: torch.mm(a, w)

            calls.append(make)
    return calls


def bmm_calls(cal, dtype, layout, shapes, max_bytes, max_flops):
    dev = cal.device
    dt = DT[dtype]
    calls = []
    for c, m, k, n in shapes:
        if 2 * c * m * k * n > max_flops or c * k * n * dt.itemsize > max_bytes:
            continue

        def make(c=c, m=m, k=k, n=n):
            a = torch.randn(c, m, k, device=dev, dtype=dt)
            b = torch.randn(c, k, n, device=dev, dtype=dt) if layout == "nn" else torch.randn(c, n, k, device=dev, dtype=dt).transpose(1, 2)
            return lambda: torch.bmm(a, b)

        calls.append(make)
    return calls


def ew_calls(cal, dtype, shapes):
    dev = cal.device
    dt = DT[dtype]
    calls = []
    for r, c in shapes:
        for kind in ("add", "mul_scalar", "mul", "gelu", "silu", "softmax", "layer_norm", "copy"):

            def make(r=r, c=c, kind=kind):
                x = torch.randn(r, c, device=dev, dtype=dt)
                if kind == "add":
                    y = torch.randn(r, c, device=dev, dtype=dt)
                    return lambda: torch.add(x, y)
                if kind == "mul_scalar":
                    return lambda: torch.mul(x, 0.125)
                if kind == "mul":
                    y = torch.randn(r, c, device=dev, dtype=dt)
                    return lambda: torch.mul(x, y)
                if kind == "gelu":
                    return lambda: F.gelu(x, approximate="tanh")
                if kind == "silu":
                    return lambda: F.silu(x)
                if kind == "softmax":
                    return lambda: torch.softmax(x, dim=-1)
                if kind == "layer_norm":
                    w = torch.ones(c, device=dev, dtype=dt)
                    b = torch.zeros(c, device=dev, dtype=dt)
                    return lambda: F.layer_norm(x, (c,), w, b, 1e-5)
                # A cache write: rows of x into every other row of a buffer twice as long.
                dst = torch.empty(2 * r, c, device=dev, dtype=dt)
                view = dst[::2]
                return lambda: view.copy_(x)

            calls.append(make)
    return calls


def env_info(device):
    info = dict(python=sys.version.split()[0], torch=torch.__version__, platform=platform.platform())
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(0)
        info.update(
            device=torch.cuda.get_device_name(0),
            sms=p.multi_processor_count,
            cuda=torch.version.cuda,
            cudnn=torch.backends.cudnn.version(),
            fp32_matmul_precision=torch.get_float32_matmul_precision(),
        )
    return info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget-s", type=float, default=120.0, help="start no new chunk after this")
    ap.add_argument("--quick", action="store_true", help="tiny shapes, for a check of the code paths")
    args = ap.parse_args()
    cal = Calibrator(args.device, args.budget_s, args.quick)
    gb = 1 << 30
    chunks = []
    for dtype in ("fp32", "fp16"):
        cap_flops = 2e11 if dtype == "fp32" else 2e12
        for op, layout in (("addmm", "nn"), ("mm", "nt"), ("mm", "nn"), ("addmm", "nt")):
            chunks.append((f"{op}.{layout}.{dtype}", lambda dtype=dtype, op=op, layout=layout, cap=cap_flops: product_calls(cal, dtype, op, layout, product_shapes(args.quick), 2 * gb, cap)))
        for layout in ("nt", "nn"):
            chunks.append((f"bmm.{layout}.{dtype}", lambda dtype=dtype, layout=layout, cap=cap_flops: bmm_calls(cal, dtype, layout, bmm_shapes(args.quick), 2.2 * gb, cap)))
    # fp16 products before fp32's less common layouts; elementwise and bf16 last.
    order = ["addmm.nn.fp32", "bmm.nt.fp32", "bmm.nn.fp32", "mm.nt.fp32", "addmm.nn.fp16", "mm.nt.fp16", "bmm.nt.fp16", "bmm.nn.fp16", "addmm.nt.fp16", "addmm.nt.fp32", "mm.nn.fp16", "mm.nn.fp32"]
    by_name = dict(chunks)
    plan = [(n, by_name[n]) for n in order]
    for dtype in ("fp16", "fp32", "bf16"):
        plan.append((f"elementwise.{dtype}", lambda dtype=dtype: ew_calls(cal, dtype, ew_shapes(args.quick))))
    # Warm-up: one call of each op kind outside the profiler (library handles, lazy modules).
    for _name, build in plan[:1]:
        for make in build()[:3]:
            fn = make()
            fn()
            fn()
    for name, build in plan:
        cal.run_chunk(name, build())
        with open(args.out, "w") as f:
            json.dump(
                dict(
                    schema="memscope.library-calibration/1",
                    environment=env_info(args.device),
                    method=dict(
                        calls_per_shape=CALLS,
                        statistic="median of the calls' kernel time (sum of the kernels each call launched)",
                        l2_flush_bytes_before_each_call=FLUSH_BYTES if not args.quick else None,
                        profiler="torch.profiler, CPU and CUDA activities, record_shapes",
                    ),
                    chunks=cal.chunks,
                    skipped=cal.skipped,
                    records=cal.records,
                ),
                f,
            )
    print(f"done: {len(cal.records)} records in {cal.elapsed():.1f} s; skipped {cal.skipped}", flush=True)


if __name__ == "__main__":
    main()
