//! `levelbw`: bandwidth by level beyond `l2bw` (docs/SM_MEMORIES.md; gpu-benches' per-level bandwidth), kernels
//! in kernels/levels.cu. L1: every block re-reads a 64 KiB footprint through L1 (ld.global.ca.v4,
//! eight 16-byte loads per thread per round, the kernel's shared-memory carveout set to 0 so L1 has
//! the unified array): one block's clock64 slope over two round counts is bytes/cycle/SM, a grid of
//! one block per SM timed by events is bytes/s. L2 writes: every SM stores 16-byte words over an
//! L2-resident footprint (2-32 MiB) pass after pass, events over >= 1 GiB a launch after a warm-up
//! pass; the plateau is the median of the footprints within 15 % of the fastest (`plateau`), a
//! 256 MiB footprint gives the DRAM write rate for contrast. One slice: every warp of every SM reads
//! the same 128-byte line past L1 (one slice owns a line), so the L2 read plateau of `l2bw` over this
//! rate is compared with the slice count of `l2.slices` (seed 000: "the aggregate bandwidth is 36x
//! that of a single slice"), both read from earlier findings when those probes ran.

use super::bw::timed;
use super::smem::run_read;
use super::{cuda_only_sim_lacks, run_gpu, summarize};
use crate::gpu::FuncAttr;
use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::stats::median;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetError, TargetInfo,
};
use std::collections::BTreeMap;

pub struct LevelBwProbe;

/// A plateau of a rate curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    /// Median of the points within the tolerance of the fastest.
    pub rate: f64,
    /// Smallest and largest x of those points.
    pub from: f64,
    pub to: f64,
    /// How many points.
    pub points: usize,
}

/// The plateau of (x, rate) points: the median rate of the points within `tol` (relative) of the
/// fastest. None for empty, mismatched or non-positive input.
pub fn plateau(x: &[f64], y: &[f64], tol: f64) -> Option<Plateau> {
    if x.is_empty() || x.len() != y.len() || y.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let top = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if top <= 0.0 {
        return None;
    }
    let on: Vec<usize> = (0..y.len()).filter(|&i| y[i] >= (1.0 - tol) * top).collect();
    let xs: Vec<f64> = on.iter().map(|&i| x[i]).collect();
    Some(Plateau {
        rate: median(&on.iter().map(|&i| y[i]).collect::<Vec<_>>()),
        from: xs.iter().cloned().fold(f64::INFINITY, f64::min),
        to: xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        points: on.len(),
    })
}

/// L1 footprint per block, bytes.
const L1_SPAN: u64 = 64 << 10;

fn prefer_l1(t: &mut CudaTarget) -> Result<(), TargetError> {
    let a = FuncAttr::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    Ok(t.gpu.set_func_attr(Module::Levels, "l1_read", a, 0)?)
}

/// (bytes/cycle of one SM, bytes/s of one block per SM, distinct SMs of the grid): `reps` each.
fn l1_rates(t: &mut CudaTarget, buf: u64, out: u64, reps: usize) -> Result<(Vec<f64>, Vec<f64>, usize), TargetError> {
    let per_block_round = 1024.0 * 8.0 * 16.0;
    let (r1, r2) = (128u64, 512u64);
    let null = std::ptr::null_mut();
    let (mut pc, mut ps) = (Vec::new(), Vec::new());
    run_read(t, Module::Levels, "l1_read", 1, 1024, 0, &[buf, L1_SPAN, 8, 0, out], out, 6)?;
    for _ in 0..reps {
        let a = run_read(t, Module::Levels, "l1_read", 1, 1024, 0, &[buf, L1_SPAN, r1, 0, out], out, 6)?;
        let b = run_read(t, Module::Levels, "l1_read", 1, 1024, 0, &[buf, L1_SPAN, r2, 0, out], out, 6)?;
        let dc = b[1].wrapping_sub(b[0]) as f64 - a[1].wrapping_sub(a[0]) as f64;
        pc.push(per_block_round * (r2 - r1) as f64 / dc);
    }
    let grid = t.sms;
    for _ in 0..reps {
        let a = timed(t, null, 1, |tt| {
            tt.gpu.launch(Module::Levels, "l1_read", grid, 1024, 0, &[buf, L1_SPAN, r1, 0, out], null)
        })?;
        let b = timed(t, null, 1, |tt| {
            tt.gpu.launch(Module::Levels, "l1_read", grid, 1024, 0, &[buf, L1_SPAN, r2, 0, out], null)
        })?;
        ps.push(grid as f64 * per_block_round * (r2 - r1) as f64 / ((b - a) * 1e-3));
    }
    let v: Vec<u64> = t.gpu.dtoh(out, grid as usize * 6)?;
    let sms: std::collections::BTreeSet<u64> = (0..grid as usize).map(|i| v[i * 6 + 4]).collect();
    Ok((pc, ps, sms.len()))
}

/// Footprints of the write sweep, MiB (the last is the DRAM contrast).
const WRITE_MIB: [u64; 7] = [2, 4, 8, 16, 24, 32, 256];

/// Median write rate (bytes/s) and MAD per footprint.
fn write_rates(t: &mut CudaTarget, buf: u64, reps: usize, per_launch: u64) -> Result<Vec<(f64, f64)>, ProbeError> {
    let grid = t.sms * 4;
    let null = std::ptr::null_mut();
    let mut out = Vec::new();
    for &mib in &WRITE_MIB {
        let bytes = mib << 20;
        let passes = per_launch.div_ceil(bytes).max(1);
        t.gpu.launch(Module::Levels, "l2_write", grid, 512, 0, &[buf, bytes, 1], null)?;
        let mut v = Vec::new();
        for _ in 0..reps {
            let ms = timed(t, null, 1, |tt| {
                tt.gpu.launch(Module::Levels, "l2_write", grid, 512, 0, &[buf, bytes, passes], null)
            })?;
            v.push((bytes * passes) as f64 / (ms * 1e-3));
        }
        let (m, s) = summarize(&v, "L2 write rate")?;
        out.push((m, s.mad));
    }
    Ok(out)
}

/// Bytes/s of every warp of `sms x 4` blocks of 256 threads reading one line (128 B per warp load),
/// the round count calibrated to >= 2 ms a launch.
fn line_rate(t: &mut CudaTarget, line: u64, sink: u64, reps: usize) -> Result<(Vec<f64>, u64), TargetError> {
    let grid = t.sms * 4;
    let warps = grid as f64 * 8.0;
    let null = std::ptr::null_mut();
    let run = |t: &mut CudaTarget, n: u64| {
        timed(t, null, 1, |tt| tt.gpu.launch(Module::Levels, "line_read", grid, 256, 0, &[line, n, 0, sink], null))
    };
    run(t, 4)?;
    let ms = run(t, 16)?;
    let n = ((16.0 * 2.0 / ms.max(1e-3)).ceil() as u64).clamp(16, 1 << 20);
    let mut v = Vec::new();
    for _ in 0..reps {
        let ms = run(t, n)?;
        v.push(warps * n as f64 * 8.0 * 128.0 / (ms * 1e-3));
    }
    Ok((v, n))
}

fn measure(t: &mut CudaTarget, quick: bool, earlier: &BTreeMap<String, Finding>) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 5 };
    let hz = t.clock_hz();
    let max = *WRITE_MIB.last().unwrap() << 20;
    let buf = t.gpu.malloc(max)?;
    let out_d = t.scratch(64 << 10)?;
    let mut out = ProbeOutput::default();
    let res = (|| -> Result<(), ProbeError> {
        super::bw::fill(t, buf, max / 4, 0xffff_ffff, 0, 21)?;
        // L1.
        prefer_l1(t)?;
        let (pc, ps, sms_seen) = l1_rates(t, buf, out_d, reps)?;
        let (m, s) = summarize(&pc, "L1 bandwidth")?;
        out.finding(
            keys::L1_BANDWIDTH_BYTES_PER_CYCLE_PER_SM,
            Finding::number(m, "bytes/cycle", &format!(
                "one block of 1024 threads re-reads a {} KiB L1-resident footprint (ld.global.ca.v4.u32, 8 per thread per round, carveout 0%), \
                 clock64 slope over 128 vs 512 rounds, median of {reps}", L1_SPAN >> 10),
                Confidence::High).with_spread(s),
        );
        let (ma, sa) = summarize(&ps, "L1 bandwidth, all SMs")?;
        let mut f = Finding::number(ma, "bytes/s", &format!(
            "{} blocks of 1024 threads (one per SM), the same loads, events slope over 128 vs 512 rounds, median of {reps}", t.sms),
            Confidence::High).with_spread(sa);
        if let Some(hz) = hz {
            f = f.with_check(m * t.sms as f64 * hz, "one SM's bytes/cycle x SMs x the measured clock", 0.05);
        }
        if sms_seen < t.sms as usize {
            f = f.with_note(&format!("the blocks ran on {sms_seen} distinct SMs of {}", t.sms));
        }
        out.finding(keys::L1_BANDWIDTH_BYTES_PER_S, f);

        // L2 writes.
        let per_launch: u64 = if quick { 512 << 20 } else { 1 << 30 };
        let w = write_rates(t, buf, reps, per_launch)?;
        let xs: Vec<f64> = WRITE_MIB.iter().map(|m| (m << 20) as f64).collect();
        let n_l2 = WRITE_MIB.len() - 1;
        let method = format!(
            "{} blocks x 512 threads store 16-byte words (st.global.v4, four in flight) over an L2-resident footprint pass after pass, \
             at least {} MiB a launch after a warm-up pass, events, median of {reps}; the plateau: the median of the footprints 2-32 MiB \
             within 15% of the fastest",
            t.sms * 4,
            per_launch >> 20
        );
        let ys: Vec<f64> = w.iter().map(|p| p.0).collect();
        match plateau(&xs[..n_l2], &ys[..n_l2], 0.15) {
            Some(p) => out.finding(
                keys::L2_WRITE_BANDWIDTH_BYTES_PER_S,
                Finding::number(p.rate, "bytes/s", &method, Confidence::High).with_note(&format!(
                    "{} footprints from {} to {} MiB on the plateau; {} MiB (past L2) writes at {:.3} TB/s",
                    p.points,
                    p.from / 1048576.0,
                    p.to / 1048576.0,
                    WRITE_MIB[n_l2],
                    ys[n_l2] / 1e12
                )),
            ),
            None => out.finding(
                keys::L2_WRITE_BANDWIDTH_BYTES_PER_S,
                Finding::undetermined("bytes/s", &method, "no positive write rate"),
            ),
        }
        out.series(
            "levelbw.write_by_footprint",
            Series {
                description:
                    "write rate of all SMs over a footprint written pass after pass (L2-resident up to 32 MiB)".into(),
                x_name: "footprint".into(),
                x_unit: "bytes".into(),
                y_name: "write bandwidth".into(),
                y_unit: "bytes/s".into(),
                x: xs,
                y: ys,
                y_spread: Some(w.iter().map(|p| p.1).collect()),
                marks: vec![t.l2_bytes as f64],
            },
        );

        // One line, one slice.
        let (v, rounds) = line_rate(t, buf, out_d, reps)?;
        let (slice, s) = summarize(&v, "one-line rate")?;
        let method = format!(
            "{} blocks x 256 threads, every warp reads the same 128-byte line (ld.global.cg.u32, lane l word l, 8 in flight), {rounds} rounds, \
             events over >= 2 ms, bytes counted 128 per warp load, median of {reps}",
            t.sms * 4
        );
        out.finding(
            keys::L2_SLICE_BANDWIDTH_BYTES_PER_S,
            Finding::number(slice, "bytes/s", &method, Confidence::Medium).with_spread(s).with_note(
                "what the slice owning one line serves to all SMs; a slice may serve more over several of its lines, and requests the L1 merges are counted as served",
            ),
        );
        let plateau_l2 = earlier.get(keys::L2_BANDWIDTH_BYTES_PER_S).and_then(Finding::as_f64);
        let count = earlier
            .get(keys::L2_SLICES_COUNT)
            .filter(|f| f.confidence != Confidence::Undetermined)
            .and_then(Finding::as_f64);
        let rmethod = "the L2 read plateau (l2.bandwidth_bytes_per_s of l2bw) over the one-line rate (l2.slice_bandwidth_bytes_per_s)";
        let ratio = match plateau_l2 {
            None => Finding::undetermined(
                "ratio",
                rmethod,
                "l2bw did not run before this probe in this session (or gave no plateau), so there is no L2 read plateau to compare",
            ),
            Some(p) if slice >= p => Finding::undetermined(
                "ratio",
                rmethod,
                "the one-line rate is not below the all-L2 plateau: requests for one line are merged before a slice serves them",
            ),
            Some(p) => {
                let f = Finding::number(p / slice, "ratio", rmethod, Confidence::Medium);
                match count {
                    Some(c) => f.with_check(c, "the slice count of l2.slices (seed 000: the aggregate is the slice count times one slice)", 0.25),
                    None => f.with_note("l2.slices did not run before this probe (or its count is undetermined): no slice count to compare with"),
                }
            }
        };
        out.finding(keys::L2_BANDWIDTH_OVER_SLICE_RATIO, ratio);
        Ok(())
    })();
    t.gpu.free(buf);
    res.map(|_| out)
}

impl Probe for LevelBwProbe {
    fn key(&self) -> &'static str {
        "levelbw"
    }
    fn description(&self) -> &'static str {
        "bandwidth by level: L1-resident reads per SM, the L2-resident write plateau, one slice against the L2 plateau"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        cuda_only_sim_lacks(
            info,
            "the simulated target runs pointer chases only, not the bandwidth kernels this probe times",
        )
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        run_gpu(ctx, |t, quick| measure(t, quick, &earlier))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plateau_is_the_median_of_the_fast_points() {
        let x = [2.0, 4.0, 8.0, 16.0, 24.0, 32.0];
        let y = [5.0e12, 7.9e12, 8.1e12, 8.0e12, 7.2e12, 6.0e12];
        let p = plateau(&x, &y, 0.15).unwrap();
        assert_eq!(p.points, 4);
        assert!((p.rate - 7.95e12).abs() < 1e6, "{p:?}");
        assert_eq!((p.from, p.to), (4.0, 24.0));
        assert!(plateau(&[], &[], 0.15).is_none());
        assert!(plateau(&[1.0], &[0.0], 0.15).is_none());
        assert!(plateau(&[1.0, 2.0], &[1.0], 0.15).is_none());
    }

    #[test]
    fn a_noisy_flat_curve_has_every_point_on_the_plateau() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let x: Vec<f64> = (1..=8).map(|i| i as f64).collect();
        let y: Vec<f64> = x.iter().map(|_| 6e12 * (1.0 + 0.03 * (rng.gen::<f64>() * 2.0 - 1.0))).collect();
        let p = plateau(&x, &y, 0.15).unwrap();
        assert_eq!(p.points, 8);
        assert!((p.rate - 6e12).abs() < 0.03 * 6e12);
    }
}
