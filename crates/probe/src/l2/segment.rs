//! The L2 segment one SM's chase sees (docs/TRUST.md; mt4g calls it the "segment" of a partitioned L2):
//! the footprint of a dense L1-bypassing chase at which half of the hops have left the near-L2
//! level. A chase lapping a footprint larger than what one SM's partition holds misses it on a
//! growing share of hops; the half-way footprint is a statistic of the whole curve rather than of
//! its first miss, so it does not move with the one physical set that overflows first. Found by
//! bisection in log footprint between two sweep points that bracket one half, then interpolated.

use crate::latency::{dense_lines, Point};
use crate::measure::{Meter, Timing};
use memscope_core::{CachePath, ChaseSpec, ProbeError};

/// Where half of the hops leave the near level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HalfWay {
    /// The interpolated half-way footprint, a whole number of lines.
    pub bytes: u64,
    /// The bracket the bisection ended with (below half, at or above half).
    pub lo_bytes: u64,
    pub hi_bytes: u64,
}

/// Share of the recorded hops slower than `leave_ns`.
fn left(t: &Timing, leave_ns: f64) -> Option<f64> {
    t.fraction_in(leave_ns, f64::INFINITY)
}

/// Log-linear interpolation of the footprint where the share reaches one half.
pub fn interpolate(lo: (u64, f64), hi: (u64, f64), stride: u64) -> u64 {
    let (x0, y0) = ((lo.0 as f64).ln(), lo.1);
    let (x1, y1) = ((hi.0 as f64).ln(), hi.1);
    let x = if y1 > y0 { x0 + (0.5 - y0) / (y1 - y0) * (x1 - x0) } else { x1 };
    let bytes = x.exp().clamp(lo.0 as f64, hi.0 as f64);
    ((bytes / stride as f64).round() as u64).max(1) * stride
}

/// The half-way footprint from `sm` (None: the meter's own SM, whose `sweep` points give the
/// bracket). None without per-hop times or when no sweep point reaches one half.
pub fn half_way(
    m: &mut Meter<'_>,
    base: u64,
    stride: u64,
    sweep: &[Point],
    leave_ns: f64,
    sm: Option<u32>,
    quick: bool,
) -> Result<Option<HalfWay>, ProbeError> {
    if !m.per_hop() {
        return Ok(None);
    }
    let shares: Vec<(u64, f64)> = sweep.iter().filter_map(|p| Some((p.bytes, left(&p.timing, leave_ns)?))).collect();
    let Some(j) = shares.iter().position(|&(_, f)| f >= 0.5) else { return Ok(None) };
    if j == 0 {
        return Ok(None);
    }
    let measure = |m: &mut Meter<'_>, bytes: u64| -> Result<f64, ProbeError> {
        let lines = dense_lines(m, base, stride, (bytes / stride).max(1));
        let mut spec = ChaseSpec::new(lines, CachePath::L1Bypass, (bytes / stride).max(4000));
        spec.warmup_laps = 1;
        spec.sm = sm.or(m.sm);
        let t = m.run(spec)?;
        Ok(left(&t, leave_ns).unwrap_or(0.0))
    };
    let (mut lo, mut hi) = (shares[j - 1], shares[j]);
    if sm.is_some() {
        // Another SM: measure the bracket's ends there, widening by an octave while it fails.
        lo.1 = measure(m, lo.0)?;
        hi.1 = measure(m, hi.0)?;
        for _ in 0..3 {
            if lo.1 >= 0.5 {
                lo.0 = (lo.0 / 2 / stride).max(1) * stride;
                lo.1 = measure(m, lo.0)?;
            } else if hi.1 < 0.5 {
                hi.0 = hi.0 / stride * 2 * stride;
                hi.1 = measure(m, hi.0)?;
            } else {
                break;
            }
        }
        if lo.1 >= 0.5 || hi.1 < 0.5 {
            return Ok(None);
        }
    }
    for _ in 0..if quick { 4 } else { 6 } {
        let mid = (((lo.0 as f64) * (hi.0 as f64)).sqrt() as u64 / stride).max(1) * stride;
        if mid <= lo.0 || mid >= hi.0 {
            break;
        }
        let f = measure(m, mid)?;
        if f >= 0.5 {
            hi = (mid, f);
        } else {
            lo = (mid, f);
        }
    }
    Ok(Some(HalfWay { bytes: interpolate(lo, hi, stride), lo_bytes: lo.0, hi_bytes: hi.0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_in_log_footprint() {
        // 25% at 16 MiB, 75% at 64 MiB: half way at 32 MiB (the geometric middle).
        let b = interpolate((16 << 20, 0.25), (64 << 20, 0.75), 128);
        assert_eq!(b, 32 << 20);
        // A flat pair gives the upper end; the result stays inside the bracket.
        assert_eq!(interpolate((1 << 20, 0.5), (2 << 20, 0.5), 128), 2 << 20);
        assert_eq!(interpolate((1 << 20, 0.0), (2 << 20, 1.0), 128) % 128, 0);
    }
}
