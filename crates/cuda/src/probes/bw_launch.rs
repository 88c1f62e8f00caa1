//! The bandwidth probe's candidates and how one is launched and timed (crates/cuda/src/probes/bw.rs
//! and bw_ce.rs both use them; docs/PERFORMANCE.md, "GPU (H200)"): the kernel variants of
//! kernels/bw.cu, their launch shapes, the TMA copy shapes of kernels/bw_tma.cu, the driver's own
//! copy and fill, and the batches of launches timed with events.

use super::timing::timed;
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::TargetError;

/// (threads per block, blocks per SM); 0 blocks per SM: one pass, a grid covering the whole buffer.
pub(super) const SHAPES: [(u32, u32); 8] =
    [(256, 8), (512, 4), (1024, 2), (256, 16), (512, 8), (128, 0), (256, 0), (512, 0)];

/// A kernel variant of kernels/bw.cu: its read, write and copy kernels ("" where there is none),
/// groups in flight per thread (U), 16-byte words per group (W), and what its hints are.
pub(super) struct Variant {
    pub(super) names: [&'static str; 3],
    pub(super) u: u32,
    pub(super) w: u32,
    pub(super) hints: &'static str,
}

const fn v(names: [&'static str; 3], u: u32, w: u32, hints: &'static str) -> Variant {
    Variant { names, u, w, hints }
}

pub(super) const VARIANTS: [Variant; 19] = [
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
pub(super) const TMA_SHAPES: [(u32, u32, u32); 8] = [
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
pub(crate) enum Config {
    Kernel { variant: usize, shape: (u32, u32) },
    Tma { chunk: u32, stages: u32, per_sm: u32 },
    Driver,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(usize)]
pub(crate) enum Kind {
    Read,
    Write,
    Copy,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Copy => "copy",
        }
    }
    /// Bytes moved per byte of buffer size.
    pub(super) fn factor(self) -> f64 {
        if self == Kind::Copy {
            2.0
        } else {
            1.0
        }
    }
    /// Every candidate for this kind at `bytes`.
    pub(super) fn candidates(self, bytes: u64) -> Vec<Config> {
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
    pub(super) fn label(&self, k: Kind, sms: u32) -> String {
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
    pub(super) fn family(&self, k: Kind) -> String {
        match *self {
            Config::Kernel { .. } => self.label(k, 1).split(' ').next().unwrap_or("").to_string(),
            Config::Tma { .. } => "tma".into(),
            Config::Driver => self.label(k, 1),
        }
    }

    /// Full description for the finding's method.
    pub(super) fn describe(&self, k: Kind, sms: u32) -> String {
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
    pub(super) a: u64,
    pub(super) b: u64,
    pub(super) sink: u64,
}

pub(super) fn launch(t: &mut CudaTarget, k: Kind, bufs: &Bufs, bytes: u64, cfg: Config) -> Result<(), TargetError> {
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
pub(super) fn time_batches(
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

/// "4 KiB", "64 MiB", "4 GiB".
pub(super) fn size_label(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b >> 10),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
