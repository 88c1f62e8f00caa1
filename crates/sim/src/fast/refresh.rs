//! The DRAM refresh test made quick (speed only, no seed): `Refresh` decides whether a time lies
//! in a bank's refresh window (seed 000 "DRAM refresh") without the exact remainder in the common
//! case, and `rem_euclid` is `f64::rem_euclid` bit for bit without the library's slow `fmod`
//! loop. Both are checked against the library in dram/tests.rs.

/// The refresh test of a bank: the time `d` since its phase, `rem_euclid(d, period)`, when
/// that lies inside a refresh window (below `stall`: a refresh to wait for the end of).
///
/// Most times lie well past the window; a quick test proves those without the exact remainder.
/// Take `0 <= d < 2^40`, `d < 2^52 period` and `q = trunc(d * (1 / period))`: then
/// `floor(d / period) - 1 <= q` and `q period <= (1 + 2^-52) d`, so the exact `E = d - q period`
/// lies in `[-period, 2 period)`. With `q = 0` the rounded `x = d - q period` is `E`. With
/// `q >= 1` (so `period < 1.01 * 2^40`) it is within `2^-11` of `E`: one rounding of `q period`
/// (at most `2^-53 * 1.01 * 2^40`) and one of the difference (at most `2^-53 * 2 period`). When `x`
/// lies in `[stall + 2^-8, period - 2^-8]` (`lo`, `hi`, each rounded by less than `2^-12` when
/// `q >= 1` can happen), `E` lies in `(stall, period)`: `q` is the floored quotient and `E` the
/// exact remainder `rem_euclid` returns, at or past `stall`. Any other case takes `rem_euclid`.
/// (With no refresh, the quick test passes every finite `d >= 0` instead.) As `lo` and `hi` are
/// positive, `lo <= x <= hi` is one unsigned test on the bits: `x - lo <= hi - lo` (a negative or
/// NaN `x` has larger bits than `hi`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refresh {
    pub(crate) period: f64,
    pub(crate) stall: f64,
    /// `1 / period` and `period` (both 0 with no refresh).
    pub(crate) inv: f64,
    pub(crate) q_period: f64,
    /// Bits of `lo`, and those of `hi` less them (+0 and +infinity with no refresh).
    pub(crate) lo_bits: u64,
    pub(crate) width: u64,
    /// Bits of the bound on `d` (exclusive; also below `2^52 period`, so `d / period` fits i64;
    /// a negative `d` has larger bits); 0 (no quick test) when `lo > hi`.
    pub(crate) limit: u64,
}

impl Refresh {
    pub(crate) fn new(period: f64, stall: f64) -> Self {
        let inf = f64::INFINITY.to_bits();
        if !period.is_finite() {
            return Refresh { period, stall, inv: 0.0, q_period: 0.0, lo_bits: 0, width: inf, limit: inf };
        }
        let (lo, hi) = (stall + QUICK_EPS, period - QUICK_EPS); // lo > 0: stall > 0
        let mut limit = QUICK_LIMIT.min(period * (1u64 << 52) as f64).to_bits();
        if lo > hi {
            limit = 0;
        }
        let (lo_bits, width) = (lo.to_bits(), hi.to_bits().wrapping_sub(lo.to_bits()));
        Refresh { period, stall, inv: 1.0 / period, q_period: period, lo_bits, width, limit }
    }

    /// The quick test alone: true when `d` is surely past a refresh window (false: ask `wait`).
    #[inline(always)]
    pub(crate) fn clear(&self, d: f64) -> bool {
        self.in_range(d) && self.cleared(d)
    }

    /// (`clear`'s first test and `cleared`'s precondition)
    #[inline(always)]
    pub(crate) fn in_range(&self, d: f64) -> bool {
        d.to_bits() < self.limit
    }

    /// `clear` for a `d` in range.
    #[inline(always)]
    pub(crate) fn cleared(&self, d: f64) -> bool {
        // SAFETY: 0 <= d < 2^52 period, so 0 <= d * inv < 2^53: finite and in i64's range.
        let q = unsafe { (d * self.inv).to_int_unchecked::<i64>() } as f64;
        let x = d - q * self.q_period;
        x.to_bits().wrapping_sub(self.lo_bits) <= self.width
    }

    #[inline(always)]
    pub(crate) fn wait(&self, d: f64) -> Option<f64> {
        if self.clear(d) {
            return None;
        }
        self.wait_exact(d)
    }

    /// `wait` by `rem_euclid`.
    #[inline(never)]
    pub(crate) fn wait_exact(&self, d: f64) -> Option<f64> {
        if !self.period.is_finite() {
            return None;
        }
        let x = rem_euclid(d, self.period);
        (x < self.stall).then_some(x)
    }
}

/// `Refresh`'s range of times and margin (see there).
pub(crate) const QUICK_LIMIT: f64 = (1u64 << 40) as f64;
const QUICK_EPS: f64 = 1.0 / 256.0;

/// `x.rem_euclid(p)` for a finite positive `p`, bit for bit: `x % p` (C `fmod`, whose result is
/// exact) found from a floating-point quotient checked by fused multiply-adds (each remainder
/// `x - q p` is rounded once, so its sign is right and the one for the true quotient is exact),
/// then the same `r + p` for a negative remainder. Speed only: `fmod` is a slow bit loop.
#[inline]
pub fn rem_euclid(x: f64, p: f64) -> f64 {
    let a = x.abs();
    // (quotients up to 2^52 are exact integers; anything else takes the library's path)
    let fast = a < p * 4.0e15 && p > 0.0 && p.is_finite(); // false for NaN, infinities
    if !fast {
        return x.rem_euclid(p);
    }
    #[cfg(target_arch = "x86_64")]
    let r = if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has FMA (checked just above).
        unsafe { rem_pos_fma(a, p) }
    } else {
        rem_pos(a, p)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let r = rem_pos(a, p);
    let m = if x.is_sign_negative() { -r } else { r };
    if m < 0.0 {
        m + p
    } else {
        m
    }
}

/// `a % p` for 0 <= a < 2^52 p (see `rem_euclid`).
#[inline(always)]
fn rem_pos(a: f64, p: f64) -> f64 {
    let mut q = (a / p).floor();
    let mut r = (-q).mul_add(p, a);
    // at most a step or two from the floored quotient
    while r < 0.0 {
        q -= 1.0;
        r = (-q).mul_add(p, a);
    }
    loop {
        let t = (-(q + 1.0)).mul_add(p, a);
        if t < 0.0 {
            return r;
        }
        q += 1.0;
        r = t;
    }
}

/// `rem_pos` with the fused multiply-add in hardware.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn rem_pos_fma(a: f64, p: f64) -> f64 {
    rem_pos(a, p)
}
