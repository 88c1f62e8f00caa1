"""Why is an eager decode step slower than its graph replay when the device sets the step?

For gpt2-handwritten gpt2-medium fp16 context 1024 at several batches: per-step event times and
host issue times, steps back to back (eager, eager with Python's gc off, graph replay, eager again
after the graph), eager with a sync after each step (the host's own dispatch time), the caching
allocator's counters around each loop, and profiler traces (eager, 8 steps; graph, 3) at one batch.

Usage: python3 diag_eager.py OUT BATCHES TRACE_BATCH   (e.g. OUT 8,64,128,256,512 256)
Writes OUT/diag.json and OUT/traces/*.json.gz. results/h200/real-programs-repeat/README.md has
the run and what it found."""
import gc, gzip, json, os, sys, time, statistics
import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "programs"))
from gpt2_step import Gpt2DecodeStep

OUT = sys.argv[1]
BATCHES = [int(x) for x in sys.argv[2].split(",")]
TRACE_B = int(sys.argv[3])
os.makedirs(f"{OUT}/traces", exist_ok=True)
T0 = time.time()
res = dict(t0_unix=T0, runs=[])

def q(v, p):
    s = sorted(v); return s[min(len(s) - 1, max(0, round(p * (len(s) - 1))))]

def summ(v):
    return dict(median_ms=statistics.median(v) * 1e3, p10_ms=q(v, .1) * 1e3, p90_ms=q(v, .9) * 1e3,
                min_ms=min(v) * 1e3, max_ms=max(v) * 1e3, n=len(v))

def mem():
    s = torch.cuda.memory_stats()
    return {k: s.get(k) for k in ("num_alloc_retries", "num_device_alloc", "num_device_free",
                                  "segment.all.current", "allocation.all.allocated", "num_sync_all_streams")}

def back_to_back(fn, n, sync_each=False):
    st = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    host_issue, host_t = [], []
    torch.cuda.synchronize()
    m0 = mem(); w0 = time.time()
    for i in range(n):
        a = time.perf_counter()
        st[i].record(); fn(); en[i].record()
        b = time.perf_counter()
        if sync_each:
            torch.cuda.synchronize()
        host_issue.append(b - a); host_t.append(time.time() - T0)
    torch.cuda.synchronize()
    dev = [s.elapsed_time(e) / 1e3 for s, e in zip(st, en)]
    return dict(event_s=dev, host_issue_s=host_issue, host_t=host_t, wall_s=time.time() - w0,
                mem_before=m0, mem_after=mem(), event=summ(dev), host=summ(host_issue))

def capture(prog):
    side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3): prog.step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g): prog.step()
    torch.cuda.synchronize(); return g

def trace(fn, name, active=3):
    path = f"{OUT}/traces/{name}.json"
    sched = torch.profiler.schedule(wait=1, warmup=2, active=active, repeat=1)
    marks = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                                schedule=sched, record_shapes=True,
                                on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(3 + active):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); marks.append((s, e)); prof.step()
    torch.cuda.synchronize()
    raw = open(path, "rb").read()
    with gzip.open(path + ".gz", "wb", compresslevel=9) as f: f.write(raw)
    os.remove(path)
    return [s.elapsed_time(e) / 1e3 for s, e in marks][3:]

def log(m): print(f"[{time.time()-T0:6.1f}s] {m}", flush=True)

with torch.inference_mode():
    for b in BATCHES:
        try:
            prog = Gpt2DecodeStep("gpt2-medium", torch.float16, 1024, b)
            torch.cuda.synchronize()
            r = dict(batch=b, t_build=time.time() - T0)
            for _ in range(5): prog.step()
            r["eager"] = back_to_back(prog.step, 200)
            r["eager_sync_each"] = back_to_back(prog.step, 40, sync_each=True)
            gc.disable(); r["eager_gc_off"] = back_to_back(prog.step, 100); gc.enable()
            if b == TRACE_B:
                r["profiled_eager_s"] = trace(prog.step, f"gpt2_medium_fp16_ctx1024_b{b}_eager", active=8)
            g = capture(prog)
            for _ in range(5): g.replay()
            r["graph"] = back_to_back(g.replay, 100)
            if b == TRACE_B:
                r["profiled_graph_s"] = trace(g.replay, f"gpt2_medium_fp16_ctx1024_b{b}_graph")
            del g
            r["eager_after_graph"] = back_to_back(prog.step, 100)
            res["runs"].append(r)
            log(f"b{b}: " + "  ".join(f"{k} ev {r[k]['event']['median_ms']:.3f} (p10 {r[k]['event']['p10_ms']:.3f} p90 {r[k]['event']['p90_ms']:.3f}) host {r[k]['host']['median_ms']:.3f}/{r[k]['host']['p90_ms']:.3f}/{r[k]['host']['max_ms']:.3f}"
                                    for k in ("eager", "eager_sync_each", "eager_gc_off", "graph", "eager_after_graph")))
            log(f"b{b}: mem {r['eager']['mem_before']} -> {r['eager_after_graph']['mem_after']}")
        except Exception as exc:
            log(f"b{b}: ERROR {exc!r}")
        prog = None; gc.collect(); torch.cuda.empty_cache()
        json.dump(res, open(f"{OUT}/diag.json", "w"))
log("done")
