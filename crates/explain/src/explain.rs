//! `memscope explain`'s analysis of one trace: every GPU kernel tied to the framework op that
//! launched it (correlation id to the host's launch call, then the enclosing ops on that thread
//! by time), its work, its bound from the session's ceilings and its efficiency; then the whole
//! trace: device-busy time, the host's dispatch per op and per step, the device's idle gaps, which
//! chain sets each step, and the ops and classes ranked by time lost against their bounds
//! (docs/MODEL.md, "Real programs"; JSON in docs/CONTRACTS.md, "memscope explain").

use crate::ceilings::{Bound, Ceilings};
use crate::ops::{class_of_kernel, estimated_cost, known_cost_with, Dtype, OpClass, OpCost};
use crate::trace::{Category, Event, Trace};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

pub const SCHEMA: &str = "memscope.explain/1";

/// One GPU kernel (or copy, or fill).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRow {
    pub name: String,
    pub stream: String,
    pub start_us: f64,
    pub duration_s: f64,
    /// The op whose work it is counted in (the innermost enclosing op memscope knows, else the
    /// innermost one); None when no host op launched it (a CUDA-graph replay).
    pub op: Option<String>,
    /// The outermost op on the host stack when it was launched.
    pub top_op: Option<String>,
    /// Index into `ops` of its op instance.
    pub op_index: Option<usize>,
    pub class: OpClass,
    pub known: bool,
    /// Its share of the op's bound (by duration when the op ran several kernels).
    pub bound_s: Option<f64>,
    pub ceiling: Option<String>,
    pub efficiency: Option<f64>,
    pub lost_s: Option<f64>,
    /// Host time from its launch call's start to its own start, seconds.
    pub launch_to_start_s: Option<f64>,
    pub step: Option<usize>,
}

/// One op instance that ran GPU work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpRow {
    pub name: String,
    pub top_op: Option<String>,
    pub input_dims: Vec<Value>,
    pub input_types: Vec<String>,
    pub cost: OpCost,
    pub kernels: usize,
    /// Summed duration of its kernels.
    pub device_s: f64,
    /// Host time of the op (its own span on the host).
    pub host_s: f64,
    pub bound: Option<Bound>,
    pub efficiency: Option<f64>,
    pub lost_s: Option<f64>,
    pub step: Option<usize>,
}

/// The ops of one class together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassRow {
    pub class: OpClass,
    pub ops: usize,
    pub kernels: usize,
    pub device_s: f64,
    pub bound_s: f64,
    pub lost_s: f64,
    /// bound / device time over the class.
    pub efficiency: Option<f64>,
}

/// The ops of one name together (host dispatch and device time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpNameRow {
    pub name: String,
    pub count: usize,
    pub host_median_s: f64,
    pub host_total_s: f64,
    pub device_s: f64,
    pub lost_s: f64,
}

/// One profiler step (or the whole trace when it has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub name: String,
    pub start_us: f64,
    /// The step annotation's host span.
    pub host_s: f64,
    /// Summed host time of its top-level framework ops.
    pub dispatch_s: f64,
    pub top_level_ops: usize,
    pub kernels: usize,
    /// From the step's start to the end of its last launch call.
    pub host_chain_s: f64,
    /// Union of its kernels' intervals.
    pub device_busy_s: f64,
    /// The step's span on the device when the trace records it (`gpu_user_annotation`), else from
    /// the step's start on the host to the later of its end and its last kernel's end.
    pub wall_s: f64,
    /// Device idle time between its first and last kernel.
    pub idle_s: f64,
    /// `host` when the host's chain (dispatch) is longer than the device's (busy time), else
    /// `device`.
    pub sets: String,
}

/// An idle stretch of the device between two kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    pub start_us: f64,
    pub duration_s: f64,
    pub after: String,
    pub before: String,
    /// True when the next kernel's launch call started after the device went idle (the device
    /// waited for the host).
    pub waiting_for_host: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gaps {
    pub count: usize,
    pub total_s: f64,
    pub waiting_for_host_s: f64,
    pub largest: Vec<Gap>,
}

/// The framework's dispatch floor, a ceiling of its own: what the host pays per op and per launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchFloor {
    /// Median host time of a top-level framework op that launched GPU work.
    pub per_op_s: Option<f64>,
    pub ops_counted: usize,
    /// Median host time of one kernel-launch call (`cudaLaunchKernel` and kin).
    pub per_launch_s: Option<f64>,
    pub launches_counted: usize,
    /// Median host time between consecutive launches of a step (dispatch per kernel, all host work
    /// included).
    pub per_kernel_s: Option<f64>,
}

/// Everything `explain` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub schema: String,
    pub trace: String,
    pub ceilings: Option<Ceilings>,
    pub kernel_count: usize,
    /// Union of all GPU work intervals.
    pub device_busy_s: f64,
    /// Sum of all GPU work durations.
    pub kernel_sum_s: f64,
    /// Share of GPU time in ops memscope knows.
    pub known_fraction: f64,
    /// Share of GPU time with no launching op (graph replays, unmatched correlation ids).
    pub unattributed_fraction: f64,
    pub dispatch_floor: DispatchFloor,
    pub steps: Vec<StepRow>,
    pub gaps: Gaps,
    /// Ranked by time lost.
    pub classes: Vec<ClassRow>,
    /// Ranked by time lost.
    pub op_names: Vec<OpNameRow>,
    /// Every op instance, in launch order.
    pub ops: Vec<OpRow>,
    /// Every kernel, in start order.
    pub kernels: Vec<KernelRow>,
}

pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) })
}

/// Union length of intervals (microseconds in, seconds out), and the merged intervals.
fn union(mut iv: Vec<(f64, f64)>) -> (f64, Vec<(f64, f64)>) {
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f64, f64)> = Vec::new();
    for (s, e) in iv {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    (merged.iter().map(|(s, e)| e - s).sum::<f64>() * 1e-6, merged)
}

fn is_launch(name: &str) -> bool {
    name.contains("Launch") || name.contains("Memcpy") || name.contains("Memset")
}

/// For every runtime call with a correlation id: the ops enclosing it on its thread (outermost
/// first), found by a sweep over each thread's ops and calls in time order. Also each op's
/// depth (0 = top level).
fn enclosing(events: &[Event]) -> (HashMap<usize, Vec<usize>>, Vec<usize>) {
    let mut by_thread: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if e.cat == Category::Op || (e.cat == Category::Runtime && e.correlation.is_some()) {
            by_thread.entry((&e.pid, &e.tid)).or_default().push(i);
        }
    }
    let mut stacks = HashMap::new();
    let mut depth = vec![usize::MAX; events.len()];
    for (_, idx) in by_thread {
        let mut stack: Vec<usize> = Vec::new();
        for i in idx {
            let e = &events[i];
            while let Some(&top) = stack.last() {
                if events[top].end_us() <= e.ts_us {
                    stack.pop();
                } else {
                    break;
                }
            }
            if e.cat == Category::Op {
                depth[i] = stack.len();
                stack.push(i);
            } else {
                stacks.insert(i, stack.clone());
            }
        }
    }
    (stacks, depth)
}

/// The op to count a kernel's work in: the innermost enclosing op memscope knows, else the
/// innermost with recorded inputs, else the innermost.
fn costed_op(events: &[Event], chain: &[usize], list_dtype: Option<Dtype>) -> Option<(usize, OpCost)> {
    for &i in chain.iter().rev() {
        let e = &events[i];
        if let Some(c) = known_cost_with(&e.name, &e.input_dims, &e.input_types, &e.concrete, list_dtype) {
            return Some((i, c));
        }
    }
    let i = chain.iter().rev().find(|&&i| !events[i].input_dims.is_empty()).or(chain.last())?;
    let e = &events[*i];
    Some((*i, estimated_cost(&e.input_dims, &e.input_types)))
}

/// Analyse a trace; `ceilings` bound its ops when given.
pub fn explain(trace: &Trace, name: &str, ceilings: Option<&Ceilings>) -> Explanation {
    explain_with(trace, name, ceilings, None)
}

/// The kernels of one step of an explained trace, in start order, with their ops: the template
/// a CUDA-graph replay of the same step borrows its ops from.
fn template_step(x: &Explanation) -> Vec<(&str, usize)> {
    let attributed = |si: usize| x.kernels.iter().filter(|k| k.step == Some(si) && k.op.is_some()).count();
    let best = (0..x.steps.len()).max_by_key(|&si| (attributed(si), si));
    let mut ks: Vec<&KernelRow> = x.kernels.iter().filter(|k| best.is_some() && k.step == best).collect();
    ks.sort_by(|a, b| a.start_us.total_cmp(&b.start_us));
    ks.iter().filter_map(|k| Some((k.name.as_str(), k.op_index?))).collect()
}

/// `explain`, where kernels no framework op launched (a CUDA-graph replay) take the op of the
/// kernel at the same place in a step of `ops_from` (an explained eager trace of the same step)
/// when their step has as many kernels as that one and the names match.
pub fn explain_with(
    trace: &Trace,
    name: &str,
    ceilings: Option<&Ceilings>,
    ops_from: Option<&Explanation>,
) -> Explanation {
    let template: Vec<(&str, usize)> = ops_from.map(template_step).unwrap_or_default();
    let ev = &trace.events;
    let (stacks, depth) = enclosing(ev);
    let mut launch_of: HashMap<i64, usize> = HashMap::new();
    for (i, e) in ev.iter().enumerate() {
        if e.cat == Category::Runtime {
            if let Some(c) = e.correlation {
                launch_of.entry(c).or_insert(i);
            }
        }
    }
    // Steps: ProfilerStep annotations, else the whole trace.
    let mut step_windows: Vec<(String, f64, f64)> = ev
        .iter()
        .filter(|e| e.cat == Category::Annotation && e.name.starts_with("ProfilerStep#"))
        .map(|e| (e.name.clone(), e.ts_us, e.end_us()))
        .collect();
    if step_windows.is_empty() {
        let start = ev.first().map(|e| e.ts_us).unwrap_or(0.0);
        let end = ev.iter().map(Event::end_us).fold(start, f64::max);
        step_windows.push(("whole trace".into(), start, end));
    }
    let step_at = |t: f64| step_windows.iter().position(|(_, s, e)| t >= *s && t <= *e);
    // The same steps' spans on the device, when the trace has them: kernels belong to the step
    // whose device span holds their start (a graph replay's kernels run long after its launch).
    let device_windows: Vec<Option<(f64, f64)>> = step_windows
        .iter()
        .map(|(n, _, _)| {
            ev.iter().find(|e| e.cat == Category::GpuAnnotation && &e.name == n).map(|e| (e.ts_us, e.end_us()))
        })
        .collect();
    let kernel_step = |kernel_ts: f64, launch_ts: Option<f64>| {
        if device_windows.iter().any(Option::is_some) {
            device_windows.iter().position(|w| w.map(|(s, e)| kernel_ts >= s && kernel_ts <= e).unwrap_or(false))
        } else {
            step_at(launch_ts.unwrap_or(kernel_ts))
        }
    };

    // The most common element type of the ops' first tensors (for tensor lists, whose type the
    // trace does not record).
    let mut dtype_count: HashMap<Dtype, usize> = HashMap::new();
    for e in ev.iter().filter(|e| e.cat == Category::Op) {
        if let Some(d) = e.input_types.iter().find_map(|t| Dtype::parse(t)) {
            *dtype_count.entry(d).or_default() += 1;
        }
    }
    let list_dtype = dtype_count
        .into_iter()
        .filter(|(d, _)| matches!(d, Dtype::Fp32 | Dtype::Fp16 | Dtype::Bf16))
        .max_by_key(|(d, n)| (*n, d.name()))
        .map(|(d, _)| d);

    // Kernels and their ops.
    let mut ops: Vec<OpRow> = Vec::new();
    let mut op_slot: HashMap<usize, usize> = HashMap::new();
    let mut kernels: Vec<KernelRow> = Vec::new();
    let mut kernel_launch: Vec<Option<usize>> = Vec::new();
    let device_step = |e: &Event| {
        let launch = e.correlation.and_then(|c| launch_of.get(&c).copied());
        kernel_step(e.ts_us, launch.map(|l| ev[l].ts_us))
    };
    let mut per_step: HashMap<usize, usize> = HashMap::new();
    for e in ev.iter().filter(|e| e.cat.on_device()) {
        if let Some(si) = device_step(e) {
            *per_step.entry(si).or_default() += 1;
        }
    }
    let mut position: HashMap<usize, usize> = HashMap::new();
    const ADOPTED: usize = 1 << 40;
    // Replayed kernels outside the steps, matched to the template from the end backwards (a run
    // of them ends where a replay ends: the next one starts a step, or the trace), each replay a
    // group of its own.
    let mut outside: HashMap<usize, (usize, usize)> = HashMap::new();
    if !template.is_empty() {
        // A kernel whose name breaks the sequence starts over at the template's end (its run so
        // far stays without an op).
        let (mut cursor, mut group) = (template.len() - 1, 0usize);
        let mut run: Vec<(usize, usize)> = Vec::new();
        for (ei, e) in ev.iter().enumerate().rev() {
            let launched = e.correlation.and_then(|c| launch_of.get(&c)).and_then(|l| stacks.get(l));
            if !e.cat.on_device() || device_step(e).is_some() || launched.is_some_and(|ch| !ch.is_empty()) {
                continue;
            }
            if template[cursor].0 != e.name {
                cursor = template.len() - 1;
                run.clear();
            }
            if template[cursor].0 == e.name {
                run.push((ei, template[cursor].1));
                if cursor == 0 {
                    group += 1;
                    outside.extend(run.drain(..).map(|(ei, oi)| (ei, (group, oi))));
                    cursor = template.len() - 1;
                } else {
                    cursor -= 1;
                }
            }
        }
        // The earliest run, cut by the profiler's start, is the tail of a replay: it ends where
        // the next replay starts, so its kernels line up with the template's last ones, and each
        // name followed the template back to where the trace begins. Its first op keeps no op
        // when the cut took its earlier kernels (a product's split-K reduce without the product).
        let cut_op = template[cursor].1;
        while run.last().is_some_and(|&(_, oi)| oi == cut_op) {
            run.pop();
        }
        if !run.is_empty() && run.len() < template.len() {
            group += 1;
            outside.extend(run.drain(..).map(|(ei, oi)| (ei, (group, oi))));
        }
    }
    for (ei, e) in ev.iter().enumerate().filter(|(_, e)| e.cat.on_device()) {
        let launch = e.correlation.and_then(|c| launch_of.get(&c).copied());
        let chain = launch.and_then(|l| stacks.get(&l)).cloned().unwrap_or_default();
        let step = device_step(e);
        let at = step.map(|si| {
            let p = position.entry(si).or_default();
            *p += 1;
            *p - 1
        });
        // A replayed kernel's op from the template: in a step of the template's length, the
        // kernel at the same place; outside the steps (replays issued before the profiler
        // recorded), the next kernel of the template while the names follow it. `group` keeps
        // each replay's ops apart.
        let adopted = match (step, at, ops_from) {
            (Some(si), Some(j), Some(src)) if chain.is_empty() && per_step.get(&si) == Some(&template.len()) => {
                template.get(j).filter(|(n, _)| *n == e.name).map(|&(_, oi)| (si, oi, &src.ops[oi]))
            }
            (None, _, Some(src)) if chain.is_empty() => {
                outside.get(&ei).map(|&(group, oi)| ((1 << 19) + group, oi, &src.ops[oi]))
            }
            _ => None,
        };
        let mut row = KernelRow {
            name: e.name.clone(),
            stream: e.tid.clone(),
            start_us: e.ts_us,
            duration_s: e.dur_us * 1e-6,
            op: None,
            top_op: chain.first().map(|&i| ev[i].name.clone()).or_else(|| adopted.and_then(|a| a.2.top_op.clone())),
            op_index: None,
            class: match e.cat {
                Category::Memcpy => OpClass::Memcpy,
                Category::Memset => OpClass::Memset,
                _ => class_of_kernel(&e.name),
            },
            known: false,
            bound_s: None,
            ceiling: None,
            efficiency: None,
            lost_s: None,
            launch_to_start_s: launch.map(|l| (e.ts_us - ev[l].ts_us) * 1e-6),
            step,
        };
        let costed = costed_op(ev, &chain, list_dtype)
            .or_else(|| adopted.map(|(si, oi, op)| (ADOPTED + si * (1 << 20) + oi, op.cost.clone())));
        let costed = costed.or_else(|| {
            // A copy or fill with no framework op: its own bytes.
            e.bytes.filter(|_| e.cat != Category::Kernel).map(|b| {
                let class = row.class;
                (usize::MAX, OpCost { class, flops: 0.0, bytes: b, dtype: None, gemm: None, known: true })
            })
        });
        if let Some((oi, cost)) = costed {
            let key = if oi == usize::MAX { usize::MAX - kernels.len() } else { oi };
            let slot = *op_slot.entry(key).or_insert_with(|| {
                let (name, dims, types, host_s) = if oi == usize::MAX {
                    (e.name.clone(), vec![], vec![], 0.0)
                } else if oi >= ADOPTED {
                    let op = adopted.expect("adopted op").2;
                    (op.name.clone(), op.input_dims.clone(), op.input_types.clone(), 0.0)
                } else {
                    let o = &ev[oi];
                    (o.name.clone(), o.input_dims.clone(), o.input_types.clone(), o.dur_us * 1e-6)
                };
                let mut cost = cost.clone();
                if !cost.known {
                    cost.class = row.class;
                }
                ops.push(OpRow {
                    name,
                    top_op: row.top_op.clone(),
                    input_dims: dims,
                    input_types: types,
                    cost,
                    kernels: 0,
                    device_s: 0.0,
                    host_s,
                    bound: None,
                    efficiency: None,
                    lost_s: None,
                    step: row.step,
                });
                ops.len() - 1
            });
            let op = &mut ops[slot];
            op.kernels += 1;
            op.device_s += row.duration_s;
            row.op = Some(op.name.clone());
            row.op_index = Some(slot);
            row.known = op.cost.known;
            if op.cost.known {
                row.class = op.cost.class;
            }
        }
        kernels.push(row);
        kernel_launch.push(launch);
    }

    // Bounds per op instance, shared among its kernels by duration.
    if let Some(c) = ceilings {
        let mut names: Vec<Vec<&str>> = vec![Vec::new(); ops.len()];
        for k in &kernels {
            if let Some(i) = k.op_index {
                names[i].push(&k.name);
            }
        }
        for (i, op) in ops.iter_mut().enumerate() {
            let b = c.bound(&op.cost, &names[i]);
            op.efficiency = (op.device_s > 0.0).then(|| b.bound_s / op.device_s);
            op.lost_s = Some((op.device_s - b.bound_s).max(0.0));
            op.bound = Some(b);
        }
        for k in kernels.iter_mut() {
            if let Some(op) = k.op_index.map(|i| &ops[i]) {
                let b = op.bound.as_ref().expect("bound set above");
                let share = if op.device_s > 0.0 { k.duration_s / op.device_s } else { 0.0 };
                k.bound_s = Some(b.bound_s * share);
                k.ceiling = Some(b.ceiling.clone());
                k.efficiency = op.efficiency;
                k.lost_s = Some((k.duration_s - b.bound_s * share).max(0.0));
            }
        }
    }

    // Whole-trace device time.
    let intervals: Vec<(f64, f64)> = kernels.iter().map(|k| (k.start_us, k.start_us + k.duration_s * 1e6)).collect();
    let (device_busy_s, merged) = union(intervals.clone());
    let kernel_sum_s: f64 = kernels.iter().map(|k| k.duration_s).sum();
    let known_s: f64 = kernels.iter().filter(|k| k.known).map(|k| k.duration_s).sum();
    let unattributed_s: f64 = kernels.iter().filter(|k| k.op.is_none()).map(|k| k.duration_s).sum();
    let frac = |x: f64| if kernel_sum_s > 0.0 { x / kernel_sum_s } else { 0.0 };

    // Gaps between merged busy intervals (inside steps).
    let mut order: Vec<usize> = (0..kernels.len()).collect();
    order.sort_by(|&a, &b| kernels[a].start_us.total_cmp(&kernels[b].start_us));
    let mut gaps: Vec<Gap> = Vec::new();
    for w in merged.windows(2) {
        let (end, next) = (w[0].1, w[1].0);
        let device_step_at = |t: f64| {
            if device_windows.iter().any(Option::is_some) {
                device_windows.iter().position(|w| w.map(|(s, e)| t >= s && t <= e).unwrap_or(false))
            } else {
                step_at(t)
            }
        };
        if device_step_at(end).is_none() || device_step_at(end) != device_step_at(next) {
            continue;
        }
        let after = order.iter().rev().find(|&&i| kernels[i].start_us < end).copied();
        let before = order.iter().find(|&&i| kernels[i].start_us >= next).copied();
        let waiting = before.and_then(|i| kernel_launch[i]).map(|l| ev[l].ts_us > end).unwrap_or(false);
        gaps.push(Gap {
            start_us: end,
            duration_s: (next - end) * 1e-6,
            after: after.map(|i| kernels[i].name.clone()).unwrap_or_default(),
            before: before.map(|i| kernels[i].name.clone()).unwrap_or_default(),
            waiting_for_host: waiting,
        });
    }
    let gap_total: f64 = gaps.iter().map(|g| g.duration_s).sum();
    let gap_host: f64 = gaps.iter().filter(|g| g.waiting_for_host).map(|g| g.duration_s).sum();
    let gap_count = gaps.len();
    gaps.sort_by(|a, b| b.duration_s.total_cmp(&a.duration_s));
    gaps.truncate(5);

    // Host: top-level ops, launch calls, per step.
    let top_ops: Vec<usize> = (0..ev.len()).filter(|&i| ev[i].cat == Category::Op && depth[i] == 0).collect();
    let launches: Vec<usize> = (0..ev.len())
        .filter(|&i| ev[i].cat == Category::Runtime && ev[i].correlation.is_some() && is_launch(&ev[i].name))
        .collect();
    let mut launched_top: std::collections::HashSet<usize> = std::collections::HashSet::new();
    for l in kernel_launch.iter().flatten() {
        if let Some(s) = stacks.get(l).and_then(|s| s.first()) {
            launched_top.insert(*s);
        }
    }
    let mut per_op: Vec<f64> =
        top_ops.iter().filter(|i| launched_top.contains(i)).map(|&i| ev[i].dur_us * 1e-6).collect();
    let ops_counted = per_op.len();
    let kernel_launch_calls: Vec<usize> =
        launches.iter().copied().filter(|&i| ev[i].name.contains("LaunchKernel")).collect();
    let mut per_launch: Vec<f64> = kernel_launch_calls.iter().map(|&i| ev[i].dur_us * 1e-6).collect();
    let launches_counted = per_launch.len();
    let mut steps = Vec::new();
    let mut per_kernel: Vec<f64> = Vec::new();
    for (si, (sname, s0, s1)) in step_windows.iter().enumerate() {
        let in_step = |t: f64| t >= *s0 && t <= *s1;
        let tops: Vec<usize> = top_ops.iter().copied().filter(|&i| in_step(ev[i].ts_us)).collect();
        let step_launches: Vec<usize> = launches.iter().copied().filter(|&i| in_step(ev[i].ts_us)).collect();
        for w in step_launches.windows(2) {
            per_kernel.push((ev[w[1]].ts_us - ev[w[0]].ts_us) * 1e-6);
        }
        let ks: Vec<usize> = (0..kernels.len()).filter(|&i| kernels[i].step == Some(si)).collect();
        let (busy, m) = union(ks.iter().map(|&i| intervals[i]).collect());
        let last_kernel_end = m.last().map(|x| x.1).unwrap_or(*s0);
        let span = m.last().map(|x| x.1).unwrap_or(0.0) - m.first().map(|x| x.0).unwrap_or(0.0);
        let host_chain_end = step_launches.iter().map(|&i| ev[i].end_us()).fold(*s0, f64::max);
        let host_chain_s = (host_chain_end - s0) * 1e-6;
        steps.push(StepRow {
            name: sname.clone(),
            start_us: *s0,
            host_s: (s1 - s0) * 1e-6,
            dispatch_s: tops.iter().map(|&i| ev[i].dur_us * 1e-6).sum(),
            top_level_ops: tops.len(),
            kernels: ks.len(),
            host_chain_s,
            device_busy_s: busy,
            wall_s: match device_windows[si] {
                Some((d0, d1)) => (d1 - d0) * 1e-6,
                None => (last_kernel_end.max(*s1) - s0) * 1e-6,
            },
            idle_s: (span * 1e-6 - busy).max(0.0),
            sets: if host_chain_s > busy { "host" } else { "device" }.into(),
        });
    }

    // Rankings.
    let mut classes: BTreeMap<OpClass, ClassRow> = BTreeMap::new();
    for op in &ops {
        let c = classes.entry(op.cost.class).or_insert(ClassRow {
            class: op.cost.class,
            ops: 0,
            kernels: 0,
            device_s: 0.0,
            bound_s: 0.0,
            lost_s: 0.0,
            efficiency: None,
        });
        c.ops += 1;
        c.kernels += op.kernels;
        c.device_s += op.device_s;
        c.bound_s += op.bound.as_ref().map(|b| b.bound_s).unwrap_or(0.0);
        c.lost_s += op.lost_s.unwrap_or(0.0);
    }
    let mut classes: Vec<ClassRow> = classes
        .into_values()
        .map(|mut c| {
            c.efficiency = (ceilings.is_some() && c.device_s > 0.0).then(|| c.bound_s / c.device_s);
            c
        })
        .collect();
    classes.sort_by(|a, b| b.lost_s.total_cmp(&a.lost_s).then(b.device_s.total_cmp(&a.device_s)));
    let mut names: BTreeMap<String, (Vec<f64>, f64, f64)> = BTreeMap::new();
    for op in &ops {
        let n = names.entry(op.name.clone()).or_default();
        n.0.push(op.host_s);
        n.1 += op.device_s;
        n.2 += op.lost_s.unwrap_or(0.0);
    }
    let mut op_names: Vec<OpNameRow> = names
        .into_iter()
        .map(|(name, (mut h, d, l))| OpNameRow {
            name,
            count: h.len(),
            host_total_s: h.iter().sum(),
            host_median_s: median(&mut h).unwrap_or(0.0),
            device_s: d,
            lost_s: l,
        })
        .collect();
    op_names.sort_by(|a, b| b.lost_s.total_cmp(&a.lost_s).then(b.device_s.total_cmp(&a.device_s)));

    Explanation {
        schema: SCHEMA.into(),
        trace: name.into(),
        ceilings: ceilings.cloned(),
        kernel_count: kernels.len(),
        device_busy_s,
        kernel_sum_s,
        known_fraction: frac(known_s),
        unattributed_fraction: frac(unattributed_s),
        dispatch_floor: DispatchFloor {
            per_op_s: median(&mut per_op),
            ops_counted,
            per_launch_s: median(&mut per_launch),
            launches_counted,
            per_kernel_s: median(&mut per_kernel),
        },
        steps,
        gaps: Gaps { count: gap_count, total_s: gap_total, waiting_for_host_s: gap_host, largest: gaps },
        classes,
        op_names,
        ops,
        kernels,
    }
}
