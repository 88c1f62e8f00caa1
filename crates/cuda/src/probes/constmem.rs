//! `constmem`: the constant caches (docs/SM_MEMORIES.md; mt4g's "constant l1 / l1.5"): a dependent chase of
//! indexed loads through the 64 KiB `__constant__` bank on SM 0 (kernels/constmem.cu), seed 000's
//! instrument (whole-chase time over hops). First the fetch unit: an ascending walk over 16 KiB
//! (past the constant L1, within the bank) at strides 4 .. 512 B (sm_fit::fetch_unit); then the
//! latency-versus-footprint curve from 256 B to the whole bank, random cyclic order over cells one
//! fetch unit apart, so the knee (knee.rs) is the constant L1's capacity, the first plateau its
//! hit and the second the L1.5's hit; the L1.5 capacity is the next knee, or at least the bank when
//! the curve ends on the L1.5 plateau. The miss penalty is the difference of the two plateaus.

use super::sm_chase::{self, Bench, Path, Point, CONST_BANK_BYTES};
use super::sm_fit::{fetch_unit, two_levels};
use super::{cuda_only, run_gpu};
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::stats::Sample;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetInfo,
};

pub struct ConstMemProbe;

/// Footprint of the stride experiment, bytes: past any plausible constant L1, within the bank.
const STRIDE_FOOTPRINT: u64 = 16 << 10;
const STRIDES: [u64; 8] = [4, 8, 16, 32, 64, 128, 256, 512];
const FOOTPRINTS: [u64; 17] =
    [256, 512, 1024, 1536, 1792, 2048, 2304, 2560, 3072, 4096, 8192, 16384, 24576, 32768, 40960, 49152, 65536];

/// A level's finding from the launches of the points on it (ns and cycles pooled).
pub(crate) fn level_finding(points: &[&Point], method: &str, clock_hz: Option<f64>) -> Option<Finding> {
    let ns: Vec<f64> = points.iter().flat_map(|p| p.ns.iter().copied()).collect();
    let cyc: Vec<f64> = points.iter().flat_map(|p| p.cycles.iter().copied()).collect();
    let s = Sample::new(&ns).ok()?;
    let mut f = Finding::number(s.median(), "ns", method, Confidence::High).with_spread(s.spread());
    f = match Sample::new(&cyc) {
        Ok(c) => f.with_cycles(c.median()),
        Err(_) => f.with_cycles_from(clock_hz),
    };
    Some(f)
}

/// The difference of two level findings (ns and cycles), same instrument.
pub(crate) fn penalty_finding(hit: &Finding, next: &Finding, method: &str) -> Option<Finding> {
    let d = next.as_f64()? - hit.as_f64()?;
    let mut f = Finding::number(d, "ns", method, Confidence::High);
    if let (Some(a), Some(b)) = (hit.cycles, next.cycles) {
        f = f.with_cycles(b - a);
    }
    Some(f)
}

/// A latency series from points.
pub(crate) fn series(points: &[Point], description: &str, x_name: &str, marks: Vec<f64>) -> Series {
    Series {
        description: description.into(),
        x_name: x_name.into(),
        x_unit: "bytes".into(),
        y_name: "latency".into(),
        y_unit: "ns".into(),
        x: points.iter().map(|p| p.x).collect(),
        y: points.iter().map(|p| p.median_ns()).collect(),
        y_spread: Some(points.iter().map(|p| p.mad_ns()).collect()),
        marks,
    }
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 5 };
    let clock = t.clock_hz();
    let mut b = Bench::new(t, 1 << 20)?;
    let res = run(t, &mut b, reps, clock);
    b.free(t);
    res
}

fn run(t: &mut CudaTarget, b: &mut Bench, reps: u32, clock: Option<f64>) -> Result<ProbeOutput, ProbeError> {
    let mut out = ProbeOutput::default();
    let instrument = format!(
        "dependent indexed loads from the 64 KiB __constant__ bank (LDC), one thread on SM 0: whole-chase time / hops \
         (%globaltimer, clock64), a lap of warm-up, median of {reps} launches per point"
    );
    // Fetch unit.
    let strides = sm_chase::stride_sweep(t, b, Path::Const, STRIDE_FOOTPRINT, &STRIDES, reps)?;
    let ys: Vec<f64> = strides.iter().map(|p| p.median_ns()).collect();
    let unit = fetch_unit(&STRIDES, &ys);
    let fmethod = format!(
        "ascending walk over {} KiB of the bank at strides 4..512 B: the smallest stride from which every hop misses \
         the constant L1 ({instrument})",
        STRIDE_FOOTPRINT >> 10
    );
    out.series(
        "constmem.by_stride",
        series(&strides, "ns per hop of an ascending constant-bank walk over 16 KiB by stride", "stride", vec![]),
    );

    // Capacity sweep at one cell per fetch unit (64 B where the unit is undetermined).
    let cell = unit.unwrap_or(64).clamp(4, 256);
    let pts = sm_chase::sweep(t, b, Path::Const, cell, &FOOTPRINTS, reps)?;
    let x: Vec<f64> = pts.iter().map(|p| p.x).collect();
    let y: Vec<f64> = pts.iter().map(|p| p.median_ns()).collect();
    let lv = two_levels(&x, &y);
    let smethod =
        format!("latency vs footprint, random cyclic order over cells {cell} B apart, 256 B .. 64 KiB ({instrument})");
    let mut marks = Vec::new();
    match &lv {
        Some(l) => {
            let hit_pts: Vec<&Point> = pts[l.hit_points.clone()].iter().collect();
            let hit = level_finding(&hit_pts, &format!("first plateau of the {smethod}"), clock);
            if let Some(h) = &hit {
                out.finding(keys::CONST_L1_HIT_LATENCY_NS, h.clone());
            }
            match l.capacity {
                Some(c) => {
                    marks.push(c);
                    out.finding(
                        keys::CONST_L1_CAPACITY_BYTES,
                        Finding::integer(
                            c.round() as u64,
                            "bytes",
                            &format!("knee of the {smethod} (knee.rs)"),
                            Confidence::Medium,
                        )
                        .with_note(&format!("resolution: the sweep's footprint steps ({} B near 2 KiB)", 256)),
                    );
                }
                None => out.finding(
                    keys::CONST_L1_CAPACITY_BYTES,
                    Finding::undetermined(
                        "bytes",
                        &smethod,
                        "the curve never leaves its first level within the 64 KiB bank",
                    ),
                ),
            }
            match (&l.next_points, &hit) {
                (Some(np), Some(h)) => {
                    let next_pts: Vec<&Point> = pts[np.clone()].iter().collect();
                    if let Some(n) = level_finding(&next_pts, &format!("second plateau of the {smethod}"), clock) {
                        if let Some(p) = penalty_finding(
                            h,
                            &n,
                            "const.l1_5.hit_latency_ns less const.l1.hit_latency_ns, both plateaus of the same constant chase",
                        ) {
                            out.finding(keys::CONST_L1_MISS_PENALTY_NS, p);
                        }
                        out.finding(keys::CONST_L1_5_HIT_LATENCY_NS, n);
                    }
                    // The L1.5 capacity: a knee after the second plateau, else at least the bank.
                    let last = np.end;
                    let cap = if last < pts.len() {
                        two_levels(&x[np.start..], &y[np.start..]).and_then(|l2| l2.capacity)
                    } else {
                        None
                    };
                    let f = match cap {
                        Some(c) => {
                            marks.push(c);
                            Finding::integer(c.round() as u64, "bytes", &format!("second knee of the {smethod}"), Confidence::Medium)
                        }
                        None => Finding::undetermined(
                            "bytes",
                            &smethod,
                            &format!(
                                "no knee after the L1.5 plateau: the whole {CONST_BANK_BYTES}-byte constant bank fits, so the L1.5 holds at least {CONST_BANK_BYTES} bytes (one kernel cannot address more constant memory)"
                            ),
                        ),
                    };
                    out.finding(keys::CONST_L1_5_CAPACITY_BYTES, f);
                }
                _ => {
                    for (k, u) in [
                        (keys::CONST_L1_5_HIT_LATENCY_NS, "ns"),
                        (keys::CONST_L1_MISS_PENALTY_NS, "ns"),
                        (keys::CONST_L1_5_CAPACITY_BYTES, "bytes"),
                    ] {
                        out.finding(
                            k,
                            Finding::undetermined(u, &smethod, "no second plateau after the constant L1's knee"),
                        );
                    }
                }
            }
        }
        None => {
            let why = format!("no plateau in the curve ({})", memscope_core::text::numbers(&y, "ns"));
            for (k, u) in [
                (keys::CONST_L1_HIT_LATENCY_NS, "ns"),
                (keys::CONST_L1_CAPACITY_BYTES, "bytes"),
                (keys::CONST_L1_5_HIT_LATENCY_NS, "ns"),
                (keys::CONST_L1_MISS_PENALTY_NS, "ns"),
            ] {
                out.finding(k, Finding::undetermined(u, &smethod, &why));
            }
        }
    }
    let cap = out.findings.get(keys::CONST_L1_CAPACITY_BYTES).and_then(|f| f.value.as_u64());
    let f = match unit {
        // The walk must have missed the constant L1: 16 KiB at least twice its capacity.
        Some(u) if cap.is_none_or(|c| 2 * c <= STRIDE_FOOTPRINT) => {
            Finding::integer(u, "bytes", &fmethod, Confidence::High)
                .with_note("the unit a constant-L1 miss fetches (its line, or sector where the cache is sectored)")
        }
        Some(u) => Finding::integer(u, "bytes", &fmethod, Confidence::Low).with_note(
            "the constant L1 is larger than half the walk's footprint: the walk may not have missed it on every unit",
        ),
        None => Finding::undetermined(
            "bytes",
            &fmethod,
            &format!("no clear step in the latency by stride ({})", memscope_core::text::numbers(&ys, "ns")),
        ),
    };
    out.finding(keys::CONST_L1_FETCH_BYTES, f);
    out.series(
        "constmem.by_footprint",
        series(
            &pts,
            &format!("ns per hop of a random cyclic constant-bank chase by footprint (cells {cell} B apart)"),
            "footprint",
            marks,
        ),
    );
    Ok(out)
}

impl Probe for ConstMemProbe {
    fn key(&self) -> &'static str {
        "constmem"
    }
    fn description(&self) -> &'static str {
        "constant caches: L1 and L1.5 latency, L1 size and fetch unit, miss penalty (chase through the __constant__ bank)"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        match cuda_only(info) {
            Applicability::Applicable => Applicability::Applicable,
            Applicability::Waived(_) => Applicability::Waived(
                "needs a real CUDA GPU: the constant bank and its caches exist only there (the simulator has no constant path)".into(),
            ),
        }
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_pool_their_points_and_penalties_subtract() {
        let a = Point { x: 256.0, ns: vec![9.0, 9.2, 8.9], cycles: vec![17.8, 18.2, 17.6] };
        let b = Point { x: 512.0, ns: vec![9.1, 30.0, 9.0], cycles: vec![18.0, 59.4, 17.8] };
        let hit = level_finding(&[&a, &b], "m", None).unwrap();
        assert_eq!(hit.as_f64(), Some(9.05));
        assert_eq!(hit.cycles, Some(17.9));
        assert_eq!(hit.spread.as_ref().unwrap().n, 6);
        let c = Point { x: 8192.0, ns: vec![53.0, 53.4, 53.2], cycles: vec![105.0, 105.8, 105.4] };
        let next = level_finding(&[&c], "m", None).unwrap();
        let p = penalty_finding(&hit, &next, "d").unwrap();
        assert!((p.as_f64().unwrap() - (53.2 - 9.05)).abs() < 1e-9);
        assert!((p.cycles.unwrap() - (105.4 - 17.9)).abs() < 1e-9);
        assert!(level_finding(&[], "m", None).is_none());
        let s = series(&[a, c], "d", "footprint", vec![2048.0]);
        assert_eq!((s.x.len(), s.y[1], s.marks.len()), (2, 53.2, 1));
    }
}
