"""Times real PyTorch decode steps and records torch.profiler traces of a chosen few.

For every configuration (program, model, dtype, context, batch, mode) the step is timed
with CUDA events around each step, steps issued back to back after warm-ups; the summary
keeps the median, percentiles and a relative spread. For the traced configurations a
Chrome trace is recorded with torch.profiler (CPU and CUDA activities, record_shapes,
a wait/warmup/active schedule) and gzip-compressed, and the profiler's own overhead is
measured: the event-timed step with the profiler recording against the same step
without it.

Usage: python3 run_programs.py --out DIR [--device cuda] [--quick] [--budget-s S]
Writes DIR/summary.json (rewritten after each configuration) and DIR/traces/*.json.gz.
"""

import argparse
import gc
import gzip
import json
import os
import platform
import statistics
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpt2_step import Gpt2DecodeStep  # noqa: E402
from llama_step import LlamaDecodeStep  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def program_class(program):
    if program == "gpt2-handwritten":
        return Gpt2DecodeStep
    if program == "llama-handwritten":
        return LlamaDecodeStep
    if program == "hf-gpt2":
        from hf_gpt2_step import HfGpt2DecodeStep

        return HfGpt2DecodeStep
    raise ValueError(f"unknown program {program}")


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


class StepTimer:
    """Per-step elapsed times: CUDA events on a GPU, wall clock (with syncs) on a CPU."""

    def __init__(self, device):
        self.cuda = device.startswith("cuda")
        self.device = device

    def run(self, fn, n):
        if self.cuda:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            issue = []
            t0 = time.perf_counter()
            for i in range(n):
                a = time.perf_counter()
                starts[i].record()
                fn()
                ends[i].record()
                issue.append(time.perf_counter() - a)
            torch.cuda.synchronize()
            wall = time.perf_counter() - t0
            self.issue_s = issue
            return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)], wall
        times = []
        t0 = time.perf_counter()
        for _ in range(n):
            a = time.perf_counter()
            fn()
            times.append(time.perf_counter() - a)
        return times, time.perf_counter() - t0


def stats(times):
    s = sorted(times)
    n = len(s)
    med = statistics.median(s)

    def pct(p):
        return s[min(n - 1, max(0, round(p * (n - 1))))]

    return dict(
        step_time_s=med,
        p10_s=pct(0.10),
        p90_s=pct(0.90),
        min_s=s[0],
        max_s=s[-1],
        spread=(pct(0.90) - pct(0.10)) / med if med > 0 else None,
        n=n,
    )


def capture_graph(prog):
    """Warm the step on a side stream, then capture one step into a CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            prog.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        prog.step()
    torch.cuda.synchronize()
    return graph


def free(*objs):
    for o in objs:
        del o
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def profiler_activities(device):
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    return acts


def profiled_step_times(fn, device, wait, warmup, active):
    """Per-step times while the profiler records; the active steps' are returned.

    Steps run back to back as in the unprofiled timing (events on a GPU, read after one
    sync at the end), so the ratio to the unprofiled median is the profiler's own cost.
    """
    n = wait + warmup + active
    cuda = device.startswith("cuda")
    marks = []
    sched = torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1)
    with torch.profiler.profile(
        activities=profiler_activities(device), schedule=sched, record_shapes=True
    ) as prof:
        for _ in range(n):
            if cuda:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                marks.append((s, e))
            else:
                a = time.perf_counter()
                fn()
                marks.append(time.perf_counter() - a)
            prof.step()
    sync(device)
    times = [s.elapsed_time(e) / 1e3 for s, e in marks] if cuda else marks
    return times[wait + warmup:]


def record_trace(fn, device, path_gz, wait, warmup, active):
    """Record a Chrome trace of `active` steps and gzip it; returns facts about it."""
    path_json = path_gz[: -len(".gz")]
    sched = torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1)
    t0 = time.perf_counter()
    with torch.profiler.profile(
        activities=profiler_activities(device),
        schedule=sched,
        record_shapes=True,
        on_trace_ready=lambda p: p.export_chrome_trace(path_json),
    ) as prof:
        for _ in range(wait + warmup + active):
            fn()
            prof.step()
    sync(device)
    export_s = time.perf_counter() - t0
    with open(path_json, "rb") as f:
        raw = f.read()
    with gzip.open(path_gz, "wb", compresslevel=9) as f:
        f.write(raw)
    os.remove(path_json)
    doc = json.loads(raw)
    events = doc.get("traceEvents", [])
    cats = {}
    for e in events:
        cats[e.get("cat", "")] = cats.get(e.get("cat", ""), 0) + 1
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"]
    kernel_us = sum(e.get("dur", 0) for e in events if e.get("cat") == "kernel")
    return dict(
        file=os.path.basename(path_gz),
        bytes_json=len(raw),
        bytes_gz=os.path.getsize(path_gz),
        events_by_cat=cats,
        profiler_steps=len(steps),
        profiler_step_durs_us=[e.get("dur") for e in steps],
        kernel_time_sum_us=kernel_us,
        record_and_export_s=export_s,
    )


def env_info(device):
    info = dict(
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        cudnn=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        allow_tf32_matmul=torch.backends.cuda.matmul.allow_tf32,
        host=platform.node(),
    )
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(0)
        info.update(
            gpu=p.name,
            sm_count=p.multi_processor_count,
            gpu_memory_bytes=p.total_memory,
            capability=f"{p.major}.{p.minor}",
        )
    try:
        import transformers

        info["transformers"] = transformers.__version__
    except Exception as exc:  # recorded, not fatal
        info["transformers"] = f"not importable: {exc.__class__.__name__}: {exc}"
    return info


def sweep_configs(quick):
    """(program, model, dtype, context, batches, modes) groups of the step-time sweep."""
    if quick:
        return [
            ("gpt2-handwritten", "gpt2-small", "fp32", 16, [1, 2], ["eager", "graph"]),
            ("llama-handwritten", "llama-1b", "fp32", 16, [1, 2], ["eager", "graph"]),
            ("hf-gpt2", "gpt2-small", "fp32", 16, [1], ["eager"]),
        ]
    gpt2_batches = [1, 8, 32, 64, 128, 256, 512]
    both = ["eager", "graph"]

    def gpt2(model):
        return [
            ("gpt2-handwritten", model, dtype, ctx, gpt2_batches, both)
            for dtype in ("fp16", "fp32")
            for ctx in (128, 1024)
        ]

    groups = gpt2("gpt2-small")
    for ctx in (1024, 4096):
        groups.append(("llama-handwritten", "llama-1b", "bf16", ctx, [1, 8, 32, 64, 128, 256], both))
    groups.append(("hf-gpt2", "gpt2-small", "fp16", 512, [1, 8, 64], ["eager"]))
    return groups + gpt2("gpt2-medium")


def trace_configs(quick):
    """(program, model, dtype, context, batch, modes) traced, each with its overhead."""
    if quick:
        return [
            ("gpt2-handwritten", "gpt2-small", "fp32", 16, 2, ["eager"]),
            ("llama-handwritten", "llama-1b", "fp32", 16, 2, ["eager"]),
            ("hf-gpt2", "gpt2-small", "fp32", 16, 1, ["eager"]),
        ]
    return [
        ("gpt2-handwritten", "gpt2-small", "fp16", 1024, 1, ["eager", "graph"]),
        ("gpt2-handwritten", "gpt2-small", "fp16", 1024, 64, ["eager", "graph"]),
        ("gpt2-handwritten", "gpt2-small", "fp32", 128, 8, ["eager"]),
        ("gpt2-handwritten", "gpt2-medium", "fp16", 1024, 8, ["eager"]),
        ("llama-handwritten", "llama-1b", "bf16", 1024, 1, ["eager", "graph"]),
        ("llama-handwritten", "llama-1b", "bf16", 1024, 32, ["eager", "graph"]),
        ("hf-gpt2", "gpt2-small", "fp16", 512, 8, ["eager"]),
    ]


def short_name(program):
    return {"gpt2-handwritten": "gpt2", "llama-handwritten": "llama", "hf-gpt2": "hfgpt2"}[program]


class Runner:
    def __init__(self, args):
        self.args = args
        self.device = args.device
        self.t_start = time.perf_counter()
        self.summary = dict(
            schema="memscope-real-programs-v1",
            environment=env_info(args.device),
            method=dict(
                timer="CUDA events recorded around each step; steps issued back to back with no host "
                "sync between them (the greedy next token is fed back on the device)",
                warmup_steps=args.warmup,
                timed_steps=f"{args.reps}, or 15 where a warm-up step took over 20 ms (n gives the count)",
                spread="(p90 - p10) / median of the per-step times",
                graph_mode="one step captured with torch.cuda.graph after 3 warm-up steps on a side "
                "stream; the timed step is graph.replay()",
                context="positions each sequence's cache holds and the query attends (the new key and "
                "value are written at the last one); hf-gpt2 grows its cache by one each step",
                profiler=dict(
                    activities="CPU+CUDA",
                    record_shapes=True,
                    trace_schedule=dict(wait=1, warmup=2, active=args.trace_active),
                    overhead_schedule=dict(wait=1, warmup=2, active=args.overhead_active),
                    overhead="median event-timed step while the profiler records / the median without it",
                ),
            ),
            steps=[],
            traces=[],
            errors=[],
            skipped=[],
        )
        self.out = args.out
        os.makedirs(os.path.join(self.out, "traces"), exist_ok=True)

    def elapsed(self):
        return time.perf_counter() - self.t_start

    def save(self):
        self.summary["elapsed_s"] = self.elapsed()
        path = os.path.join(self.out, "summary.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.summary, f, indent=1)
        os.replace(path + ".tmp", path)

    def log(self, msg):
        print(f"[{self.elapsed():7.1f}s] {msg}", flush=True)

    def error(self, where, exc):
        tb = traceback.format_exc()
        self.log(f"ERROR {where}: {exc.__class__.__name__}: {exc}")
        print(tb, flush=True)
        self.summary["errors"].append(dict(where=where, error=f"{exc.__class__.__name__}: {exc}"))

    def build(self, program, model, dtype, ctx, batch):
        cls = program_class(program)
        prog = cls(model, DTYPES[dtype], ctx, batch, device=self.device)
        sync(self.device)
        return prog

    def modes_fns(self, prog, modes):
        """Yields (mode, fn) for each mode, capturing the graph when asked."""
        for mode in modes:
            if mode == "eager":
                yield mode, prog.step, None
            elif mode == "graph":
                if not self.device.startswith("cuda") or not getattr(prog, "graph_capable", True):
                    continue
                t0 = time.perf_counter()
                graph = capture_graph(prog)
                yield mode, graph.replay, time.perf_counter() - t0
                del graph
                gc.collect()

    def time_step(self, fn):
        """Median and spread of event-timed steps; fewer repetitions for steps over 20 ms."""
        timer = StepTimer(self.device)
        sync(self.device)
        t0 = time.perf_counter()
        for _ in range(self.args.warmup):
            fn()
        sync(self.device)
        per_step = (time.perf_counter() - t0) / max(1, self.args.warmup)
        reps = self.args.reps if per_step < 0.02 else min(self.args.reps, 15)
        times, wall = timer.run(fn, reps)
        st = stats(times)
        st["wall_step_s"] = wall / len(times)
        if self.args.keep_times:
            st["times_s"] = times
            st["host_issue_s"] = getattr(timer, "issue_s", None)
        return st

    def base_record(self, prog, program, model, dtype, ctx, batch, mode):
        return dict(
            program=program,
            model=model,
            dtype=dtype,
            context=ctx,
            batch=batch,
            mode=mode,
            weight_bytes=prog.weight_bytes(),
            cache_bytes=prog.cache_bytes(),
            matmul_flops=prog.flops_per_step(),
        )

    def do_traces(self):
        a = self.args
        for program, model, dtype, ctx, batch, modes in trace_configs(a.quick):
            where = f"trace {program} {model} {dtype} ctx{ctx} b{batch}"
            if self.elapsed() > a.budget_s:
                self.summary["skipped"].append(dict(where=where, reason="time budget"))
                continue
            prog = None
            try:
                self.log(f"{where}: build")
                prog = self.build(program, model, dtype, ctx, batch)
                for mode, fn, capture_s in self.modes_fns(prog, modes):
                    rec = self.base_record(prog, program, model, dtype, ctx, batch, mode)
                    ctx0 = ctx + getattr(prog, "steps_taken", 0)
                    base = self.time_step(fn)
                    prof_times = profiled_step_times(fn, self.device, 1, 2, a.overhead_active)
                    after = self.time_step(fn)
                    name = f"{short_name(program)}_{model.split('-')[-1]}_{dtype}_ctx{ctx}_b{batch}_{mode}.json.gz"
                    facts = record_trace(fn, self.device, os.path.join(self.out, "traces", name), 1, 2, a.trace_active)
                    prof_med = statistics.median(prof_times)
                    no_prof = statistics.median([base["step_time_s"], after["step_time_s"]])
                    rec.update(
                        step_time_s=base["step_time_s"],
                        step_time_after_s=after["step_time_s"],
                        spread=base["spread"],
                        n=base["n"],
                        profiled_step_time_s=prof_med,
                        profiled_step_times_s=prof_times,
                        profiler_overhead=prof_med / no_prof if no_prof > 0 else None,
                        graph_capture_s=capture_s,
                        **facts,
                    )
                    if program == "hf-gpt2":
                        rec["context_at_trace_start"] = ctx + prog.steps_taken - (1 + 2 + a.trace_active)
                        rec["context_at_timing_start"] = ctx0
                    self.summary["traces"].append(rec)
                    self.log(
                        f"{where} {mode}: step {base['step_time_s']*1e3:.3f} ms (after {after['step_time_s']*1e3:.3f}),"
                        f" profiled {prof_med*1e3:.3f} ms (x{rec['profiler_overhead']:.2f}),"
                        f" trace {facts['bytes_gz']/1e3:.0f} kB gz ({facts['bytes_json']/1e6:.2f} MB json),"
                        f" kernels {facts['events_by_cat'].get('kernel', 0)}, steps {facts['profiler_steps']}"
                    )
                    self.save()
            except Exception as exc:
                self.error(where, exc)
            finally:
                prog = None
                free()

    def do_sweep(self):
        a = self.args
        for program, model, dtype, ctx, batches, modes in sweep_configs(a.quick):
            for batch in batches:
                where = f"sweep {program} {model} {dtype} ctx{ctx} b{batch}"
                if self.elapsed() > a.budget_s:
                    self.summary["skipped"].append(dict(where=where, reason="time budget"))
                    continue
                prog = None
                try:
                    prog = self.build(program, model, dtype, ctx, batch)
                    for mode, fn, capture_s in self.modes_fns(prog, modes):
                        rec = self.base_record(prog, program, model, dtype, ctx, batch, mode)
                        if program == "hf-gpt2":
                            rec["context_at_timing_start"] = ctx + prog.steps_taken + a.warmup
                        rec.update(self.time_step(fn))
                        rec["graph_capture_s"] = capture_s
                        self.summary["steps"].append(rec)
                        self.log(
                            f"{where} {mode}: {rec['step_time_s']*1e3:.3f} ms "
                            f"(p10 {rec['p10_s']*1e3:.3f}, p90 {rec['p90_s']*1e3:.3f}, n {rec['n']})"
                        )
                except Exception as exc:
                    self.error(where, exc)
                finally:
                    prog = None
                    free()
                self.save()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--quick", action="store_true", help="tiny shapes, for a CPU check of the code paths")
    ap.add_argument("--budget-s", type=float, default=200.0, help="start no new configuration after this")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--trace-active", type=int, default=3)
    ap.add_argument("--overhead-active", type=int, default=8)
    ap.add_argument("--skip-traces", action="store_true")
    ap.add_argument(
        "--keep-times",
        action="store_true",
        help="keep each step's event time and host issue time (times_s, host_issue_s) in the records",
    )
    ap.add_argument("--skip-sweep", action="store_true")
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("error: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
        sys.exit(2)
    runner = Runner(args)
    runner.log(json.dumps(runner.summary["environment"]))
    with torch.inference_mode():
        if not args.skip_traces:
            runner.do_traces()
        runner.save()
        if not args.skip_sweep:
            runner.do_sweep()
    runner.save()
    runner.log(
        f"done: {len(runner.summary['steps'])} steps, {len(runner.summary['traces'])} traces, "
        f"{len(runner.summary['errors'])} errors, {len(runner.summary['skipped'])} skipped"
    )


if __name__ == "__main__":
    main()
