//! `bw`: read, write and copy bandwidth from 4 KiB to 4 GiB (seed 003's table shape: bandwidth
//! versus size, launch-bound at the small end, L2 in the middle, HBM at the large end). Kernels in
//! kernels/bw.cu: 16-byte accesses, 4 or 8 in flight per thread, with or without .cs hints, grid
//! sized to the SMs; the variant and launch shape (threads, blocks per SM) are picked per kind at
//! the largest size (3 samples each), then every size is measured afresh with that choice. Each
//! sample times a batch of launches with events (>= ~2 ms); the value is the median of the samples.
//! A copy counts the bytes read plus the bytes written.

use super::{cuda_only, run_gpu, summarize};
use crate::kernels::Module;
use crate::CudaTarget;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetError, TargetInfo,
};

pub struct BwProbe;

/// (threads per block, blocks per SM); 0 blocks per SM: one pass, a grid covering the whole buffer.
const SHAPES: [(u32, u32); 8] = [(256, 8), (512, 4), (1024, 2), (256, 16), (512, 8), (128, 0), (256, 0), (512, 0)];

/// Kernel variants (kernels/bw.cu): accesses in flight per thread and whether .cs hints are used.
/// The last two exist for copy only (block-contiguous chunks); read and write skip them.
const VARIANTS: [(&str, u32, bool); 9] = [
    ("", 4, false),
    ("_u8", 8, false),
    ("_cs", 4, true),
    ("_u8cs", 8, true),
    ("_u2", 2, false),
    ("_u2cs", 2, true),
    ("_stcs", 4, true),
    ("_blk4", 4, false),
    ("_blk4cs", 4, true),
];

/// One launch configuration: variant index and (threads, blocks per SM).
#[derive(Clone, Copy, Debug)]
struct Config {
    variant: usize,
    shape: (u32, u32),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(usize)]
enum Kind {
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
    fn kernel(self, variant: usize) -> &'static str {
        const NAMES: [[&str; 9]; 3] = [
            [
                "bw_read",
                "bw_read_u8",
                "bw_read_cs",
                "bw_read_u8cs",
                "bw_read_u2",
                "bw_read_u2cs",
                "bw_read_stcs",
                "",
                "",
            ],
            [
                "bw_write",
                "bw_write_u8",
                "bw_write_cs",
                "bw_write_u8cs",
                "bw_write_u2",
                "bw_write_u2cs",
                "bw_write_stcs",
                "",
                "",
            ],
            [
                "bw_copy",
                "bw_copy_u8",
                "bw_copy_cs",
                "bw_copy_u8cs",
                "bw_copy_u2",
                "bw_copy_u2cs",
                "bw_copy_stcs",
                "bw_copy_blk4",
                "bw_copy_blk4cs",
            ],
        ];
        NAMES[self as usize][variant]
    }
    fn factor(self) -> f64 {
        if self == Kind::Copy {
            2.0
        } else {
            1.0
        }
    }
}

struct Bufs {
    a: u64,
    b: u64,
    sink: u64,
}

fn launch(t: &mut CudaTarget, k: Kind, bufs: &Bufs, bytes: u64, cfg: Config) -> Result<(), TargetError> {
    let n16 = bytes / 16;
    let shape = cfg.shape;
    let per_block = shape.0 as u64 * VARIANTS[cfg.variant].1 as u64;
    let cap = if shape.1 == 0 { u32::MAX / 2 } else { t.sms * shape.1 };
    let grid = n16.div_ceil(per_block).clamp(1, cap as u64) as u32;
    let null = std::ptr::null_mut();
    let name = k.kernel(cfg.variant);
    match k {
        Kind::Read => t.gpu.launch(Module::Bw, name, grid, shape.0, 0, &[bufs.a, n16, bufs.sink], null),
        Kind::Write => t.gpu.launch(Module::Bw, name, grid, shape.0, 0, &[bufs.b, n16, 0x5151], null),
        Kind::Copy => t.gpu.launch(Module::Bw, name, grid, shape.0, 0, &[bufs.a, bufs.b, n16], null),
    }
}

/// Seconds per launch: `reps` samples, each a batch of launches timed with events.
fn time_per_launch(
    t: &mut CudaTarget,
    k: Kind,
    bufs: &Bufs,
    bytes: u64,
    shape: Config,
    reps: usize,
) -> Result<Vec<f64>, TargetError> {
    // Warm-up and a first estimate.
    for _ in 0..2 {
        launch(t, k, bufs, bytes, shape)?;
    }
    t.gpu.sync()?;
    let null = std::ptr::null_mut();
    let started = std::time::Instant::now();
    launch(t, k, bufs, bytes, shape)?;
    t.gpu.sync()?;
    let one_ms = started.elapsed().as_secs_f64() * 1e3;
    let batch = ((2.0 / one_ms.max(1e-4)) as usize).clamp(1, 2000);
    let mut out = Vec::with_capacity(reps);
    for _ in 0..reps {
        let ms = timed(t, null, batch, |tt| launch(tt, k, bufs, bytes, shape))?;
        out.push(ms / 1e3 / batch as f64);
    }
    Ok(out)
}

/// Milliseconds for `n` calls of `f` between two events on `stream`.
pub(crate) fn timed(
    t: &mut CudaTarget,
    stream: cudarc::driver::sys::CUstream,
    n: usize,
    mut f: impl FnMut(&mut CudaTarget) -> Result<(), TargetError>,
) -> Result<f64, TargetError> {
    use crate::driver::ck;
    use cudarc::driver::sys;
    let mut a = std::ptr::null_mut();
    let mut b = std::ptr::null_mut();
    unsafe {
        ck(sys::cuEventCreate(&mut a, sys::CUevent_flags::CU_EVENT_DEFAULT as u32), "cuEventCreate")?;
        ck(sys::cuEventCreate(&mut b, sys::CUevent_flags::CU_EVENT_DEFAULT as u32), "cuEventCreate")?;
    }
    let res = (|| {
        unsafe { ck(sys::cuEventRecord(a, stream), "cuEventRecord")? };
        for _ in 0..n {
            f(t)?;
        }
        unsafe {
            ck(sys::cuEventRecord(b, stream), "cuEventRecord")?;
            ck(sys::cuEventSynchronize(b), "kernel execution (cuEventSynchronize)")?;
            let mut ms = 0f32;
            ck(sys::cuEventElapsedTime_v2(&mut ms, a, b), "cuEventElapsedTime")?;
            Ok(ms as f64)
        }
    })();
    unsafe {
        let _ = sys::cuEventDestroy_v2(a);
        let _ = sys::cuEventDestroy_v2(b);
    }
    res
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
    t.gpu.sync()
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
    let res = (|| -> Result<ProbeOutput, ProbeError> {
        fill(t, a, max / 4, 0xffff_ffff, 0, 7)?;
        fill(t, b, max / 4, 0xffff_ffff, 0, 8)?;
        let mut out = ProbeOutput::default();
        for k in [Kind::Read, Kind::Write, Kind::Copy] {
            // Pick the kernel variant and launch shape at the largest size.
            let mut best = (Config { variant: 0, shape: SHAPES[0] }, f64::INFINITY);
            for variant in (0..VARIANTS.len()).filter(|v| !k.kernel(*v).is_empty()) {
                for &shape in &SHAPES {
                    let cfg = Config { variant, shape };
                    let s = time_per_launch(t, k, &bufs, max, cfg, 3)?;
                    let m = memscope_core::stats::median(&s);
                    if m < best.1 {
                        best = (cfg, m);
                    }
                }
            }
            let cfg = best.0;
            let mut xs = Vec::new();
            let mut ys = Vec::new();
            let mut spreads = Vec::new();
            let mut last = None;
            for &size in &sizes(max) {
                let secs = time_per_launch(t, k, &bufs, size, cfg, reps)?;
                let rates: Vec<f64> = secs.iter().map(|s| size as f64 * k.factor() / s).collect();
                let (m, spread) = summarize(&rates, "bandwidth")?;
                xs.push(size as f64);
                ys.push(m);
                spreads.push(spread.mad);
                last = Some((size, m, spread));
            }
            let (size, m, spread) = last.ok_or_else(|| ProbeError::Failed("no sizes".into()))?;
            let method = format!(
                "{} (kernels/bw.cu), 16-byte accesses, {} in flight per thread{}, {} threads x {} (best of {} kernel variants x {} shapes at the largest size), buffer {} MiB, events over \
                 batches of launches, median of {}{}",
                k.kernel(cfg.variant),
                VARIANTS[cfg.variant].1,
                match VARIANTS[cfg.variant].0 { "_stcs" => ", .cs hint on stores", _ if VARIANTS[cfg.variant].2 => ", .cs streaming hints", _ => "" },
                cfg.shape.0,
                if cfg.shape.1 == 0 { "a one-pass grid covering the buffer".to_string() } else { format!("{} blocks/SM x {} SMs", cfg.shape.1, t.sms) },
                (0..VARIANTS.len()).filter(|v| !k.kernel(*v).is_empty()).count(),
                SHAPES.len(),
                size >> 20,
                reps,
                if k == Kind::Copy { "; bytes read + bytes written" } else { "" }
            );
            out.finding(
                &format!("bw.{}_bytes_per_s", k.name()),
                Finding::number(m, "bytes/s", &method, Confidence::High).with_spread(spread),
            );
            out.series(
                &format!("bw.{}", k.name()),
                Series {
                    description: format!("{} bandwidth versus buffer size (median of {reps})", k.name()),
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
        "GPU read, write and copy bandwidth from 4 KiB to 4 GiB (16-byte accesses, grid sized to the SMs)"
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
    #[test]
    fn sweep_sizes_are_powers_of_four_from_4k() {
        let s = super::sizes(4 << 30);
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(4 << 30)));
        assert_eq!(s.len(), 11);
    }
}
