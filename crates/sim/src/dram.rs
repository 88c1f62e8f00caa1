//! DRAM behind the memory controllers (seed 000 "Found in DRAM", footnotes 13-14, "DRAM refresh"):
//! each controller drives `channels` channels of `banks` banks (rows spread over them by a hash of
//! the row); a bank opens one row at a time (an activate: `activate_ns` more latency) and serves
//! 32-byte columns from it over the channel's data bus (`column_ns` per 128-byte line, the shared
//! resource); a row stays open `row_open_ns` after its last access, and a read that finds it open
//! skips the activate; a read of another row while the bank is busy waits for it (a conflict); each bank refreshes for `refresh_stall_ns` once every `refresh_stall_ns /
//! refresh_fraction` ns (staggered seeded phases), so ~2% of accesses wait up to ~210 ns.

use crate::tlb::SplitMix;
use memscope_core::hierarchy::{Hierarchy, RowFunction};

#[derive(Debug, Clone, Copy)]
struct Bank {
    open_row: u64,
    open_until_ns: f64,
    busy_until_ns: f64,
    phase_ns: f64,
    /// The row open before the current one, and when its episode ended (the conflicting
    /// activate began): a read of it that arrived before then is served as a row hit, the way
    /// an FR-FCFS controller serves pending same-row reads before switching rows.
    prev_row: u64,
    prev_end_ns: f64,
}

/// What one DRAM access did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DramAccess {
    /// Latency beyond `latency_ns` (queueing, refresh, a conflicting open row), negative by
    /// `activate_ns` on an open-row hit.
    pub extra_ns: f64,
    /// The row was already open.
    pub row_hit: bool,
    /// Waited for a refresh (ns), 0 if not.
    pub refresh_stall_ns: f64,
    /// Flat bank index: (controller * channels + channel) * banks + bank.
    pub bank: u32,
    /// Row within the bank.
    pub row: u64,
    /// Channel index (flat over controllers).
    pub channel: u32,
    /// Time the bank started serving it, ns.
    pub start_ns: f64,
}

/// DRAM state.
#[derive(Debug, Clone)]
pub struct Dram {
    banks: Vec<Bank>,
    channel_free_ns: Vec<f64>,
    channels: u64,
    banks_per_channel: u64,
    row_shift: u32,
    row_function: RowFunction,
    refresh_period_ns: f64,
    refresh_stall_ns: f64,
    refresh: Refresh,
    /// Channels and banks per channel are powers of two: `channels - 1`, its bits, `banks - 1`.
    pow2: bool,
    ch_mask: u64,
    ch_bits: u32,
    bank_mask: u64,
    activate_ns: f64,
    column_ns: f64,
    row_open_ns: f64,
}

impl Dram {
    pub fn new(h: &Hierarchy) -> Self {
        let d = &h.dram;
        let n = (d.controllers * d.channels * d.banks) as usize;
        let period = if d.refresh_fraction > 0.0 && d.refresh_stall_ns > 0.0 {
            d.refresh_stall_ns / d.refresh_fraction
        } else {
            f64::INFINITY
        };
        let mut rng = SplitMix(h.seed ^ 0xD7A3_0000);
        let banks = (0..n)
            .map(|_| Bank {
                open_row: u64::MAX,
                open_until_ns: f64::NEG_INFINITY,
                busy_until_ns: 0.0,
                phase_ns: if period.is_finite() { rng.unit() * period } else { 0.0 },
                prev_row: u64::MAX,
                prev_end_ns: f64::NEG_INFINITY,
            })
            .collect();
        Dram {
            banks,
            channel_free_ns: vec![0.0; (d.controllers * d.channels) as usize],
            channels: d.channels as u64,
            banks_per_channel: d.banks as u64,
            row_shift: d.row_bytes.trailing_zeros(),
            row_function: d.row_function,
            refresh_period_ns: period,
            refresh_stall_ns: d.refresh_stall_ns,
            refresh: Refresh::new(period, d.refresh_stall_ns),
            pow2: d.channels.is_power_of_two() && d.banks.is_power_of_two(),
            ch_mask: (d.channels as u64).wrapping_sub(1),
            ch_bits: d.channels.trailing_zeros(),
            bank_mask: (d.banks as u64).wrapping_sub(1),
            activate_ns: d.activate_ns,
            column_ns: d.column_ns,
            row_open_ns: d.row_open_ns,
        }
    }

    /// Close every row and forget queues (refresh phases stay).
    pub fn reset(&mut self) {
        for b in &mut self.banks {
            b.open_row = u64::MAX;
            b.open_until_ns = f64::NEG_INFINITY;
            b.busy_until_ns = 0.0;
            b.prev_row = u64::MAX;
            b.prev_end_ns = f64::NEG_INFINITY;
        }
        self.channel_free_ns.fill(0.0);
    }

    /// Global row key of a physical address: addresses with equal keys share a row.
    #[inline]
    pub fn row_key(&self, pa: u64) -> u64 {
        match self.row_function {
            RowFunction::Contiguous => pa >> self.row_shift,
            // footnote 13: column bits 5, 6, 7, 9 and 8^14 (a 1 KiB row)
            RowFunction::Rtx4090 => {
                let r = pa >> 10;
                (r & !(1 << 4)) | ((((pa >> 8) ^ (pa >> 14)) & 1) << 4)
            }
        }
    }

    /// (flat bank, row, flat channel) of a physical address served by `controller`.
    #[inline]
    pub fn locate(&self, controller: u32, pa: u64) -> (u32, u64, u32) {
        // Rows are spread over channels and banks by a hash of the row key (controllers hash bank
        // bits so the bits that pick the controller do not also pick the bank); the row number
        // reported is the global row key.
        let key = self.row_key(pa);
        let hsh = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        // (hsh < 2^32: 32-bit division, or shifts for powers of two; the same values)
        let (ch, bank) = if self.pow2 {
            (hsh & self.ch_mask, (hsh >> self.ch_bits) & self.bank_mask)
        } else {
            let (h, c, b) = (hsh as u32, self.channels as u32, self.banks_per_channel as u32);
            ((h % c) as u64, ((h / c) % b) as u64)
        };
        let row = key;
        let flat_ch = controller as u64 * self.channels + ch;
        ((flat_ch * self.banks_per_channel + bank) as u32, row, flat_ch as u32)
    }

    /// Serve an access of `lines` line-transfers (a fraction for partial lines) arriving at
    /// `arrive_ns`.
    #[inline]
    pub fn access(&mut self, controller: u32, pa: u64, arrive_ns: f64, lines: f64) -> DramAccess {
        let (bank_i, row, ch) = self.locate(controller, pa);
        let refresh = &self.refresh;
        let b = &mut self.banks[bank_i as usize];
        // Different banks overlap their activates; a read of the open row only queues for the
        // channel's data bus; a read of another row of a busy bank (a row conflict) waits until
        // the bank is done, then activates (footnote 14: ~15x the cost of a same-row read).
        let conflict = b.open_row != row && arrive_ns < b.busy_until_ns;
        if conflict && row == b.prev_row && arrive_ns < b.prev_end_ns {
            // FR-FCFS: served with the previous row's reads, before the switch; the bank state
            // (the row opened after) is left as it is; only the channel is shared.
            let chf = &mut self.channel_free_ns[ch as usize];
            let xfer_start = arrive_ns.max(*chf);
            *chf = xfer_start + self.column_ns * lines;
            return DramAccess {
                extra_ns: xfer_start - arrive_ns - self.activate_ns,
                row_hit: true,
                refresh_stall_ns: 0.0,
                bank: bank_i,
                row,
                channel: ch,
                start_ns: arrive_ns,
            };
        }
        let mut start = if conflict { b.busy_until_ns } else { arrive_ns };
        let mut stall = 0.0;
        if let Some(x) = refresh.wait(start - b.phase_ns) {
            stall = self.refresh_stall_ns - x;
            start += stall;
            b.open_row = u64::MAX; // refresh closes the row
        }
        let row_hit = b.open_row == row && start < b.open_until_ns;
        let act = if row_hit { 0.0 } else { self.activate_ns };
        let ready = start + act;
        let chf = &mut self.channel_free_ns[ch as usize];
        let xfer_start = ready.max(*chf);
        let done = xfer_start + self.column_ns * lines;
        *chf = done;
        b.busy_until_ns = b.busy_until_ns.max(done);
        if b.open_row != row {
            b.prev_row = b.open_row;
            b.prev_end_ns = start;
        }
        b.open_row = row;
        b.open_until_ns = done + self.row_open_ns;
        let extra = (xfer_start - arrive_ns) - self.activate_ns;
        DramAccess {
            extra_ns: extra,
            row_hit,
            refresh_stall_ns: stall,
            bank: bank_i,
            row,
            channel: ch,
            start_ns: start,
        }
    }

    /// Refresh windows that began in [from_ns, to_ns) over all banks.
    pub fn refreshes_between(&self, from_ns: f64, to_ns: f64) -> u64 {
        if !self.refresh_period_ns.is_finite() || to_ns <= from_ns {
            return 0;
        }
        let p = self.refresh_period_ns;
        self.banks
            .iter()
            .map(|b| {
                let first = ((from_ns - b.phase_ns) / p).ceil();
                let last = ((to_ns - b.phase_ns) / p).ceil();
                (last - first).max(0.0) as u64
            })
            .sum()
    }

    pub fn bank_count(&self) -> usize {
        self.banks.len()
    }
}

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
/// (With no refresh, the quick test passes every finite `d >= 0` instead.)
#[derive(Debug, Clone, Copy)]
struct Refresh {
    period: f64,
    stall: f64,
    /// `1 / period` and `period` (both 0 with no refresh).
    inv: f64,
    q_period: f64,
    lo: f64,
    hi: f64,
    /// Bits of the bound on `d` (exclusive; also below `2^52 period`, so `d / period` fits i64;
    /// a negative `d` has larger bits).
    limit: u64,
}

impl Refresh {
    fn new(period: f64, stall: f64) -> Self {
        if !period.is_finite() {
            let (lo, hi, limit) = (f64::NEG_INFINITY, f64::INFINITY, f64::INFINITY.to_bits());
            return Refresh { period, stall, inv: 0.0, q_period: 0.0, lo, hi, limit };
        }
        let limit = QUICK_LIMIT.min(period * (1u64 << 52) as f64).to_bits();
        Refresh {
            period,
            stall,
            inv: 1.0 / period,
            q_period: period,
            lo: stall + QUICK_EPS,
            hi: period - QUICK_EPS,
            limit,
        }
    }

    #[inline(always)]
    fn wait(&self, d: f64) -> Option<f64> {
        if d.to_bits() < self.limit {
            // SAFETY: 0 <= d < 2^52 period, so 0 <= d * inv < 2^53: finite and in i64's range.
            let q = unsafe { (d * self.inv).to_int_unchecked::<i64>() } as f64;
            let x = d - q * self.q_period;
            if x >= self.lo && x <= self.hi {
                return None;
            }
        }
        self.wait_exact(d)
    }

    /// `wait` by `rem_euclid`.
    #[inline(never)]
    fn wait_exact(&self, d: f64) -> Option<f64> {
        if !self.period.is_finite() {
            return None;
        }
        let x = rem_euclid(d, self.period);
        (x < self.stall).then_some(x)
    }
}

/// `Refresh`'s range of times and margin (see there).
const QUICK_LIMIT: f64 = (1u64 << 40) as f64;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlb::SplitMix;

    #[test]
    fn rem_euclid_is_the_library_one_bit_for_bit() {
        let mut r = SplitMix(5);
        let periods = [10_500.0, 3.4, 0.1, 1e-3, 7.0, 123_456.789];
        for i in 0..400_000u64 {
            let p = periods[(i % periods.len() as u64) as usize];
            let scale = [1.0, 1e3, 1e6, 1e9, 1e12, 1e15][(i / 7 % 6) as usize];
            let mut x = (r.unit() - 0.3) * scale;
            if i % 11 == 0 {
                x = (x / p).round() * p; // exact multiples and their neighbours
                x = f64::from_bits(x.to_bits().wrapping_add(i % 3).wrapping_sub(1));
            }
            assert_eq!(rem_euclid(x, p).to_bits(), x.rem_euclid(p).to_bits(), "{x} mod {p}");
        }
        for x in [0.0, -0.0, f64::INFINITY, f64::NAN, 1e300, -1e300, f64::MIN_POSITIVE] {
            assert_eq!(rem_euclid(x, 7.5).to_bits(), x.rem_euclid(7.5).to_bits(), "{x}");
        }
    }

    #[test]
    fn the_quick_refresh_test_is_the_exact_one() {
        let mut r = SplitMix(6);
        let cases = [
            (10_500.0, 210.0),
            (3.4, 0.5),
            (0.1, 0.002),
            (1e-3, 1e-4),
            (7.0, 6.999),
            (1e13, 5.0),
            (5e-9, 1e-9),
            (1e12, 3e11),
            (2.2e12, 5.5e11),
        ];
        for (period, stall) in cases.into_iter().chain([(f64::INFINITY, 210.0)]) {
            let rf = Refresh::new(period, stall);
            let want = |d: f64| {
                let x = d.rem_euclid(period);
                (period.is_finite() && x < stall).then_some(x.to_bits())
            };
            for i in 0..300_000u64 {
                let scale = [1.0, 1e3, 1e6, 1e9, 1e12, 1.1e12, 1e15][(i % 7) as usize];
                let mut d = (r.unit() - 0.05) * scale;
                match i % 5 {
                    // multiples of the period and the window's end, and their neighbours
                    0 if period.is_finite() => d = (d / period).round() * period,
                    1 if period.is_finite() => d = (d / period).floor() * period + stall,
                    _ => {}
                }
                if i % 5 < 2 {
                    d = f64::from_bits(d.to_bits().wrapping_add(i / 5 % 5).wrapping_sub(2));
                }
                assert_eq!(rf.wait(d).map(f64::to_bits), want(d), "{d} in {period}/{stall}");
            }
            for d in [0.0, -0.0, QUICK_LIMIT, f64::from_bits(QUICK_LIMIT.to_bits() - 1), f64::NAN, f64::INFINITY, -1.0]
            {
                assert_eq!(rf.wait(d).map(f64::to_bits), want(d), "{d} in {period}/{stall}");
            }
        }
    }
}
