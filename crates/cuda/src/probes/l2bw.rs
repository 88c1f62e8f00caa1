//! `l2bw`: read bandwidth by footprint from every SM (seed 000: "the aggregate bandwidth is 36x
//! that of a single slice"; and a confirmation of the driver's L2 size (docs/TRUST.md), which one SM's chase
//! cannot see). Every SM reads a resident footprint many times over with L1-bypassing 16-byte
//! loads, two ways: a persistent grid-strided grid (4, 8 or 16 loads in flight, the start rotated
//! each pass so no SM re-reads its own lines) and short-lived blocks that each read one contiguous
//! 512 KiB chunk (8 in flight); the faster counts at each footprint; events time each launch
//! after a warm-up pass. While the footprint fits in L2 the rate stays on the L2 plateau; past it
//! the reads go to DRAM. `analyze` is a pure function of the (footprint, rate) curve: the plateau
//! is the median over the footprints from an eighth to half of the L2 (a fixed range, so two runs
//! compare the same points; small footprints read faster still: the fastest is reported beside
//! it), DRAM the median of the largest footprints, and the capacity seen by all SMs the footprint
//! where the rate has fallen half way between the two.

use super::bw::{fill, timed};
use super::{cuda_only, run_gpu};
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::stats::{median, Sample};
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetInfo,
};

pub struct L2BwProbe;

/// Footprints of the sweep, MiB.
const FOOTPRINTS_MIB: [u64; 20] = [2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 80, 128, 256];

/// The grid-strided read kernels: 4, 8 and 16 loads of 16 bytes in flight per thread. (A
/// persistent block-contiguous variant through L1 was tried on the H200 on 2026-12-01 and
/// dropped: its rate rose to 12 TB/s at 48-60 MiB, where an independent L2 benchmark falls;
/// results/h200/repeatability. Through L1, the SMs' 33 MB of L1 add to what stays resident,
/// so every load here bypasses it.)
const KERNELS: [&str; 3] = ["l2_read", "l2_read8", "l2_read16"];

/// The short-lived-block kernel and its chunk (one block reads one chunk once).
const CHUNK_KERNEL: &str = "l2_read_chunks";
const CHUNK_BYTES: u64 = 512 << 10;
const CHUNK_THREADS: u32 = 512;

/// Bytes each timed launch reads (at least).
const BYTES_PER_LAUNCH: u64 = 4 << 30;

/// The analysis of a bandwidth-by-footprint curve.
#[derive(Debug, Clone, PartialEq)]
pub struct L2Curve {
    /// Median rate of the plateau points, bytes/s.
    pub plateau_bytes_per_s: f64,
    /// Smallest and largest footprint on the plateau, bytes.
    pub plateau_from_bytes: f64,
    pub plateau_to_bytes: f64,
    /// The fastest point and its footprint (a small footprint may read faster than the plateau).
    pub fastest_bytes_per_s: f64,
    pub fastest_at_bytes: f64,
    /// Median rate of the last three footprints (DRAM), bytes/s.
    pub dram_bytes_per_s: f64,
    /// Footprint where the rate is half way between plateau and DRAM (log-interpolated), bytes.
    pub half_way_bytes: Option<f64>,
}

/// Plateau, DRAM level and half-way footprint of a (footprint bytes, bytes/s) curve sorted by
/// footprint, for an L2 of `l2_bytes`. None for fewer than 5 points, when the curve has no drop of
/// at least 25 %, or when no footprint lies between an eighth and half of the L2.
pub fn analyze(x: &[f64], y: &[f64], l2_bytes: f64) -> Option<L2Curve> {
    if x.len() < 5 || x.len() != y.len() {
        return None;
    }
    let top = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let n = y.len();
    let dram = median(&y[n - 3..]);
    if dram > 0.75 * top {
        return None;
    }
    // The plateau: the footprints from an eighth to half of the L2 (well past what the blocks in
    // flight touch at once, well inside the cache): a fixed range, so two runs compare the same
    // points. The curve must fall below half way from its fastest point to DRAM after it.
    let peak = y.iter().position(|&v| v == top)?;
    (peak..n).find(|&i| y[i] < 0.5 * (top + dram))?;
    let on: Vec<usize> = (0..n).filter(|&i| x[i] >= l2_bytes / 8.0 && x[i] <= l2_bytes / 2.0).collect();
    if on.is_empty() {
        return None;
    }
    let plateau = median(&on.iter().map(|&i| y[i]).collect::<Vec<_>>());
    let mid = 0.5 * (plateau + dram);
    let half = (peak.max(1)..n).find(|&i| y[i] < mid && y[i - 1] >= mid).map(|i| {
        let (x0, x1) = (x[i - 1].ln(), x[i].ln());
        let f = (y[i - 1] - mid) / (y[i - 1] - y[i]);
        (x0 + f * (x1 - x0)).exp()
    });
    Some(L2Curve {
        plateau_bytes_per_s: plateau,
        plateau_from_bytes: x[on[0]],
        plateau_to_bytes: x[*on.last().unwrap()],
        fastest_bytes_per_s: top,
        fastest_at_bytes: x[peak],
        dram_bytes_per_s: dram,
        half_way_bytes: half,
    })
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 5 };
    let max = *FOOTPRINTS_MIB.last().unwrap() << 20;
    let buf = t.gpu.malloc(max)?;
    let sink = t.scratch(64)?;
    let res = (|| -> Result<ProbeOutput, ProbeError> {
        fill(t, buf, max / 4, 0xffff_ffff, 0, 11)?;
        let grid = t.sms * 4;
        let block = 512u32;
        let null = std::ptr::null_mut();
        let (mut xs, mut ys, mut spread) = (Vec::new(), Vec::new(), Vec::new());
        let mut picks = Vec::new();
        for &mib in &FOOTPRINTS_MIB {
            let bytes = mib << 20;
            let passes = BYTES_PER_LAUNCH.div_ceil(bytes).max(1);
            // The three grid-strided kernels and the chunked one; the fastest one's samples count
            // (a footprint's best rate).
            let mut best: Option<(Sample, &str)> = None;
            // One block per chunk per pass (every footprint is a whole number of chunks).
            let chunks = (bytes / CHUNK_BYTES).max(1);
            let chunk_blocks = |passes: u64| {
                u32::try_from(chunks * passes).map_err(|_| {
                    ProbeError::Failed(format!("l2bw at {mib} MiB: {chunks} x {passes} blocks exceed a grid"))
                })
            };
            let (blocks_1, blocks_n) = (chunk_blocks(1)?, chunk_blocks(passes)?);
            for kernel in KERNELS.iter().chain([&CHUNK_KERNEL]) {
                let launch = |tt: &mut CudaTarget, passes: u64| {
                    if *kernel == CHUNK_KERNEL {
                        let blocks = if passes == 1 { blocks_1 } else { blocks_n };
                        tt.gpu.launch(
                            Module::Bw,
                            kernel,
                            blocks,
                            CHUNK_THREADS,
                            0,
                            &[buf, bytes, CHUNK_BYTES, sink],
                            null,
                        )
                    } else {
                        tt.gpu.launch(Module::Bw, kernel, grid, block, 0, &[buf, bytes, passes, sink, 0], null)
                    }
                };
                // Warm-up: one pass brings the footprint into L2 (and evicts the rest of the buffer).
                launch(t, 1)?;
                let mut rates = Vec::new();
                for _ in 0..reps {
                    let ms = timed(t, null, 1, |tt| launch(tt, passes))?;
                    rates.push((bytes * passes) as f64 / (ms * 1e-3));
                }
                let s = Sample::new(&rates).map_err(|e| ProbeError::Failed(format!("l2bw at {mib} MiB: {e}")))?;
                if best.as_ref().is_none_or(|b| s.median() > b.0.median()) {
                    best = Some((s, kernel));
                }
            }
            let (s, kernel) = best.expect("every variant timed");
            picks.push(format!("{mib} MiB {kernel}"));
            xs.push(bytes as f64);
            ys.push(s.median());
            spread.push(s.mad());
        }
        let mut out = ProbeOutput::default();
        let method = format!(
            "every SM reads a resident footprint with 16-byte ld.global.cg loads (L1 bypassed), the fastest at each footprint of \
             a persistent grid ({grid} blocks x {block} threads, grid-strided with 4, 8 or 16 in flight, the start rotated each pass so no SM re-reads its own lines) \
             and short-lived blocks of {CHUNK_THREADS} threads that each read one contiguous {} KiB chunk once (8 in flight), \
             at least 4 GiB a launch after a warm-up pass, events, median of {reps}",
            CHUNK_BYTES >> 10
        );
        let attribute = t.l2_bytes;
        match analyze(&xs, &ys, attribute as f64) {
            Some(c) => {
                out.finding(
                    keys::L2_BANDWIDTH_BYTES_PER_S,
                    Finding::number(c.plateau_bytes_per_s, "bytes/s", &method, Confidence::High).with_note(&format!(
                        "median of the plateau from {:.0} to {:.0} MiB (the footprints from an eighth to half of the L2); fastest point {:.3} TB/s at {:.0} MiB; DRAM level of the same kernels {:.3} TB/s; fastest kernel per footprint: {}",
                        c.plateau_from_bytes / 1048576.0,
                        c.plateau_to_bytes / 1048576.0,
                        c.fastest_bytes_per_s / 1e12,
                        c.fastest_at_bytes / 1048576.0,
                        c.dram_bytes_per_s / 1e12,
                        picks.join(", ")
                    )),
                );
                let mut cap = Finding::integer(
                    attribute,
                    "bytes",
                    "driver attribute (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)",
                    Confidence::High,
                )
                .with_note("the whole L2; what one SM's chase sees is l2.segment_capacity_bytes");
                if let Some(h) = c.half_way_bytes {
                    // Replacement and the hash leave some lines out before the footprint fills the
                    // cache, so the half-way point lies below the capacity: agreement within 25 %.
                    cap = cap.with_check(
                        h,
                        "all-SM read rate by footprint, L1-bypassing loads: where it has fallen half way from the L2 plateau to DRAM",
                        0.25,
                    );
                }
                out.finding(keys::L2_CAPACITY_BYTES, cap);
            }
            None => out.finding(
                keys::L2_BANDWIDTH_BYTES_PER_S,
                Finding::undetermined(
                    "bytes/s",
                    &method,
                    "the read rate shows no drop from an L2 plateau to DRAM over 2-256 MiB",
                ),
            ),
        }
        out.series(
            "l2bw.read_by_footprint",
            Series {
                description: "read rate of all SMs over a resident footprint, L1-bypassing loads, the fastest kernel"
                    .into(),
                x_name: "footprint".into(),
                x_unit: "bytes".into(),
                y_name: "read bandwidth".into(),
                y_unit: "bytes/s".into(),
                x: xs,
                y: ys,
                y_spread: Some(spread),
                marks: vec![attribute as f64],
            },
        );
        Ok(out)
    })();
    t.gpu.free(buf);
    res
}

impl Probe for L2BwProbe {
    fn key(&self) -> &'static str {
        "l2bw"
    }
    fn description(&self) -> &'static str {
        "read bandwidth by footprint from every SM: the L2 plateau, and the driver's L2 size checked"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        cuda_only(info)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plateau_dram_and_half_way() {
        // 10 TB/s up to 40 MiB, 4 TB/s from 64 MiB, 7 TB/s at 52 MiB (half way).
        let x: Vec<f64> = [8.0, 16.0, 32.0, 40.0, 52.0, 64.0, 128.0, 256.0].iter().map(|m| m * 1048576.0).collect();
        let y = vec![10e12, 10.2e12, 9.9e12, 10e12, 7e12, 4e12, 4e12, 4e12];
        let l2 = 80.0 * 1048576.0; // plateau range 10..40 MiB
        let c = analyze(&x, &y, l2).unwrap();
        assert!((c.plateau_bytes_per_s - 10e12).abs() < 1e9, "{c:?}");
        assert_eq!(c.dram_bytes_per_s, 4e12);
        assert_eq!(c.plateau_to_bytes, 40.0 * 1048576.0);
        let h = c.half_way_bytes.unwrap();
        assert!((h - 52.0 * 1048576.0).abs() < 1.0, "{h}");
        // A low first point (a footprint too small to fill the machine) is not the drop.
        let mut y2 = y.clone();
        y2[0] = 5e12;
        let c2 = analyze(&x, &y2, l2).unwrap();
        assert!((c2.half_way_bytes.unwrap() - 52.0 * 1048576.0).abs() < 1.0, "{c2:?}");
        assert_eq!(c2.plateau_from_bytes, 16.0 * 1048576.0);
        // A small footprint that reads faster than the rest is reported beside the plateau.
        let mut y3 = y.clone();
        y3[0] = 13e12;
        let c3 = analyze(&x, &y3, l2).unwrap();
        assert!((c3.plateau_bytes_per_s - 10e12).abs() < 1e9, "{c3:?}");
        assert_eq!(c3.plateau_from_bytes, 16.0 * 1048576.0);
        assert_eq!((c3.fastest_bytes_per_s, c3.fastest_at_bytes), (13e12, 8.0 * 1048576.0));
        // No drop: nothing to say.
        assert!(analyze(&x, &[5e12; 8], l2).is_none());
        // No footprint between an eighth and half of the L2: undetermined.
        assert!(analyze(&x, &y, 4096.0 * 1048576.0).is_none());
    }
}
