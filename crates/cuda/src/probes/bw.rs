//! `bw`: read, write and copy bandwidth from 4 KiB to 4 GiB (seed 003's table shape: bandwidth
//! versus size, launch-bound at the small end, L2 in the middle, HBM at the large end). Kernels in
//! kernels/bw.cu (16-byte accesses; 16 or 32 contiguous bytes per thread; 1, 2, 4 or 8 groups in
//! flight per thread; plain, .cs, .nc + L1::no_allocate and L2::256B hints; grid sized to the SMs,
//! a one-pass grid, or block-contiguous chunks) and kernels/bw_tma.cu (copy through the bulk copy
//! engine); the driver's own cuMemcpyDtoD and cuMemsetD32 are candidates too. At every size each
//! candidate (kernel variant x launch shape) is screened with one short batch, the 8 fastest are timed
//! (3 samples), the fastest is picked and the size is then measured afresh with it (7 samples), so
//! the pick's luck does not inflate the figure. Each
//! sample times a batch of launches with events (>= ~2 ms); the value is the median of the samples.
//! Every copy candidate is checked (destination poisoned, copied, compared) before it is timed, and
//! each size's winner again after it. A copy counts the bytes read plus the bytes written. The
//! device-local copy through the copy engines (cuMemcpyDtoDAsync, nvbandwidth's device_local_copy)
//! is measured at every size on its own as well (`bw.copy_ce_bytes_per_s`; docs/INTERCONNECT.md): the one
//! place for device-local copies.

use super::bw_ce::copy_engine_curve;
pub(crate) use super::timing::timed;
use super::{cuda_only, run_gpu, summarize};
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetError, TargetInfo,
};

pub struct BwProbe;

/// (threads per block, blocks per SM); 0 blocks per SM: one pass, a grid covering the whole buffer.
const SHAPES: [(u32, u32); 8] = [(256, 8), (512, 4), (1024, 2), (256, 16), (512, 8), (128, 0), (256, 0), (512, 0)];

/// A kernel variant of kernels/bw.cu: its read, write and copy kernels ("" where there is none),
/// groups in flight per thread (U), 16-byte words per group (W), and what its hints are.
struct Variant {
    names: [&'static str; 3],
    u: u32,
    w: u32,
    hints: &'static str,
}

const fn v(names: [&'static str; 3], u: u32, w: u32, hints: &'static str) -> Variant {
    Variant { names, u, w, hints }
}

const VARIANTS: [Variant; 19] = [
    v(["bw_read", "bw_write", "bw_copy"], 4, 1, "plain"),
    v(["bw_read_u8", "bw_write_u8", "bw_copy_u8"], 8, 1, "plain"),
    v(["bw_read_cs", "bw_write_cs", "bw_copy_cs"], 4, 1, ".cs"),
    v(["bw_read_u8cs", "bw_write_u8cs", "bw_copy_u8cs"], 8, 1, ".cs"),
    v(["bw_read_u2", "bw_write_u2", "bw_copy_u2"], 2, 1, "plain"),
    v(["bw_read_u2cs", "bw_write_u2cs", "bw_copy_u2cs"], 2, 1, ".cs"),
    v(["", "", "bw_copy_stcs"], 4, 1, ".cs stores"),
    v(["bw_read_u2nc", "", "bw_copy_u2nc"], 2, 1, ".nc.L1::no_allocate loads, .cs stores"),
    v(["bw_read_u4nc", "", "bw_copy_u4nc"], 4, 1, ".nc.L1::no_allocate loads, .cs stores"),
    v(["bw_read_u2nc256", "", "bw_copy_u2nc256"], 2, 1, ".nc.L1::no_allocate.L2::256B loads, .cs stores"),
    v(["", "", "bw_copy_u4nc256"], 4, 1, ".nc.L1::no_allocate.L2::256B loads, .cs stores"),
    v(["", "bw_write_w32u1cs", "bw_copy_w32u1cs"], 1, 2, ".cs"),
    v(["bw_read_w32u2cs", "bw_write_w32u2cs", "bw_copy_w32u2cs"], 2, 2, ".cs"),
    v(["", "bw_write_w32u2", ""], 2, 2, "plain"),
    v(["", "", "bw_copy_w32u1nc256"], 1, 2, ".nc.L1::no_allocate.L2::256B loads, .cs stores"),
    v(["bw_read_w32u2nc", "", "bw_copy_w32u2nc"], 2, 2, ".nc.L1::no_allocate loads, .cs stores"),
    v(["", "", "bw_copy_blk4"], 4, 1, "plain, block-contiguous chunks"),
    v(["", "", "bw_copy_blk4cs"], 4, 1, ".cs, block-contiguous chunks"),
    v(["", "", "bw_copy_blk4nc"], 4, 1, ".nc.L1::no_allocate loads, .cs stores, block-contiguous chunks"),
];

/// TMA copy shapes (kernels/bw_tma.cu): (chunk bytes, stages, blocks per SM); the blocks' stages x
/// chunk bytes (plus about 1 KiB each) fit in the 228 KiB of shared memory of a Hopper SM.
const TMA_SHAPES: [(u32, u32, u32); 8] = [
    (16 << 10, 2, 6),
    (16 << 10, 3, 4),
    (8 << 10, 4, 6),
    (8 << 10, 2, 8),
    (4 << 10, 4, 12),
    (32 << 10, 2, 3),
    (16 << 10, 4, 3),
    (32 << 10, 3, 2),
];

/// One candidate: a bw.cu kernel variant with a launch shape, a TMA copy shape, or the driver's
/// own copy (cuMemcpyDtoDAsync) or fill (cuMemsetD32Async).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Config {
    Kernel { variant: usize, shape: (u32, u32) },
    Tma { chunk: u32, stages: u32, per_sm: u32 },
    Driver,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(usize)]
pub(super) enum Kind {
    Read,
    Write,
    Copy,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Copy => "copy",
        }
    }
    /// Bytes moved per byte of buffer size.
    fn factor(self) -> f64 {
        if self == Kind::Copy {
            2.0
        } else {
            1.0
        }
    }
    /// Every candidate for this kind at `bytes`.
    fn candidates(self, bytes: u64) -> Vec<Config> {
        let mut out = Vec::new();
        for (variant, v) in VARIANTS.iter().enumerate() {
            if !v.names[self as usize].is_empty() {
                out.extend(SHAPES.iter().map(|&shape| Config::Kernel { variant, shape }));
            }
        }
        if self == Kind::Copy {
            for &(chunk, stages, per_sm) in &TMA_SHAPES {
                if bytes.is_multiple_of(chunk as u64) {
                    out.push(Config::Tma { chunk, stages, per_sm });
                }
            }
        }
        if self != Kind::Read {
            out.push(Config::Driver);
        }
        out
    }
}

impl Config {
    /// Short label: "u2cs 256x1-pass", "tma 16K x2 x6/SM", "cuMemcpyDtoD".
    fn label(&self, k: Kind, sms: u32) -> String {
        match *self {
            Config::Kernel { variant, shape } => {
                let name = VARIANTS[variant].names[k as usize];
                let short = name.split_once(k.name()).map(|(_, s)| s.trim_start_matches('_')).unwrap_or(name);
                let short = if short.is_empty() { "u4" } else { short };
                let grid = if shape.1 == 0 { "1-pass".to_string() } else { format!("{}", shape.1 * sms) };
                format!("{short} {}x{grid}", shape.0)
            }
            Config::Tma { chunk, stages, per_sm } => format!("tma {}K x{stages} x{per_sm}/SM", chunk >> 10),
            Config::Driver => (if k == Kind::Copy { "cuMemcpyDtoD" } else { "cuMemsetD32" }).to_string(),
        }
    }

    /// Which family a candidate belongs to (for the per-variant summary).
    fn family(&self, k: Kind) -> String {
        match *self {
            Config::Kernel { .. } => self.label(k, 1).split(' ').next().unwrap_or("").to_string(),
            Config::Tma { .. } => "tma".into(),
            Config::Driver => self.label(k, 1),
        }
    }

    /// Full description for the finding's method.
    fn describe(&self, k: Kind, sms: u32) -> String {
        match *self {
            Config::Kernel { variant, shape } => {
                let v = &VARIANTS[variant];
                format!(
                    "{} (kernels/bw.cu): {} contiguous bytes per thread per group, {} group(s) in flight per thread, \
                     hints {}, {} threads x {}",
                    v.names[k as usize],
                    16 * v.w,
                    v.u,
                    v.hints,
                    shape.0,
                    if shape.1 == 0 {
                        "a one-pass grid covering the buffer".to_string()
                    } else {
                        format!("{} blocks/SM x {sms} SMs", shape.1)
                    }
                )
            }
            Config::Tma { chunk, stages, per_sm } => format!(
                "bw_copy_tma (kernels/bw_tma.cu): bulk copies (cp.async.bulk) of {} KiB chunks, {stages} shared buffers \
                 per block, {per_sm} blocks/SM x {sms} SMs",
                chunk >> 10
            ),
            Config::Driver if k == Kind::Copy => "the driver's cuMemcpyDtoDAsync".into(),
            Config::Driver => "the driver's cuMemsetD32Async".into(),
        }
    }
}

pub(super) struct Bufs {
    a: u64,
    b: u64,
    sink: u64,
}

fn launch(t: &mut CudaTarget, k: Kind, bufs: &Bufs, bytes: u64, cfg: Config) -> Result<(), TargetError> {
    let n16 = bytes / 16;
    let null = std::ptr::null_mut();
    match cfg {
        Config::Kernel { variant, shape } => {
            let v = &VARIANTS[variant];
            let per_block = shape.0 as u64 * (v.u * v.w) as u64;
            let cap = if shape.1 == 0 { u32::MAX / 2 } else { t.sms * shape.1 };
            let grid = n16.div_ceil(per_block).clamp(1, cap as u64) as u32;
            let name = v.names[k as usize];
            match k {
                Kind::Read => t.gpu.launch(Module::Bw, name, grid, shape.0, 0, &[bufs.a, n16, bufs.sink], null)?,
                Kind::Write => t.gpu.launch(Module::Bw, name, grid, shape.0, 0, &[bufs.b, n16, 0x5151], null)?,
                Kind::Copy => t.gpu.launch(Module::Bw, name, grid, shape.0, 0, &[bufs.a, bufs.b, n16], null)?,
            }
        }
        Config::Tma { chunk, stages, per_sm } => {
            let grid = (bytes / chunk as u64).clamp(1, (t.sms * per_sm) as u64) as u32;
            let args = [bufs.a, bufs.b, bytes, chunk as u64, stages as u64];
            t.gpu.launch(Module::BwTma, "bw_copy_tma", grid, 32, chunk * stages, &args, null)?
        }
        Config::Driver if k == Kind::Copy => t.gpu.dtod_async(bufs.b, bufs.a, bytes as usize, null)?,
        Config::Driver => t.gpu.memset_d32_async(bufs.b, 0x5151_5151, (bytes / 4) as usize, null)?,
    }
    Ok(())
}

/// Timed batches of the finding's size at most (the first and its repeats).
const FINAL_TRIES: usize = 3;
/// A batch whose (max - min) / median exceeds this is timed again.
const FINAL_RANGE: f64 = 0.01;

/// (max - min) / median of seconds per launch (0 for an empty batch).
fn relative_range(secs: &[f64]) -> f64 {
    if secs.is_empty() {
        return 0.0;
    }
    let lo = secs.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = secs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    (hi - lo) / memscope_core::stats::median(secs)
}

fn median_of(secs: &[f64]) -> f64 {
    memscope_core::stats::median(secs)
}

/// Seconds per launch: `reps` samples, each a batch of launches (>= ~2 ms) timed with events.
pub(super) fn time_per_launch(
    t: &mut CudaTarget,
    k: Kind,
    bufs: &Bufs,
    bytes: u64,
    cfg: Config,
    reps: usize,
) -> Result<Vec<f64>, TargetError> {
    time_batches(t, k, bufs, bytes, cfg, reps, 2.0)
}

/// Seconds per launch: `reps` samples, each a batch of launches lasting >= ~`batch_ms`.
fn time_batches(
    t: &mut CudaTarget,
    k: Kind,
    bufs: &Bufs,
    bytes: u64,
    cfg: Config,
    reps: usize,
    batch_ms: f64,
) -> Result<Vec<f64>, TargetError> {
    // Warm-up and a first estimate.
    for _ in 0..2 {
        launch(t, k, bufs, bytes, cfg)?;
    }
    t.gpu.sync()?;
    let null = std::ptr::null_mut();
    let started = std::time::Instant::now();
    launch(t, k, bufs, bytes, cfg)?;
    t.gpu.sync()?;
    let one_ms = started.elapsed().as_secs_f64() * 1e3;
    let batch = ((batch_ms / one_ms.max(1e-4)) as usize).clamp(1, 2000);
    let mut out = Vec::with_capacity(reps);
    for _ in 0..reps {
        let ms = timed(t, null, batch, |tt| launch(tt, k, bufs, bytes, cfg))?;
        out.push(ms / 1e3 / batch as f64);
    }
    Ok(out)
}

/// Fill `n32` words at `p` with random bits (mask, or).
pub(crate) fn fill(t: &mut CudaTarget, p: u64, n32: u64, mask: u32, bits: u32, seed: u64) -> Result<(), TargetError> {
    let grid = t.sms * 8;
    t.gpu.launch(
        Module::Bw,
        "fill_bits",
        grid,
        256,
        0,
        &[p, n32, mask as u64, bits as u64, seed],
        std::ptr::null_mut(),
    )?;
    Ok(t.gpu.sync()?)
}

/// Poison the first `bytes` of the destination, copy with `cfg`, and count the 16-byte words that
/// differ from the source (0: the candidate copies correctly).
fn copy_errors(t: &mut CudaTarget, bufs: &Bufs, bytes: u64, cfg: Config, seed: u64) -> Result<u64, TargetError> {
    fill(t, bufs.b, bytes / 4, 0xffff_ffff, 0, seed)?;
    launch(t, Kind::Copy, bufs, bytes, cfg)?;
    t.gpu.memset(bufs.sink, 8)?;
    let args = [bufs.a, bufs.b, bytes / 16, bufs.sink];
    t.gpu.launch(Module::Bw, "bw_count_diff", t.sms * 8, 256, 0, &args, std::ptr::null_mut())?;
    t.gpu.sync()?;
    Ok(t.gpu.dtoh::<u64>(bufs.sink, 1)?[0])
}

/// The sizes of the sweep: 4 KiB times powers of 4 up to `max`.
fn sizes(max: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = 4096u64;
    while s <= max {
        v.push(s);
        s *= 4;
    }
    v
}

/// "4 KiB", "64 MiB", "4 GiB".
pub(super) fn size_label(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b >> 10),
    }
}

/// Candidates timed again after the screen (the screen's fastest).
const FINALISTS: usize = 8;
/// The screen's one batch per candidate lasts about this long (a final timing's batches, 2 ms).
const SCREEN_MS: f64 = 0.4;

/// The tuning at one size, fastest first (seconds per launch): every candidate screened with one
/// short batch, then the screen's `FINALISTS` fastest timed with a median of 3 full batches; the
/// pick is the fastest finalist. The rest keep their screen time (they rank after the finalists).
/// Every candidate is still tried at every size, so a candidate that wins only on another GPU or
/// at another size is still found; the screen costs about a fifth of timing each one in full.
fn tune(
    t: &mut CudaTarget,
    k: Kind,
    bufs: &Bufs,
    bytes: u64,
    cands: &[Config],
) -> Result<Vec<(Config, f64)>, TargetError> {
    let mut screened = Vec::with_capacity(cands.len());
    for &cfg in cands {
        let s = time_batches(t, k, bufs, bytes, cfg, 1, SCREEN_MS)?;
        screened.push((cfg, s[0]));
    }
    screened.sort_by(|x, y| x.1.total_cmp(&y.1));
    let rest = screened.split_off(FINALISTS.min(screened.len()));
    let mut finals = Vec::with_capacity(screened.len() + rest.len());
    for (cfg, _) in screened {
        let s = time_per_launch(t, k, bufs, bytes, cfg, 3)?;
        finals.push((cfg, memscope_core::stats::median(&s)));
    }
    finals.sort_by(|x, y| x.1.total_cmp(&y.1));
    finals.extend(rest);
    Ok(finals)
}

/// Per family (kernel variant, tma, driver), its best candidate's rate at `bytes`: "u2cs 4.25".
fn family_summary(k: Kind, bytes: u64, ranked: &[(Config, f64)], sms: u32) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut parts = Vec::new();
    for (cfg, secs) in ranked {
        if seen.insert(cfg.family(k)) {
            parts.push(format!("{} {:.3}", cfg.label(k, sms), bytes as f64 * k.factor() / secs / 1e12));
        }
    }
    parts.join(", ")
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let (free, _) = t.gpu.mem_info()?;
    let want: u64 = if quick { 1 << 30 } else { 4 << 30 };
    // Two buffers of the largest size, keeping 1 GiB free for the flush buffer and the rest.
    let mut max = want;
    while max > (64 << 20) && 2 * max + (1 << 30) > free {
        max /= 4;
    }
    let reps = if quick { 3 } else { 7 };
    let a = t.gpu.malloc(max)?;
    let b = match t.gpu.malloc(max) {
        Ok(b) => b,
        Err(e) => {
            t.gpu.free(a);
            return Err(e.into());
        }
    };
    let sink = t.scratch(64)?;
    let bufs = Bufs { a, b, sink };
    let sms = t.sms;
    let res = (|| -> Result<ProbeOutput, ProbeError> {
        fill(t, a, max / 4, 0xffff_ffff, 0, 7)?;
        fill(t, b, max / 4, 0xffff_ffff, 0, 8)?;
        let mut out = ProbeOutput::default();
        for k in [Kind::Read, Kind::Write, Kind::Copy] {
            // Copy candidates that do not copy correctly are dropped (one check per family member
            // with its own code path: each kernel variant, each TMA shape, the driver's copy).
            let mut dropped: Vec<String> = Vec::new();
            let mut bad: Vec<Config> = Vec::new();
            if k == Kind::Copy {
                let mut checked = std::collections::HashSet::new();
                for cfg in k.candidates(max) {
                    let key = match cfg {
                        Config::Kernel { variant, .. } => format!("k{variant}"),
                        other => format!("{other:?}"),
                    };
                    let n = if checked.insert(key) {
                        match copy_errors(t, &bufs, max, cfg, 9) {
                            Ok(n) => n,
                            // A candidate this GPU refuses to launch (not a fault: the context
                            // still works) is dropped with the driver's reason.
                            Err(e) if t.gpu.sync().is_ok() => {
                                dropped.push(format!("{} ({e})", cfg.label(k, sms)));
                                bad.push(cfg);
                                continue;
                            }
                            Err(e) => return Err(e.into()),
                        }
                    } else {
                        0
                    };
                    if n > 0 {
                        dropped.push(format!("{} ({n} of {} words wrong)", cfg.label(k, sms), max / 16));
                    }
                    if n > 0 || bad.iter().any(|c| c.family(k) == cfg.family(k) && matches!(c, Config::Kernel { .. })) {
                        bad.push(cfg);
                    }
                }
            }
            let all_sizes = sizes(max);
            // Tune at the largest size first (quick runs reuse its pick at every size).
            let cands_max: Vec<Config> = k.candidates(max).into_iter().filter(|c| !bad.contains(c)).collect();
            let ranked_max = tune(t, k, &bufs, max, &cands_max)?;
            let pick_max = ranked_max.first().map(|r| r.0).ok_or_else(|| ProbeError::Failed("no candidates".into()))?;
            let mut xs = Vec::new();
            let mut ys = Vec::new();
            let mut spreads = Vec::new();
            let mut winners = Vec::new();
            let mut last = None;
            let mut final_tries = 1;
            for &size in &all_sizes {
                let cfg = if quick || size == max {
                    pick_max
                } else {
                    let cands: Vec<Config> = k.candidates(size).into_iter().filter(|c| !bad.contains(c)).collect();
                    tune(t, k, &bufs, size, &cands)?.first().map(|r| r.0).unwrap_or(pick_max)
                };
                let mut secs = time_per_launch(t, k, &bufs, size, cfg, reps)?;
                if size == max {
                    // The finding's batch: a transient disturbance (one of three H200 runs lost
                    // 2.5 % to one) widens the batch's range; such a batch is timed again, at most
                    // twice, and the batch with the highest median is kept (noted).
                    let mut tries = 1;
                    while tries < FINAL_TRIES && relative_range(&secs) > FINAL_RANGE {
                        let again = time_per_launch(t, k, &bufs, size, cfg, reps)?;
                        if median_of(&again) < median_of(&secs) {
                            secs = again;
                        }
                        tries += 1;
                    }
                    final_tries = tries;
                }
                if k == Kind::Copy {
                    let n = copy_errors(t, &bufs, size, cfg, 10)?;
                    if n > 0 {
                        return Err(ProbeError::Failed(format!(
                            "copy with {} left {n} wrong 16-byte words at {}",
                            cfg.label(k, sms),
                            size_label(size)
                        )));
                    }
                }
                let rates: Vec<f64> = secs.iter().map(|s| size as f64 * k.factor() / s).collect();
                let (m, spread) = summarize(&rates, "bandwidth")?;
                xs.push(size as f64);
                ys.push(m);
                spreads.push(spread.mad);
                winners.push(format!("{} {}", size_label(size), cfg.label(k, sms)));
                last = Some((size, cfg, m, spread));
            }
            let (size, cfg, m, spread) = last.ok_or_else(|| ProbeError::Failed("no sizes".into()))?;
            let method = format!(
                "{}; the fastest of {} candidates (kernel variants x launch shapes{}) at each size{} (each screened with one \
                 short batch, the {FINALISTS} fastest timed with a median of 3), timed afresh: buffer {}, \
                 events over batches of launches, median of {reps}{}",
                cfg.describe(k, sms),
                cands_max.len(),
                if k == Kind::Copy { ", TMA shapes, the driver's copy" } else if k == Kind::Write { ", the driver's memset" } else { "" },
                if quick { " (quick: picked at the largest size only)" } else { "" },
                size_label(size),
                if k == Kind::Copy { "; bytes read + bytes written; every copy candidate checked against its source" } else { "" }
            );
            let mut note = format!(
                "tuning at {} (best launch shape per variant, TB/s: median of 3 for the {FINALISTS} finalists, the screen's \
                 batch for the rest): {}; pick per size: {}",
                size_label(max),
                family_summary(k, max, &ranked_max, sms),
                winners.join(", ")
            );
            if !dropped.is_empty() {
                note.push_str(&format!("; dropped as wrong: {}", dropped.join(", ")));
            }
            if final_tries > 1 {
                note.push_str(&format!(
                    "; the finding's batch timed {final_tries} times (a batch's range over {:.0} % of its median is timed again), the fastest median kept",
                    100.0 * FINAL_RANGE
                ));
            }
            if k == Kind::Copy {
                // The copy engine's device-local copy beside the SMs' (nvbandwidth's device_local_copy).
                let (f, sr) = copy_engine_curve(t, &bufs, &all_sizes, reps)?;
                out.finding(keys::BW_COPY_CE_BYTES_PER_S, f);
                out.series("bw.copy_ce", sr);
            }
            out.finding(
                &keys::bw_bytes_per_s(k.name()),
                Finding::number(m, "bytes/s", &method, Confidence::High).with_spread(spread).with_note(&note),
            );
            out.series(
                &format!("bw.{}", k.name()),
                Series {
                    description: format!(
                        "{} bandwidth versus buffer size (fastest candidate per size, median of {reps})",
                        k.name()
                    ),
                    x_name: "size".into(),
                    x_unit: "bytes".into(),
                    y_name: "bandwidth".into(),
                    y_unit: "bytes/s".into(),
                    x: xs,
                    y: ys,
                    y_spread: Some(spreads),
                    marks: vec![t.l2_bytes as f64],
                },
            );
        }
        Ok(out)
    })();
    t.gpu.free(a);
    t.gpu.free(b);
    res
}

impl Probe for BwProbe {
    fn key(&self) -> &'static str {
        "bw"
    }
    fn description(&self) -> &'static str {
        "GPU read, write and copy bandwidth from 4 KiB to 4 GiB (16-byte accesses, the fastest variant per size)"
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
    fn a_disturbed_batch_has_a_wide_range() {
        assert_eq!(relative_range(&[]), 0.0);
        assert!(relative_range(&[1.0, 1.002, 0.999, 1.001]) < FINAL_RANGE);
        // run3 of the 2026-12-01 H200 repeatability: 4.49..4.59 TB/s in one batch.
        assert!(relative_range(&[1.0 / 4.49, 1.0 / 4.50, 1.0 / 4.59, 1.0 / 4.50]) > FINAL_RANGE);
    }

    #[test]
    fn sweep_sizes_are_powers_of_four_from_4k() {
        let s = sizes(4 << 30);
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(4 << 30)));
        assert_eq!(s.len(), 11);
    }

    #[test]
    fn every_named_kernel_exists_in_the_sources() {
        let bw = Module::Bw.source();
        for v in &VARIANTS {
            for name in v.names.iter().filter(|n| !n.is_empty()) {
                let defined = bw.contains(&format!("({name},")) || bw.contains(&format!("void {name}("));
                assert!(defined, "{name} is not defined in kernels/bw.cu");
            }
        }
        assert!(Module::BwTma.source().contains("void bw_copy_tma("));
    }

    #[test]
    fn candidates_per_kind() {
        let read = Kind::Read.candidates(4 << 30);
        assert!(read.iter().all(|c| matches!(c, Config::Kernel { .. })));
        let copy = Kind::Copy.candidates(4 << 30);
        assert!(copy.iter().any(|c| matches!(c, Config::Tma { .. })));
        assert!(copy.contains(&Config::Driver));
        // A TMA shape is a candidate only where its chunk divides the size.
        for c in Kind::Copy.candidates(4096) {
            if let Config::Tma { chunk, .. } = c {
                assert!(chunk <= 4096, "{c:?}");
            }
        }
        assert!(TMA_SHAPES.iter().all(|&(c, s, b)| s >= 2 && b * (c * s + 2048) <= 228 << 10 && c % 16 == 0));
        let labels: Vec<String> = copy.iter().map(|c| c.label(Kind::Copy, 132)).collect();
        assert!(labels.contains(&"u2cs 256x1-pass".to_string()), "{labels:?}");
        assert!(labels.contains(&"u4 256x2112".to_string()), "{labels:?}");
        assert!(labels.contains(&"tma 16K x2 x6/SM".to_string()), "{labels:?}");
    }
}
