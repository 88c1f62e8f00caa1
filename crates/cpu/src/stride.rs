//! `cpu.stride`: the strided copy of seed 002 (Lemire, "Measuring the size of the cache line
//! empirically"): copy one byte every N bytes of a 32 MiB buffer into another 32 MiB buffer
//! (never reading our own writes), N from 16 to 1024 with the odd strides around each power of
//! two, min/avg/max GB/s where GB/s = buffer bytes / time (the seed's definition: the speed of
//! "copying" the whole buffer). The seed runs each stride 10 times; we run 30 (10 with --quick),
//! interleaved over the strides, because on a shared machine the fastest of 10 runs still varied
//! enough to flip the line-size decision. The line size is where speed jumps.
//!
//! The same copy is repeated over two 64 KiB buffers (cache-resident, each timing copies them
//! 512 times). From DRAM, some CPUs move lines in pairs (AMD Zen 3 here: stride 129 only
//! 1.15-1.45x faster than 64 over 32 MiB, and the rule below then says 128 in some runs); between
//! L2 and L1 lines move one at a time and stride 129 is 2x faster than 64. `cpu.line_bytes` comes
//! from the cache-resident sweep; its note gives what the seed's 32 MiB sweep alone implies.

use memscope_core::keys;
use memscope_core::stats::Sample;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Progress, Series, TargetInfo,
};
use std::time::Instant;

/// Buffer size of the seed (32 MB, taken as 32 MiB).
pub const BUFFER_BYTES: usize = 32 << 20;
/// Buffer size of the cache-resident repeat (two of them fit any L2 of 256 KiB or more).
pub const CACHED_BUFFER_BYTES: usize = 64 << 10;
/// A stride at least twice the line must be this much faster than strides up to the line. The
/// seed's rule of thumb is "more than 50% faster" (its Intel server: +66% at 129 over 64). On AMD
/// Zen 3 (the dev machine, fastest of 30 runs, 8 runs of the probe) stride 128-129 is only
/// 1.29-1.46x faster than 63-64 while 255-257 is 2.7x: lines come in pairs from DRAM, which halves
/// the gain at 2L + 1. With 128-byte lines (the seed's Apple M2) 129 is barely faster than 64
/// (~1.05x), and strides below the line stay within ~10% of each other; 1.2x separates the cases.
pub const MIN_SPEEDUP: f64 = 1.2;
/// The rule's premise: strides up to the line all touch every line, so they copy at one speed.
/// Where the fastest of the strides in (L/2, L] is more than this much faster than the slowest,
/// the copy there is bound by instructions (speed grows with the stride, ~1.9x from L/2 + 1 to L),
/// not by lines, and L is not a candidate. The H200 machine's host (Intel Xeon, cache-resident
/// sweep): strides 17 / 31 / 32 at 17.4 / 29.3 / 31.7 GB/s (1.82x), which without this check
/// read as a 32-byte line; lines-bound groups stay within 1.2x (results/h200/move-pairing).
pub const MAX_FLAT_SPREAD: f64 = 1.5;

/// Strides: for each power of two P in 16..=1024, P - 1, P and P + 1.
pub fn strides() -> Vec<usize> {
    (4..=10).flat_map(|k| [(1 << k) - 1, 1 << k, (1 << k) + 1]).collect()
}

/// The strided copy itself: `dst[i] = src[i]` for i = 0, stride, 2 stride, ...
#[inline(never)]
pub fn strided_copy(src: &[u8], dst: &mut [u8], stride: usize) {
    let n = src.len().min(dst.len());
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    let mut i = 0;
    while i < n {
        // SAFETY: i < n <= both lengths.
        unsafe { *d.add(i) = *s.add(i) };
        i += stride;
    }
    std::hint::black_box(dst);
}

/// The line size implied by speed versus stride (avg GB/s per stride).
///
/// Rule: for each power of two L (32 bytes and up: below that, a cache-resident copy is bound by
/// instructions, not lines, and no current CPU has smaller lines), compare the median speed of the strides in
/// (L/2, L] ("at most one line apart": every line of the buffer is touched) with the median speed
/// of the strides in [2L, 4L) ("at least two lines apart": whole lines are skipped). The line
/// size is the smallest L whose first group is flat (within `MAX_FLAT_SPREAD`: lines-bound, not
/// instructions-bound) and whose second group is at least `MIN_SPEEDUP` (1.2x) faster; a smaller
/// L sees no such step because strides up to twice it still touch every line. `Err` with the
/// reason when no candidate shows the step. Returns (L, speedup).
pub fn line_from_strides(strides: &[usize], gbps: &[f64]) -> Result<(u64, f64), String> {
    if strides.len() != gbps.len() || strides.is_empty() {
        return Err("no stride measurements".into());
    }
    let group = |lo_excl: usize, hi_incl: usize| -> Option<Sample> {
        let v: Vec<f64> =
            strides.iter().zip(gbps).filter(|(&s, _)| s > lo_excl && s <= hi_incl).map(|(_, &g)| g).collect();
        Sample::new(&v).ok()
    };
    let max = *strides.iter().max().expect("non-empty");
    let mut best_ratio: f64 = 0.0;
    let mut not_flat = 0;
    let mut l = 32usize;
    while 2 * l <= max {
        if let (Some(slow), Some(fast)) = (group(l / 2, l), group(2 * l - 1, 4 * l - 1)) {
            if slow.max() > MAX_FLAT_SPREAD * slow.min() {
                not_flat += 1;
                l *= 2;
                continue;
            }
            let ratio = fast.median() / slow.median();
            if ratio >= MIN_SPEEDUP {
                return Ok((l as u64, ratio));
            }
            best_ratio = best_ratio.max(ratio);
        }
        l *= 2;
    }
    let skipped = if not_flat > 0 {
        format!("; {not_flat} candidates left out: strides <= L not at one speed (instruction-bound)")
    } else {
        String::new()
    };
    Err(format!(
        "no power of two L where strides >= 2L are {MIN_SPEEDUP}x faster than strides <= L (best {best_ratio:.2}x){skipped}"
    ))
}

/// The strided-copy probe.
pub struct CpuStride;

impl Probe for CpuStride {
    fn key(&self) -> &'static str {
        "cpu.stride"
    }
    fn description(&self) -> &'static str {
        "CPU strided copy of seed 002 (one byte every N of 32 MiB, N 15..1025, and cache-resident): GB/s per stride, line size"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        Applicability::only_if(target.capabilities.host_cores, "CPU-only probe")
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let runs = if ctx.quick { 10 } else { 30 };
        let st = strides();
        ctx.progress.start(2 * runs as u64, "strided copy");
        let big = sweep(&st, BUFFER_BYTES, 1, runs, ctx.progress);
        let small = sweep(&st, CACHED_BUFFER_BYTES, BUFFER_BYTES / CACHED_BUFFER_BYTES, runs, ctx.progress);
        Ok(analyze(&st, &big, &small, runs))
    }
}

/// GB/s of `runs` runs per stride over two buffers of `bytes`, each run copying `reps` times.
/// Runs are interleaved over the strides (run r of every stride, then run r + 1), so a burst of
/// activity by other processes spoils one run of many strides, not every run of one.
pub fn sweep(st: &[usize], bytes: usize, reps: usize, runs: usize, progress: &dyn Progress) -> Vec<Vec<f64>> {
    // Both buffers written first so no page fault lands inside a timed run.
    let src = vec![1u8; bytes];
    let mut dst = vec![2u8; bytes];
    let mut per_stride: Vec<Vec<f64>> = vec![Vec::with_capacity(runs); st.len()];
    for &s in st {
        strided_copy(&src, &mut dst, s); // warm-up, not timed
    }
    for _ in 0..runs {
        for (i, &s) in st.iter().enumerate() {
            let t = Instant::now();
            for _ in 0..reps {
                strided_copy(&src, &mut dst, s);
            }
            per_stride[i].push((bytes * reps) as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
        progress.advance(1);
    }
    per_stride
}

fn fastest(per_stride: &[Vec<f64>]) -> Vec<f64> {
    per_stride.iter().map(|v| Sample::new(v).map(|s| s.max()).unwrap_or(f64::NAN)).collect()
}

/// Pure analysis of GB/s samples per stride, `big` over the seed's 32 MiB buffers and `small`
/// over the cache-resident ones: series (seed: avg with MAD, min, max; cache-resident: fastest)
/// and `cpu.line_bytes` from the fastest run of each stride of the cache-resident sweep (other
/// processes only ever slow a run down, so the fastest is the least disturbed one).
pub fn analyze(strides: &[usize], big: &[Vec<f64>], small: &[Vec<f64>], runs: usize) -> ProbeOutput {
    let mut out = ProbeOutput::default();
    let samples: Vec<Option<Sample>> = big.iter().map(|v| Sample::new(v).ok()).collect();
    let pick = |f: &dyn Fn(&Sample) -> f64| -> Vec<f64> {
        samples.iter().map(|s| s.as_ref().map(f).unwrap_or(f64::NAN)).collect()
    };
    let x: Vec<f64> = strides.iter().map(|&s| s as f64).collect();
    let series = |desc: &str, y: Vec<f64>, spread: Option<Vec<f64>>| Series {
        description: desc.into(),
        x_name: "stride".into(),
        x_unit: "bytes".into(),
        y_name: "speed".into(),
        y_unit: "GB/s".into(),
        x: x.clone(),
        y,
        y_spread: spread,
        marks: vec![],
    };
    let method = format!(
        "strided copy of seed 002: one byte every N of a {} MiB buffer into another, {runs} runs per stride, GB/s = buffer bytes / time",
        BUFFER_BYTES >> 20
    );
    let cached = fastest(small);
    let line = line_from_strides(strides, &cached);
    let seed_line = line_from_strides(strides, &pick(&|s| s.max()));
    let mut s_avg = series(
        &format!("{method}; average of the runs (y_spread = MAD)"),
        pick(&|s| s.mean()),
        Some(pick(&|s| s.mad())),
    );
    if let Ok((l, _)) = &line {
        s_avg.marks = vec![*l as f64, 2.0 * *l as f64];
    }
    out.series("cpu.stride", s_avg);
    out.series(
        "cpu.stride.min",
        series("seed 002 strided copy (32 MiB): slowest run per stride", pick(&|s| s.min()), None),
    );
    out.series(
        "cpu.stride.max",
        series("seed 002 strided copy (32 MiB): fastest run per stride", pick(&|s| s.max()), None),
    );
    out.series(
        "cpu.stride.cached",
        series(
            &format!(
                "the same copy over two {} KiB buffers (cache-resident): fastest run per stride",
                CACHED_BUFFER_BYTES >> 10
            ),
            cached,
            None,
        ),
    );
    let seed_says = match &seed_line {
        Ok((l, r)) => format!("the 32 MiB sweep alone implies {l} B ({r:.2}x)"),
        Err(why) => format!("the 32 MiB sweep alone: {why}"),
    };
    let f = match line {
        Ok((l, ratio)) => {
            let agree = seed_line.as_ref().map(|(sl, _)| *sl == l).unwrap_or(false);
            Finding::integer(
                l,
                "bytes",
                &format!(
                    "{method}, repeated over two {} KiB cache-resident buffers; smallest power of two L >= 32 with strides >= 2L at least {MIN_SPEEDUP}x faster than strides <= L (fastest run per stride)",
                    CACHED_BUFFER_BYTES >> 10
                ),
                if ratio >= 1.5 && agree { Confidence::High } else { Confidence::Medium },
            )
            .with_note(&format!(
                "cache-resident: strides >= 2L are {ratio:.2}x faster than strides <= L; {seed_says}{}",
                if agree { "" } else { " (lines fetched from DRAM in pairs blur the step there)" }
            ))
        }
        Err(why) => Finding::undetermined("bytes", &method, &format!("cache-resident sweep: {why}; {seed_says}")),
    };
    out.finding(keys::CPU_LINE_BYTES, f);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Speed model: time proportional to lines touched (each access to a new line costs one
    /// line transfer), so GB/s ~ stride / line for strides above the line, flat below.
    fn model(line: usize, strides: &[usize]) -> Vec<f64> {
        strides
            .iter()
            .map(|&s| {
                let lines_touched = (BUFFER_BYTES / s).min(BUFFER_BYTES / line) as f64;
                10.0 * (BUFFER_BYTES / line) as f64 / lines_touched
            })
            .collect()
    }

    #[test]
    fn strides_of_the_seed() {
        let s = strides();
        assert_eq!(&s[..3], &[15, 16, 17]);
        assert_eq!(*s.last().unwrap(), 1025);
        assert_eq!(s.len(), 21);
    }

    #[test]
    fn copy_touches_exactly_the_strided_bytes() {
        let src: Vec<u8> = (0..1000).map(|i| (i % 251) as u8 + 1).collect();
        let mut dst = vec![0u8; 1000];
        strided_copy(&src, &mut dst, 64);
        for (i, (&d, &s)) in dst.iter().zip(&src).enumerate() {
            assert_eq!(d, if i % 64 == 0 { s } else { 0 }, "byte {i}");
        }
    }

    #[test]
    fn recovers_line_size_from_model_curves() {
        let s = strides();
        for line in [32usize, 64, 128, 256] {
            let (l, r) = line_from_strides(&s, &model(line, &s)).unwrap();
            assert_eq!(l, line as u64, "line {line}");
            assert!(r >= 1.9, "{r}");
        }
    }

    #[test]
    fn seed_like_curves() {
        let s = strides();
        // Intel server of the seed: 129 is 66% faster than 64, with a dip at multiples of 64.
        let intel: Vec<f64> = s
            .iter()
            .map(|&n| {
                let base = if n <= 65 { 10.0 } else { 16.6 * (n as f64 / 129.0).max(1.0).powf(0.8) };
                if n % 128 == 0 {
                    base * 0.85
                } else {
                    base
                }
            })
            .collect();
        assert_eq!(line_from_strides(&s, &intel).unwrap().0, 64);
        // AMD Zen 3 (this project's dev machine): lines fetched in pairs, so 127-129 gain only
        // ~1.35x over 64 while 255 gains 3x; strides up to 64 within 10% of each other.
        let zen: Vec<f64> = s
            .iter()
            .map(|&n| match n {
                0..=65 => 9.5 * (1.0 + 0.1 * ((n % 3) as f64 - 1.0)),
                66..=129 => 12.8,
                130..=257 => {
                    if n == 256 {
                        24.0
                    } else {
                        30.0
                    }
                }
                _ => 90.0 * n as f64 / 512.0,
            })
            .collect();
        assert_eq!(line_from_strides(&s, &zen).unwrap().0, 64);
        // The dev machine's fastest-run curve (measured, rounded): dip at 63-65, 1.34x at 127-129.
        let dev = [
            10.5, 10.7, 10.9, 10.7, 10.9, 10.5, 9.4, 9.6, 8.9, 12.7, 12.9, 12.7, 24.9, 25.4, 24.3, 48.2, 44.2, 47.2,
            91.7, 92.2, 96.8,
        ];
        assert_eq!(line_from_strides(&s, &dev).unwrap().0, 64);
        // The dev machine, cache-resident (2 x 128 KiB): strides 15-16 instruction-bound, 2x at 128.
        let cached = [
            25.7, 26.7, 42.6, 45.8, 45.8, 42.2, 46.6, 46.7, 46.2, 89.6, 93.6, 94.4, 194.3, 185.9, 182.2, 432.9, 348.5,
            425.6, 787.5, 419.8, 769.6,
        ];
        assert_eq!(line_from_strides(&s, &cached).unwrap().0, 64);
        // The H200 machine's host (Intel Xeon), cache-resident, fastest run per stride
        // (results/h200/move-pairing, pre.json): strides 17-32 instruction-bound (17.4 -> 31.7
        // GB/s), so 63-65 read 1.27x faster than 17-32; the line is 64 (2L at 1.86x).
        let xeon = [
            14.56, 17.48, 17.38, 29.29, 31.67, 31.53, 37.26, 37.4, 37.25, 71.15, 65.27, 67.23, 236.43, 126.72, 275.35,
            240.32, 225.77, 215.09, 318.24, 308.52, 320.16,
        ];
        assert_eq!(line_from_strides(&s, &xeon).unwrap().0, 64);
        // A copy bound by instructions at every stride (speed grows with the stride) has no
        // lines-bound group: undetermined, not the smallest candidate.
        let instr: Vec<f64> = s.iter().map(|&n| n as f64).collect();
        assert!(line_from_strides(&s, &instr).unwrap_err().contains("instruction-bound"));
        // Apple M2 of the seed: 128-byte lines, 129 barely faster than 64, 257 twice 128.
        let m2: Vec<f64> = s
            .iter()
            .map(|&n| match n {
                0..=129 => 20.0 * (1.0 + 0.05 * (n as f64 / 129.0)),
                _ => 44.0 * n as f64 / 257.0,
            })
            .collect();
        assert_eq!(line_from_strides(&s, &m2).unwrap().0, 128);
        // A flat curve (no step) is undetermined.
        let flat = vec![12.0; s.len()];
        assert!(line_from_strides(&s, &flat).unwrap_err().contains("no power of two"));
        assert!(line_from_strides(&[], &[]).is_err());
    }

    #[test]
    fn analyze_reports_line_and_series() {
        let s = strides();
        let per: Vec<Vec<f64>> = model(64, &s).iter().map(|&g| vec![g * 0.98, g, g * 1.01]).collect();
        let out = analyze(&s, &per, &per, 3);
        assert_eq!(out.findings["cpu.line_bytes"].value, serde_json::json!(64));
        assert_eq!(out.findings["cpu.line_bytes"].confidence, Confidence::High);
        assert_eq!(out.series["cpu.stride.cached"].y.len(), s.len());
        // DRAM sweep blurred to 128 by paired lines, cache-resident sweep clear: 64, medium.
        let big: Vec<Vec<f64>> = model(128, &s).iter().map(|&g| vec![g]).collect();
        let out = analyze(&s, &big, &per, 1);
        assert_eq!(out.findings["cpu.line_bytes"].value, serde_json::json!(64));
        assert_eq!(out.findings["cpu.line_bytes"].confidence, Confidence::Medium);
        assert!(out.findings["cpu.line_bytes"].note.as_deref().unwrap().contains("implies 128 B"));
        assert_eq!(out.series["cpu.stride"].y.len(), s.len());
        assert!(out.series["cpu.stride.min"].y.iter().zip(&out.series["cpu.stride.max"].y).all(|(a, b)| a <= b));
        assert_eq!(out.series["cpu.stride"].marks, vec![64.0, 128.0]);
    }
}
