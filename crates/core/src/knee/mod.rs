//! Plateau and knee detection on a latency-versus-footprint curve (seed 000 appendix, "the latency
//! chase": a chase whose lines fit a level returns that level's hit latency; overflow shows as a
//! step). Used by the CPU latency probe and the generic discovery probes.
//!
//! The algorithm, on z = ln(latency) so that steps are ratios:
//! 1. a 3-point running median removes isolated outliers (a monotone ramp passes unchanged);
//! 2. a greedy scan grows a run from each start while the next point stays within
//!    `ln(min_step_ratio) / 2` of the run's median; a rising tail (head) that jumps out of the
//!    noise is trimmed off (it is the start (end) of a ramp, not the plateau);
//! 3. a run is a plateau when it has `min_points` points and, if short (<= 4 points), is flat
//!    compared with the steps into and out of it (a ramp of 2-4 points rises by about one step
//!    per point, a short plateau by much less); otherwise its first point is declared a ramp
//!    point and the scan retries one point later. Limitation: an outlier on a ramp point can
//!    mimic a two-point level; callers that expect no short levels set `min_points` to 3;
//! 4. neighbouring plateaus whose levels differ by less than `min_step_ratio` are merged, a
//!    plateau above a later, lower one (two adjacent outliers) is dropped, and points after the
//!    last plateau whose median is within `min_step_ratio` of it join it;
//! 5. each plateau that is followed by higher points gets a capacity (see [`Plateau::capacity`])
//!    and a transition midpoint (see [`Plateau::midpoint`]).

use crate::stats::Sample;

/// One detected level of a hierarchy on a latency-versus-footprint curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    /// Typical latency of the plateau (median of its points), in the curve's y unit.
    pub latency: f64,
    /// Spread (MAD) of the plateau's points.
    pub latency_mad: f64,
    /// First and last footprint (x) of the points that belong to the plateau.
    pub x_first: f64,
    pub x_last: f64,
    /// Estimated capacity: the footprint where this level ends (the knee), in x units; `None`
    /// when no higher point follows the plateau (the curve ends on it).
    ///
    /// Exactly: let `x_next`, `y_next` be the first point after the plateau, `lo` this plateau's
    /// latency and `hi` the next plateau's (or the highest later point when none follows). A
    /// cache of capacity C chased over a footprint F > C with a cyclic random walk hits about a
    /// fraction C/F of the time, so `y_next = lo + (1 - C/x_next) (hi - lo)` gives
    /// `C = x_next (1 - m)` with `m = (y_next - lo) / (hi - lo)`. The capacity is that C clamped
    /// to `[x_last, x_next]`: never below the largest footprint still on the plateau, never above
    /// the first footprint that is not. With a sharp step (m = 1) it is `x_last`; with a ramp
    /// over several points it is close to where the ramp starts.
    pub capacity: Option<f64>,
    /// Where the transition to the next level is half done: the footprint at which latency
    /// first crosses the geometric mean of this level's and the next level's latency (the
    /// highest later point when no plateau follows), interpolated linearly in log-footprint /
    /// log-latency between the two points around the crossing, and never below `capacity`.
    /// `None` when `capacity` is. For a sharp step it lies within one sweep step of `capacity`.
    /// When a physically indexed cache is filled through randomly placed 4 KiB pages (a VM
    /// whose host uses small pages, a kernel without huge pages), set conflicts start missing
    /// at about half the capacity and the ramp is long; half of the misses are reached near the
    /// capacity, so this is then the better capacity estimate. With a replacement policy that
    /// keeps a fraction C/F of the lines (random, adaptive), it overestimates (up to ~1.5x).
    pub midpoint: Option<f64>,
    /// Indices of the points in the plateau.
    pub points: std::ops::Range<usize>,
}

/// Tuning of [`detect_plateaus_with`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KneeConfig {
    /// Two levels are distinct when their latencies differ by at least this ratio (e.g. 1.25).
    pub min_step_ratio: f64,
    /// Fewest points a plateau may have (2: a short intermediate level still counts).
    pub min_points: usize,
}

impl KneeConfig {
    pub fn new(min_step_ratio: f64) -> Self {
        KneeConfig { min_step_ratio, min_points: 2 }
    }
}

/// Segment a curve (x ascending, y > 0) into plateaus, lowest footprint first. Returns an empty
/// list when the input is unusable (lengths differ, fewer than 2 points, a non-finite or
/// non-positive y, or `min_step_ratio <= 1`).
pub fn detect_plateaus(x: &[f64], y: &[f64], min_step_ratio: f64) -> Vec<Plateau> {
    detect_plateaus_with(x, y, &KneeConfig::new(min_step_ratio))
}

fn median_of(v: &[f64]) -> f64 {
    crate::stats::median(v)
}

/// Like [`detect_plateaus`] with every knob.
pub fn detect_plateaus_with(x: &[f64], y: &[f64], cfg: &KneeConfig) -> Vec<Plateau> {
    let n = x.len();
    let min_points = cfg.min_points.max(1);
    if n != y.len()
        || n < 2
        || cfg.min_step_ratio.is_nan()
        || cfg.min_step_ratio <= 1.0
        || y.iter().chain(x).any(|v| !v.is_finite())
        || y.iter().any(|&v| v <= 0.0)
    {
        return Vec::new();
    }
    let step = cfg.min_step_ratio.ln();
    let tol = step / 2.0;
    let z: Vec<f64> = y.iter().map(|v| v.ln()).collect();
    let zf = median3(&z);
    // Global noise: robust sigma of successive differences (most points sit on plateaus), of the
    // raw points: the running median shrinks the differences on a plateau, so a floor taken
    // from it let a noisy plateau point read as the end of a ramp and be trimmed off.
    let diffs: Vec<f64> = z.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let sigma = 1.4826 * median_of(&diffs) / std::f64::consts::SQRT_2;
    let trim_floor = (4.0 * sigma).max(0.04_f64.ln_1p());

    // Steps 2-3: greedy runs.
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && (zf[j] - median_of(&zf[i..j])).abs() <= tol {
            j += 1;
        }
        let broke_at = j;
        // Trim a rising tail: a last point that jumps above its predecessor by more than the
        // noise while the curve goes on rising is the start of a ramp. (A steady creep of a
        // sloped plateau makes no such jump and stays.)
        while j - i > min_points && j < n {
            let last = zf[j - 1];
            if last - zf[j - 2] > trim_floor && zf[j] > last {
                j -= 1;
            } else {
                break;
            }
        }
        // Trim a rising head the same way: a first point below the run's median, that the curve
        // climbs out of by more than the noise after climbing into it, ends the ramp from below.
        let mut start = i;
        while j - start > min_points && start > 0 {
            let below = median_of(&zf[start..j]) - zf[start];
            if below > trim_floor && zf[start + 1] - zf[start] > trim_floor && zf[start] > zf[start - 1] {
                start += 1;
            } else {
                break;
            }
        }
        if j - start >= min_points && is_flat(&z, &zf, start, j, broke_at) {
            runs.push(start..j);
            i = j;
        } else {
            i += 1;
        }
    }

    // Step 4: merge levels closer than the step; drop plateaus above a later, lower one.
    loop {
        let levels: Vec<f64> = runs.iter().map(|r| median_of(&z[r.clone()])).collect();
        let mut changed = false;
        for k in 0..runs.len().saturating_sub(1) {
            let (a, b) = (levels[k], levels[k + 1]);
            if (b - a).abs() < step {
                let merged = runs[k].start..runs[k + 1].end;
                runs[k] = merged;
                runs.remove(k + 1);
                changed = true;
                break;
            }
            if a - b >= step {
                // A plateau higher than its successor: the shorter of the two is spurious.
                let drop = if runs[k].len() <= runs[k + 1].len() { k } else { k + 1 };
                runs.remove(drop);
                changed = true;
                break;
            }
        }
        if !changed {
            break;
        }
    }

    // Points after the last plateau whose median stays within a step of it are the same level,
    // broken into pieces by noise (a loaded DRAM level jitters by +-20%), not a new level.
    if let Some(last) = runs.last_mut() {
        if last.end < n {
            let level = median_of(&z[last.clone()]);
            if (median_of(&z[last.end..]) - level).abs() < step {
                last.end = n;
            }
        }
    }

    // Step 5: describe each plateau and place its knee.
    let mut out = Vec::with_capacity(runs.len());
    for (k, r) in runs.iter().enumerate() {
        let s = Sample::new(&y[r.clone()]).expect("checked finite, non-empty");
        let lo = s.median();
        let capacity = if r.end < n {
            let x_last = x[r.end - 1];
            let x_next = x[r.end];
            let y_next = zf[r.end].exp();
            let hi = match runs.get(k + 1) {
                Some(nr) => median_of(&y[nr.clone()]),
                None => zf[r.end..].iter().cloned().fold(f64::MIN, f64::max).exp(),
            };
            if hi <= lo {
                None
            } else {
                let m = ((y_next - lo) / (hi - lo)).clamp(0.0, 1.0);
                Some((x_next * (1.0 - m)).clamp(x_last, x_next))
            }
        } else {
            None
        };
        let midpoint = capacity.and_then(|c| {
            let hi = match runs.get(k + 1) {
                Some(nr) => median_of(&y[nr.clone()]),
                None => zf[r.end..].iter().cloned().fold(f64::MIN, f64::max).exp(),
            };
            let target = (lo.ln() + hi.ln()) / 2.0;
            let stop = runs.get(k + 1).map(|nr| nr.end).unwrap_or(n);
            let j = (r.end..stop).find(|&j| zf[j] >= target)?;
            let (z0, z1) = (zf[j - 1].min(target), zf[j]);
            let t = if z1 > z0 { (target - z0) / (z1 - z0) } else { 1.0 };
            let (a, b) = (x[j - 1].ln(), x[j].ln());
            Some((a + t * (b - a)).exp().max(c))
        });
        out.push(Plateau {
            latency: lo,
            latency_mad: s.mad(),
            x_first: x[r.start],
            x_last: x[r.end - 1],
            capacity,
            midpoint,
            points: r.clone(),
        });
    }
    out
}

/// 3-point running median; the end points use the median of the first (last) three.
fn median3(z: &[f64]) -> Vec<f64> {
    let n = z.len();
    if n < 3 {
        return z.to_vec();
    }
    let m3 = |a: f64, b: f64, c: f64| a.max(b).min(a.min(b).max(c));
    let mut out = vec![0.0; n];
    for i in 1..n - 1 {
        out[i] = m3(z[i - 1], z[i], z[i + 1]);
    }
    // Tukey's end-point rule: the median of the end value, its neighbour and the straight-line
    // extrapolation from the next two (a monotone end passes unchanged, an outlier does not).
    out[0] = m3(z[0], out[1], 3.0 * out[1] - 2.0 * out[2]);
    out[n - 1] = m3(z[n - 1], out[n - 2], 3.0 * out[n - 2] - 2.0 * out[n - 3]);
    out
}

/// Whether run `i..j` is flat enough to be a level: long runs are; a short one must spread (raw
/// and filtered values alike) by less than a third of the distance from its median to the point
/// before it and to the point that ended the greedy run (`broke_at`, before tail trimming). A
/// ramp of uniform steps never passes: its span is about its distance to either neighbour.
fn is_flat(z: &[f64], zf: &[f64], i: usize, j: usize, broke_at: usize) -> bool {
    if j - i > 4 {
        return true;
    }
    let span_of = |v: &[f64]| v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min);
    let span = span_of(&z[i..j]).max(span_of(&zf[i..j]));
    let med = median_of(&zf[i..j]);
    let mut bound = f64::INFINITY;
    if i > 0 {
        bound = bound.min(med - zf[i - 1]);
    }
    if broke_at < zf.len() {
        bound = bound.min(zf[broke_at] - med);
    }
    span <= bound / 3.0
}

#[cfg(test)]
mod tests;
