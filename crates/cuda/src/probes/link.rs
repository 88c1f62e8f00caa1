//! `link`: host <-> device over the GPU's link (docs/INTERCONNECT.md), with nvbandwidth's test names so a
//! user can compare line by line (NVIDIA/nvbandwidth testcase.h: host_to_device_memcpy_ce,
//! device_to_host_memcpy_ce, host_to_device_bidirectional_memcpy_ce,
//! device_to_host_bidirectional_memcpy_ce, host_to_device_memcpy_sm, device_to_host_memcpy_sm,
//! the two bidirectional _sm tests and host_device_latency_sm); pageable host memory is ours
//! (`_ce_pageable`: nvbandwidth copies pinned memory only). Bandwidth by size (4 KiB .. 1 GiB,
//! x4 steps; pageable copies to 256 MiB; 64 MiB at most with --quick): copy engines through cuMemcpyHtoDAsync /
//! cuMemcpyDtoHAsync on a stream, SMs through kernels/link.cu's copy over mapped pinned memory;
//! bidirectional: both directions at once on two streams, each timed by its own events. Pinned
//! copies are timed behind a gate (link_time.rs); pageable copies block the host, so they are
//! timed by events around a batch without it. Each size: a warm-up copy, a batch of copies lasting
//! at least ~2 ms, 5 samples (3 with --quick), the median and its spread. Every path's copy is checked
//! against its source at the largest size. Latency: one GPU thread chases a random cycle over
//! 1 MiB of mapped pinned host memory with ld.global.cv (the whole chase's time over its hops,
//! event time as second opinion), and an 8-byte host -> device -> host round trip timed on the
//! host. The link is named from NVML (PCIe generation and width) and each direction's best
//! plateau is given as a fraction of its nominal rate (link_fit.rs says what encoding is assumed).
//! The host's memory is not flushed: the plateau sizes (16 MiB and up) exceed the GPU's L2.

use super::link_fit::{pcie_nominal, plateau};
use super::link_time::{gated_ms, Op, Pinned};
use super::{cuda_only, run_gpu, summarize};
use crate::gpu::timing::stream_sync;
use crate::gpu::Module;
use crate::gpu::{OwnedStream, Stream};
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, Spread, TargetError,
    TargetInfo,
};
use std::ffi::c_void;

pub struct LinkProbe;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    H2d,
    D2h,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Path {
    /// Copy engine, pinned host memory.
    Ce,
    /// Copy engine, pageable host memory.
    Pageable,
    /// A copy kernel over mapped pinned host memory.
    Sm,
    /// One kernel copying both ways at once (even warps host -> device, odd warps device -> host).
    SmSplit,
}

/// One measured curve: its nvbandwidth-style name and what runs at once.
struct Test {
    name: &'static str,
    lanes: &'static [(Path, Dir)],
}

/// One run: its curves' names and the (path, direction) of each lane run at once.
type Run = (&'static [&'static str], &'static [(Path, Dir)]);

/// The tests; a bidirectional run yields both directions' curves (lane 0 and lane 1).
const RUNS: [Run; 7] = [
    (&["host_to_device_memcpy_ce"], &[(Path::Ce, Dir::H2d)]),
    (&["device_to_host_memcpy_ce"], &[(Path::Ce, Dir::D2h)]),
    (
        &["host_to_device_bidirectional_memcpy_ce", "device_to_host_bidirectional_memcpy_ce"],
        &[(Path::Ce, Dir::H2d), (Path::Ce, Dir::D2h)],
    ),
    (&["host_to_device_memcpy_ce_pageable"], &[(Path::Pageable, Dir::H2d)]),
    (&["device_to_host_memcpy_ce_pageable"], &[(Path::Pageable, Dir::D2h)]),
    (&["host_to_device_memcpy_sm"], &[(Path::Sm, Dir::H2d)]),
    (&["device_to_host_memcpy_sm"], &[(Path::Sm, Dir::D2h)]),
];

/// The SM bidirectional run: nvbandwidth's split-warp copy, one kernel whose even warps copy host
/// -> device and odd warps device -> host; both directions' curves get its rate (the bytes each
/// way over the kernel's time), as nvbandwidth reports it. (Two kernels on two streams, tried
/// first, split the link between the directions differently from one process to the next: 39.4/34.1
/// against 36.4/39.6 GB/s (H2D/D2H) at 1 GiB in two runs, docs/INTERCONNECT.md.)
const SM_BIDIR: Test = Test { name: "host_to_device_bidirectional_memcpy_sm", lanes: &[(Path::SmSplit, Dir::H2d)] };

/// Every curve's name, for docs and the export.
pub const TEST_NAMES: [&str; 10] = [
    "host_to_device_memcpy_ce",
    "device_to_host_memcpy_ce",
    "host_to_device_bidirectional_memcpy_ce",
    "device_to_host_bidirectional_memcpy_ce",
    "host_to_device_memcpy_ce_pageable",
    "device_to_host_memcpy_ce_pageable",
    "host_to_device_memcpy_sm",
    "device_to_host_memcpy_sm",
    "host_to_device_bidirectional_memcpy_sm",
    "device_to_host_bidirectional_memcpy_sm",
];

/// The largest pageable copy: pageable rates are flat from 16 MiB (the host's staging sets them),
/// and a 1 GiB pageable copy took 9 x 80-150 ms of the probe (docs/PERFORMANCE.md, "The default
/// run's time").
const PAGEABLE_MAX_BYTES: u64 = 256 << 20;

/// Copy-kernel shapes tried: (threads per block, blocks per SM).
const SM_SHAPES: [(u32, u32); 4] = [(512, 2), (512, 4), (1024, 2), (256, 8)];

struct Bufs {
    /// Pinned host source of host -> device copies (the pattern).
    host_a: Pinned,
    /// Pinned host destination of device -> host copies.
    host_b: Pinned,
    /// Pageable host memory (both directions), page-aligned.
    pageable: PageAligned,
    /// Device destination of host -> device copies.
    dev_a: u64,
    /// Device source of device -> host copies (a copy of the pattern).
    dev_b: u64,
    flag: Pinned,
    streams: [Stream; 2],
    /// Picked copy-kernel shape per direction (threads, blocks per SM).
    sm_shape: [(u32, u32); 2],
}

/// Pageable (ordinary, not pinned) host words starting on a 4 KiB page boundary, so the buffer
/// starts where PyTorch's large pageable tensors can (a plain `Vec<u64>` of this size, mmap'd by
/// malloc, starts 16 bytes into a page). PyTorch's own pageable copies measured the same from
/// either start, and from 4 KiB or 2 MiB pages (docs/INTERCONNECT.md, "What moves, and why"): the
/// start is held fixed, not claimed to be faster.
struct PageAligned {
    words: Vec<u64>,
    start: usize,
    len: usize,
}

impl PageAligned {
    const PAGE_WORDS: usize = 4096 / 8;

    /// `len` words, word i = `fill(i)`.
    fn new(len: usize, fill: impl Fn(usize) -> u64 + Sync) -> Self {
        let mut words = vec![0u64; len + Self::PAGE_WORDS];
        let start = words.as_ptr().align_offset(4096).min(Self::PAGE_WORDS);
        fill_in_parallel(&mut words[start..start + len], fill);
        PageAligned { words, start, len }
    }
    fn as_slice(&self) -> &[u64] {
        &self.words[self.start..self.start + self.len]
    }
    fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.words[self.start..self.start + self.len]
    }
}

/// `words[i] = fill(i)`, in pieces on up to 8 host threads (a 1 GiB buffer's first touch and fill
/// took about 0.5 s on one; the probe runs alone, so the host's other cores are free).
fn fill_in_parallel(words: &mut [u64], fill: impl Fn(usize) -> u64 + Sync) {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 8);
    let piece = words.len().div_ceil(threads).max(1 << 16);
    std::thread::scope(|scope| {
        for (k, chunk) in words.chunks_mut(piece).enumerate() {
            let fill = &fill;
            scope.spawn(move || {
                for (i, w) in chunk.iter_mut().enumerate() {
                    *w = fill(k * piece + i);
                }
            });
        }
    });
}

fn pattern(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1)
}

/// One copy of `bytes` on a stream (SmSplit: `bytes` each way).
fn op<'a>(b: &Bufs, path: Path, dir: Dir, bytes: u64, sms: u32) -> Op<'a> {
    let (ha, hb, hpage) = (b.host_a.ptr as usize, b.host_b.ptr as usize, b.pageable.as_slice().as_ptr() as usize);
    let (ha_dev, hb_dev, da, db) = (b.host_a.dev, b.host_b.dev, b.dev_a, b.dev_b);
    let shape = b.sm_shape[dir as usize];
    Box::new(move |t: &mut CudaTarget, s: Stream| -> Result<(), TargetError> {
        let n = bytes as usize;
        // SAFETY (the copy-engine paths): the host buffers hold `max` >= `bytes` bytes and live
        // in `Bufs` until the streams are synchronized.
        match (path, dir) {
            (Path::Ce, Dir::H2d) => {
                Ok(unsafe { t.gpu.htod_async(da, ha as *const c_void, n, s, "cuMemcpyHtoDAsync") }?)
            }
            (Path::Pageable, Dir::H2d) => {
                Ok(unsafe { t.gpu.htod_async(da, hpage as *const c_void, n, s, "cuMemcpyHtoDAsync (pageable)") }?)
            }
            (Path::Ce, Dir::D2h) => Ok(unsafe { t.gpu.dtoh_async(hb as *mut c_void, db, n, s, "cuMemcpyDtoHAsync") }?),
            (Path::Pageable, Dir::D2h) => {
                Ok(unsafe { t.gpu.dtoh_async(hpage as *mut c_void, db, n, s, "cuMemcpyDtoHAsync (pageable)") }?)
            }
            (Path::SmSplit, _) => {
                let n16 = bytes / 16;
                let grid = (2 * n16).div_ceil(shape.0 as u64 * 4).clamp(2, (sms * shape.1) as u64) as u32;
                Ok(t.gpu.launch(
                    Module::Link,
                    "link_copy_split",
                    grid,
                    shape.0,
                    0,
                    &[ha_dev, da, db, hb_dev, n16],
                    s,
                )?)
            }
            (Path::Sm, _) => {
                let (src, dst) = if dir == Dir::H2d { (ha_dev, da) } else { (db, hb_dev) };
                let n16 = bytes / 16;
                let grid = (n16.div_ceil(shape.0 as u64 * 4)).clamp(1, (sms * shape.1) as u64) as u32;
                Ok(t.gpu.launch(Module::Link, "link_copy", grid, shape.0, 0, &[src, dst, n16], s)?)
            }
        }
    })
}

/// `reps` rate samples (bytes/s) per lane for the lanes run at once at `bytes`.
fn rates(
    t: &mut CudaTarget,
    b: &mut Bufs,
    lanes: &[(Path, Dir)],
    bytes: u64,
    reps: usize,
) -> Result<Vec<Vec<f64>>, TargetError> {
    let sms = t.sms;
    let pageable = lanes.iter().any(|l| l.0 == Path::Pageable);
    let mut ops: Vec<(Stream, Op<'_>)> =
        lanes.iter().enumerate().map(|(k, &(p, d))| (b.streams[k], op(b, p, d, bytes, sms))).collect();
    let run = |t: &mut CudaTarget, ops: &mut Vec<(Stream, Op<'_>)>, n: usize, flag: &mut Pinned| {
        if pageable {
            // (a pageable copy blocks the host: a gate would never be released)
            let (s, op) = &mut ops[0];
            let s = *s;
            super::bw::timed(t, s, n, |tt| op(tt, s)).map(|ms| vec![ms])
        } else {
            gated_ms(t, flag, ops, n)
        }
    };
    // Warm-up, then a first estimate for the batch length. A pageable copy of 64 MiB or more
    // gets three warm-ups, as PyTorch's comparison script gives its copies (scripts/pytorch_link.py).
    let warm_ups = if pageable && bytes >= 64 << 20 { 3 } else { 1 };
    for _ in 0..warm_ups {
        run(t, &mut ops, 1, &mut b.flag)?;
    }
    let one = run(t, &mut ops, 1, &mut b.flag)?;
    let ms = one.iter().cloned().fold(0.0, f64::max).max(1e-4);
    let n = ((2.0 / ms).ceil() as usize).clamp(1, 256);
    let mut out = vec![Vec::with_capacity(reps); ops.len()];
    for _ in 0..reps {
        let mss = run(t, &mut ops, n, &mut b.flag)?;
        for (k, ms) in mss.iter().enumerate() {
            out[k].push(bytes as f64 * n as f64 / (ms.max(1e-6) / 1e3));
        }
    }
    Ok(out)
}

/// What differs between a copy and its pattern, in words.
type Mismatch = String;

/// Copy once with `path`/`dir` at `bytes` after poisoning the destination, and compare three
/// 4 KiB windows (start, middle, end) with the pattern; Some(what differs). SmSplit writes, and
/// is checked in, both directions' destinations.
fn check(t: &mut CudaTarget, b: &mut Bufs, path: Path, dir: Dir, bytes: u64) -> Result<Option<Mismatch>, TargetError> {
    let words = (bytes / 8) as usize;
    let win = 512usize.min(words);
    let starts = [0, (words / 2).saturating_sub(win / 2), words - win];
    let dirs: &[Dir] = if path == Path::SmSplit { &[Dir::H2d, Dir::D2h] } else { std::slice::from_ref(&dir) };
    for d in dirs {
        match d {
            Dir::H2d => {
                // (the memset runs on the legacy stream, which does not order the non-blocking ones)
                t.gpu.memset(b.dev_a, bytes)?;
                t.gpu.sync()?;
            }
            Dir::D2h => {
                let dst: &mut [u64] = if path == Path::Pageable { b.pageable.as_mut_slice() } else { b.host_b.words() };
                for &s in &starts {
                    dst[s..s + win].iter_mut().for_each(|w| *w = 0);
                }
            }
        }
    }
    let mut one = op(b, path, dir, bytes, t.sms);
    let s = b.streams[0];
    one(t, s)?;
    stream_sync(s, "cuStreamSynchronize")?;
    for d in dirs {
        for &s0 in &starts {
            let got: Vec<u64> = match d {
                Dir::H2d => t.gpu.dtoh(b.dev_a + s0 as u64 * 8, win)?,
                Dir::D2h => {
                    let src: &[u64] = if path == Path::Pageable { b.pageable.as_slice() } else { b.host_b.words() };
                    src[s0..s0 + win].to_vec()
                }
            };
            if let Some(k) = (0..win).find(|&k| got[k] != pattern(s0 + k)) {
                return Ok(Some(format!(
                    "{path:?} {d:?} at {bytes} bytes: word {} is {:#x}, not {:#x}",
                    s0 + k,
                    got[k],
                    pattern(s0 + k)
                )));
            }
        }
    }
    Ok(None)
}

/// The host's own single-thread copy between the pageable buffer and pinned memory over `bytes`
/// (the work the driver does for a pageable copy): (pageable -> pinned, pinned -> pageable) rate
/// samples, bytes/s, `reps` each after a warm-up. The pageable buffer keeps its contents (it is
/// copied out, then the same words back).
fn host_memcpy_rates(b: &mut Bufs, bytes: u64, reps: usize) -> (Vec<f64>, Vec<f64>) {
    let n = (bytes / 8) as usize;
    let (mut to_pinned, mut to_pageable) = (Vec::new(), Vec::new());
    for i in 0..=reps {
        let t0 = std::time::Instant::now();
        b.host_b.words()[..n].copy_from_slice(&b.pageable.as_slice()[..n]);
        let t1 = std::time::Instant::now();
        b.pageable.as_mut_slice()[..n].copy_from_slice(&b.host_b.words()[..n]);
        let t2 = std::time::Instant::now();
        if i > 0 {
            to_pinned.push(bytes as f64 / (t1 - t0).as_secs_f64().max(1e-9));
            to_pageable.push(bytes as f64 / (t2 - t1).as_secs_f64().max(1e-9));
        }
    }
    (to_pinned, to_pageable)
}

/// The sweep's sizes: 4 KiB x 4^k up to `max`.
fn sizes(max: u64) -> Vec<u64> {
    std::iter::successors(Some(4096u64), |s| Some(s * 4)).take_while(|s| *s <= max).collect()
}

/// Median rate of each shape for one direction at `bytes`; the fastest shape.
fn tune_sm(t: &mut CudaTarget, b: &mut Bufs, dir: Dir, bytes: u64) -> Result<((u32, u32), String), TargetError> {
    let mut best = (SM_SHAPES[0], 0.0);
    let mut parts = Vec::new();
    for &shape in &SM_SHAPES {
        b.sm_shape[dir as usize] = shape;
        let r = rates(t, b, &[(Path::Sm, dir)], bytes, 3)?;
        let m = memscope_core::stats::median(&r[0]);
        parts.push(format!("{}x{}/SM {:.2} GB/s", shape.0, shape.1, m / 1e9));
        if m > best.1 {
            best = (shape, m);
        }
    }
    b.sm_shape[dir as usize] = best.0;
    Ok((best.0, parts.join(", ")))
}

/// One curve: sizes, median rates, spreads.
#[derive(Default)]
struct Curve {
    xs: Vec<f64>,
    ys: Vec<f64>,
    mads: Vec<f64>,
    spreads: Vec<Spread>,
}

fn rate_finding(name: &str, c: &Curve, method: &str, nominal: Option<f64>) -> Result<Finding, ProbeError> {
    let p = plateau(&c.xs, &c.ys).ok_or_else(|| ProbeError::Failed(format!("{name}: no valid rates")))?;
    let idx = c.xs.iter().position(|x| *x == p.from_bytes).unwrap_or(0);
    let spread = c.spreads[c.spreads.len() - 1].clone();
    let rel = spread.mad / c.ys[c.ys.len() - 1];
    let conf = if rel < 0.03 { Confidence::High } else { Confidence::Medium };
    let mut note = format!(
        "plateau: median of the {} largest sizes (from {:.0} bytes; within 5 % of the top), {:.2} GB/s at {:.0} bytes; \
         half of it reached at {} bytes",
        p.points,
        c.xs[idx],
        c.ys[c.ys.len() - 1] / 1e9,
        c.xs[c.xs.len() - 1],
        p.half_bytes.map(|h| format!("{h:.0}")).unwrap_or_else(|| "no".into())
    );
    if let Some(n) = nominal {
        note.push_str(&format!("; {:.1} % of the link's nominal {:.2} GB/s", 100.0 * p.bytes_per_s / n, n / 1e9));
    }
    Ok(Finding::number(p.bytes_per_s, "bytes/s", method, conf).with_spread(spread).with_note(&note))
}

fn series(name: &str, c: &Curve, desc: &str) -> Series {
    Series {
        description: format!("{name}: {desc}"),
        x_name: "size".into(),
        x_unit: "bytes".into(),
        y_name: "bandwidth".into(),
        y_unit: "bytes/s".into(),
        x: c.xs.clone(),
        y: c.ys.clone(),
        y_spread: Some(c.mads.clone()),
        marks: vec![],
    }
}

fn method_of(path: Path, dir: Dir, bidir: bool, shape: (u32, u32), reps: usize) -> String {
    let what = match (path, dir) {
        (Path::Ce, Dir::H2d) => "cuMemcpyHtoDAsync from pinned host memory (cuMemHostAlloc)".to_string(),
        (Path::Ce, Dir::D2h) => "cuMemcpyDtoHAsync to pinned host memory (cuMemHostAlloc)".to_string(),
        (Path::Pageable, Dir::H2d) => {
            "cuMemcpyHtoDAsync from pageable host memory (a page-aligned buffer; the driver stages it)".to_string()
        }
        (Path::Pageable, Dir::D2h) => {
            "cuMemcpyDtoHAsync to pageable host memory (a page-aligned buffer; the driver stages it)".to_string()
        }
        (Path::Sm, _) => format!(
            "link_copy (kernels/link.cu, 16-byte words, 4 in flight per thread) over mapped pinned host memory \
             (cuMemHostGetDevicePointer), {} threads x {} blocks/SM (the fastest of {} shapes at 256 MiB)",
            shape.0,
            shape.1,
            SM_SHAPES.len(),
        ),
        (Path::SmSplit, _) => format!(
            "link_copy_split (kernels/link.cu: one kernel, even warps copy host -> device, odd warps device -> host, \
             the size each way, 16-byte words, 4 in flight per thread) over mapped pinned host memory, {} threads x {} \
             blocks/SM (the host -> device shape); the rate of both directions' curves is the bytes each way over the \
             kernel's time (nvbandwidth's split-warp bidirectional SM test and its convention)",
            shape.0, shape.1,
        ),
    };
    format!(
        "{what}{}; per size a warm-up copy{}, then {reps} samples of a batch of copies lasting >= ~2 ms{}; \
         the value is the large-size plateau of the curve (series), median per size",
        if bidir { "; the opposite direction runs at the same time on a second stream (its own events)" } else { "" },
        if path == Path::Pageable { " (three from 64 MiB)" } else { "" },
        if path == Path::Pageable { ", events around the batch" } else { ", held behind a gate kernel until enqueued" }
    )
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    // (host-timed copies: the background warming of the kernel cache, if still running, ends first)
    t.wait_for_prewarm();
    let max: u64 = if quick { 64 << 20 } else { 1 << 30 };
    let reps = if quick { 3 } else { 5 };
    let (free, _) = t.gpu.mem_info()?;
    if 2 * max + (1 << 30) > free {
        return Err(ProbeError::Failed(format!("needs 2 x {max} bytes of device memory, {free} free")));
    }
    let mut host_a = Pinned::new(max)?;
    fill_in_parallel(host_a.words(), pattern);
    let host_b = Pinned::new(max)?;
    let pageable = PageAligned::new((max.min(PAGEABLE_MAX_BYTES) / 8) as usize, pattern);
    let flag = Pinned::new(4096)?;
    let dev_a = t.gpu.malloc(max)?;
    let dev_b = match t.gpu.malloc(max) {
        Ok(p) => p,
        Err(e) => {
            t.gpu.free(dev_a);
            return Err(e.into());
        }
    };
    let (s0, s1) = (OwnedStream::new()?, OwnedStream::new()?);
    let streams = [s0.raw(), s1.raw()];
    let mut b = Bufs { host_a, host_b, pageable, dev_a, dev_b, flag, streams, sm_shape: [SM_SHAPES[0]; 2] };
    let res = body(t, &mut b, max, reps, quick);
    let _ = t.gpu.sync();
    drop((s0, s1));
    t.gpu.free(dev_a);
    t.gpu.free(dev_b);
    res
}

fn body(t: &mut CudaTarget, b: &mut Bufs, max: u64, reps: usize, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let mut out = ProbeOutput::default();
    // SAFETY: host_a holds `max` bytes.
    unsafe { t.gpu.htod_raw(b.dev_b, b.host_a.ptr, max as usize, "cuMemcpyHtoD (pattern)") }?;
    let tune_bytes = max.min(256 << 20);
    let (_, tune_h2d) = tune_sm(t, b, Dir::H2d, tune_bytes)?;
    let (_, tune_d2h) = tune_sm(t, b, Dir::D2h, tune_bytes)?;
    for (path, dir) in [
        (Path::Ce, Dir::H2d),
        (Path::Ce, Dir::D2h),
        (Path::Pageable, Dir::H2d),
        (Path::Pageable, Dir::D2h),
        (Path::Sm, Dir::H2d),
        (Path::Sm, Dir::D2h),
        (Path::SmSplit, Dir::H2d),
    ] {
        let bytes = if path == Path::Pageable { max.min(PAGEABLE_MAX_BYTES) } else { max };
        if let Some(bad) = check(t, b, path, dir, bytes)? {
            return Err(ProbeError::Failed(format!("a copy did not reproduce its source: {bad}")));
        }
    }
    let mut curves: Vec<(String, Curve, String)> = Vec::new();
    let sm_bidir: Run = (&[SM_BIDIR.name, "device_to_host_bidirectional_memcpy_sm"], SM_BIDIR.lanes);
    for (names, lanes) in RUNS.iter().copied().chain(std::iter::once(sm_bidir)) {
        // (one lane may give several curves: the split-warp kernel's rate is both directions')
        let mut cs: Vec<Curve> = (0..names.len()).map(|_| Curve::default()).collect();
        let top = if lanes.iter().any(|l| l.0 == Path::Pageable) { max.min(PAGEABLE_MAX_BYTES) } else { max };
        for &size in &sizes(top) {
            let r = rates(t, b, lanes, size, reps)?;
            for (k, name) in names.iter().enumerate() {
                let (m, spread) = summarize(&r[k.min(r.len() - 1)], name)?;
                cs[k].xs.push(size as f64);
                cs[k].ys.push(m);
                cs[k].mads.push(spread.mad);
                cs[k].spreads.push(spread);
            }
        }
        for (k, c) in cs.into_iter().enumerate() {
            let (path, dir) = lanes[k.min(lanes.len() - 1)];
            let method = method_of(path, dir, lanes.len() > 1, b.sm_shape[dir as usize], reps);
            curves.push((names[k].to_string(), c, method));
        }
    }
    // The link, read after the copies (an idle link may train down to save power).
    let link = crate::gpu::nvml::pcie_link(t.gpu.ordinal, t.gpu.pci_bus_id().as_deref());
    let nominal = link.and_then(|l| pcie_nominal(l.current_gen?, l.current_width?));
    let link_method = "NVML nvmlDeviceGetCurrPcieLinkGeneration / Width, read right after the copies";
    match link {
        Some(l) if l.current_gen.is_some() && l.current_width.is_some() => {
            let maxes = format!(
                "the link's maximum: gen {} x{}",
                l.max_gen.map(|g| g.to_string()).unwrap_or("?".into()),
                l.max_width.map(|w| w.to_string()).unwrap_or("?".into())
            );
            out.finding(
                keys::LINK_PCIE_GEN,
                Finding::integer(l.current_gen.unwrap_or(0) as u64, "", link_method, Confidence::High)
                    .with_note(&maxes),
            );
            out.finding(
                keys::LINK_PCIE_WIDTH,
                Finding::integer(l.current_width.unwrap_or(0) as u64, "lanes", link_method, Confidence::High)
                    .with_note(&maxes),
            );
        }
        _ => {
            let why = "NVML is not available or does not report this GPU's PCIe link";
            out.finding(keys::LINK_PCIE_GEN, Finding::undetermined("", link_method, why));
            out.finding(keys::LINK_PCIE_WIDTH, Finding::undetermined("lanes", link_method, why));
        }
    }
    match &nominal {
        Some(n) => out.finding(
            keys::LINK_NOMINAL_BYTES_PER_S,
            Finding::number(
                n.encoded_bytes_per_s,
                "bytes/s",
                &format!(
                    "PCIe signalling rate x lanes / 8 = {:.2} GB/s raw per direction, after {} line encoding \
                     (crates/cuda/src/probes/link_fit.rs; packet headers not counted)",
                    n.raw_bytes_per_s / 1e9,
                    n.encoding
                ),
                Confidence::High,
            ),
        ),
        None => out.finding(
            keys::LINK_NOMINAL_BYTES_PER_S,
            Finding::undetermined(
                "bytes/s",
                "from the PCIe generation and width",
                "the link's generation or width is unknown",
            ),
        ),
    }
    // The host's own single-thread copy between the same buffers, beside the pageable lines: a
    // reference for their host side (the driver's staging is host copying, perhaps by more than
    // one thread: on the H200 host the pageable D2H copy ran above this figure, H2D below it).
    let host_bytes = max.min(256 << 20);
    let (to_pinned, to_pageable) = host_memcpy_rates(b, host_bytes, reps);
    let mut host_rate = [0.0f64; 2];
    for (k, (key, v, what)) in [
        (
            keys::LINK_HOST_MEMCPY_PAGEABLE_TO_PINNED_BYTES_PER_S,
            &to_pinned,
            "from the pageable buffer into pinned memory",
        ),
        (
            keys::LINK_HOST_MEMCPY_PINNED_TO_PAGEABLE_BYTES_PER_S,
            &to_pageable,
            "from pinned memory into the pageable buffer",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let (m, spread) = summarize(v, key)?;
        host_rate[k] = m;
        let method = format!(
            "one host thread copies {} MiB {what} (slice copy, the probe's own buffers), wall clock, median of {reps} after a warm-up",
            host_bytes >> 20
        );
        out.finding(key, Finding::number(m, "bytes/s", &method, Confidence::Medium).with_spread(spread));
    }
    let enc = nominal.as_ref().map(|n| n.encoded_bytes_per_s);
    let mut best = [(0.0f64, String::new()), (0.0, String::new())];
    for (name, c, method) in &curves {
        let method = if name.ends_with("_sm") && !name.contains("bidirectional") {
            format!("{method}; shape tuning: {}", if name.starts_with("host_to") { &tune_h2d } else { &tune_d2h })
        } else {
            method.clone()
        };
        let mut f = rate_finding(name, c, &method, enc)?;
        if name.contains("pageable") {
            let (k, what) =
                if name.starts_with("host_to") { (0, "pageable -> pinned") } else { (1, "pinned -> pageable") };
            let note = f.note.clone().unwrap_or_default();
            f = f.with_note(&format!(
                "{note}; the host's own single-thread {what} copy ran {:.2} GB/s in this probe (link.host_memcpy_*), a reference for the host side of a staged copy",
                host_rate[k] / 1e9
            ));
        }
        let v = f.as_f64().unwrap_or(0.0);
        if !name.contains("bidirectional") && !name.contains("pageable") {
            let d = if name.starts_with("host_to") { 0 } else { 1 };
            if v > best[d].0 {
                best[d] = (v, name.clone());
            }
        }
        out.finding(&keys::link_bytes_per_s(name), f);
        out.series(&format!("link.{name}"), series(name, c, "bandwidth versus copy size (median per size)"));
    }
    for (d, key) in [(0, keys::LINK_H2D_FRACTION_OF_NOMINAL), (1, keys::LINK_D2H_FRACTION_OF_NOMINAL)] {
        let f = match &nominal {
            Some(n) if best[d].0 > 0.0 => Finding::number(
                best[d].0 / n.encoded_bytes_per_s,
                "",
                &format!("the best unidirectional pinned plateau ({}) over link.nominal_bytes_per_s", best[d].1),
                Confidence::High,
            )
            .with_note(&format!(
                "{:.1} % of the raw {:.2} GB/s",
                100.0 * best[d].0 / n.raw_bytes_per_s,
                n.raw_bytes_per_s / 1e9
            )),
            _ => Finding::undetermined("", "plateau over nominal rate", "the link's nominal rate is unknown"),
        };
        out.finding(key, f);
    }
    super::link_latency::latency(t, b.streams[0], &mut out, quick)?;
    Ok(out)
}

impl Probe for LinkProbe {
    fn key(&self) -> &'static str {
        "link"
    }
    fn description(&self) -> &'static str {
        "host <-> device: copy-engine and SM bandwidth by size (pinned, pageable; uni- and bidirectional), latency, PCIe link"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pageable_buffer_starts_on_a_page_and_holds_the_pattern() {
        for len in [1usize, 512, 4097, 300_001] {
            let mut b = PageAligned::new(len, pattern);
            assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
            assert_eq!(b.as_slice().len(), len);
            assert!(b.as_slice().iter().enumerate().all(|(i, &w)| w == pattern(i)));
            b.as_mut_slice()[len - 1] = 0;
            assert_eq!(b.as_slice()[len - 1], 0);
        }
    }

    #[test]
    fn every_test_name_is_measured_once() {
        let mut names: Vec<&str> = RUNS.iter().flat_map(|(n, _)| n.iter().copied()).collect();
        names.push(SM_BIDIR.name);
        names.push("device_to_host_bidirectional_memcpy_sm");
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        let mut all = TEST_NAMES.to_vec();
        all.sort();
        assert_eq!(all, sorted);
        for (n, lanes) in RUNS {
            assert_eq!(n.len(), lanes.len());
        }
    }

    #[test]
    fn sizes_span_4k_to_1g() {
        let s = sizes(1 << 30);
        assert_eq!((s[0], *s.last().unwrap(), s.len()), (4096, 1 << 30, 10));
    }

    #[test]
    fn the_kernels_exist() {
        let src = Module::Link.source();
        for k in ["link_copy", "link_copy_split", "link_spin", "link_chase"] {
            assert!(src.contains(&format!("void {k}(")), "{k}");
        }
    }
}
