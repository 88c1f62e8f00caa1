//! Tests of `dram`: `rem_euclid` and the quick refresh test against the library's, and `access`
//! and `access_lean` against `RefDram`, the model as it was written before the slot layout and
//! the inline common path (kept here verbatim as the reference), on random call sequences.

use super::*;
use crate::fast::refresh::QUICK_LIMIT;
use crate::hierarchy::Hierarchy;
use crate::tlb::SplitMix;

/// The DRAM model before its speed work: flat bank order, one path, `f64::max`, the library's
/// `rem_euclid` for refresh.
struct RefDram {
    banks: Vec<RefBank>,
    channel_free_ns: Vec<f64>,
    channels: u64,
    banks_per_channel: u64,
    row_shift: u32,
    row_function: RowFunction,
    period: f64,
    refresh_stall_ns: f64,
    activate_ns: f64,
    column_ns: f64,
    row_open_ns: f64,
    /// Accesses served FR-FCFS (coverage).
    fr_fcfs: u64,
}

#[derive(Clone, Copy)]
struct RefBank {
    open_row: u64,
    open_until_ns: f64,
    busy_until_ns: f64,
    phase_ns: f64,
    prev_row: u64,
    prev_end_ns: f64,
}

impl RefDram {
    fn new(h: &Hierarchy) -> Self {
        let d = &h.dram;
        let n = (d.controllers * d.channels * d.banks) as usize;
        let period = if d.refresh_fraction > 0.0 && d.refresh_stall_ns > 0.0 {
            d.refresh_stall_ns / d.refresh_fraction
        } else {
            f64::INFINITY
        };
        let mut rng = SplitMix(h.seed ^ 0xD7A3_0000);
        let banks = (0..n)
            .map(|_| RefBank {
                open_row: u64::MAX,
                open_until_ns: f64::NEG_INFINITY,
                busy_until_ns: 0.0,
                phase_ns: if period.is_finite() { rng.unit() * period } else { 0.0 },
                prev_row: u64::MAX,
                prev_end_ns: f64::NEG_INFINITY,
            })
            .collect();
        RefDram {
            banks,
            channel_free_ns: vec![0.0; (d.controllers * d.channels) as usize],
            channels: d.channels as u64,
            banks_per_channel: d.banks as u64,
            row_shift: d.row_bytes.trailing_zeros(),
            row_function: d.row_function,
            period,
            refresh_stall_ns: d.refresh_stall_ns,
            activate_ns: d.activate_ns,
            column_ns: d.column_ns,
            row_open_ns: d.row_open_ns,
            fr_fcfs: 0,
        }
    }

    fn reset(&mut self) {
        for b in &mut self.banks {
            b.open_row = u64::MAX;
            b.open_until_ns = f64::NEG_INFINITY;
            b.busy_until_ns = 0.0;
            b.prev_row = u64::MAX;
            b.prev_end_ns = f64::NEG_INFINITY;
        }
        self.channel_free_ns.fill(0.0);
    }

    fn locate(&self, controller: u32, pa: u64) -> (u32, u64, u32) {
        let key = match self.row_function {
            RowFunction::Contiguous => pa >> self.row_shift,
            RowFunction::Rtx4090 => {
                let r = pa >> 10;
                (r & !(1 << 4)) | ((((pa >> 8) ^ (pa >> 14)) & 1) << 4)
            }
        };
        let hsh = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let ch = hsh % self.channels;
        let bank = (hsh / self.channels) % self.banks_per_channel;
        let flat_ch = controller as u64 * self.channels + ch;
        ((flat_ch * self.banks_per_channel + bank) as u32, key, flat_ch as u32)
    }

    fn access(&mut self, controller: u32, pa: u64, arrive_ns: f64, lines: f64) -> DramAccess {
        let (bank_i, row, ch) = self.locate(controller, pa);
        let b = &mut self.banks[bank_i as usize];
        let conflict = b.open_row != row && arrive_ns < b.busy_until_ns;
        if conflict && row == b.prev_row && arrive_ns < b.prev_end_ns {
            self.fr_fcfs += 1;
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
        let x = (start - b.phase_ns).rem_euclid(self.period);
        if self.period.is_finite() && x < self.refresh_stall_ns {
            stall = self.refresh_stall_ns - x;
            start += stall;
            b.open_row = u64::MAX;
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
        DramAccess {
            extra_ns: (xfer_start - arrive_ns) - self.activate_ns,
            row_hit,
            refresh_stall_ns: stall,
            bank: bank_i,
            row,
            channel: ch,
            start_ns: start,
        }
    }
}

/// Hierarchies for the comparison: the preset, and its DRAM with refresh off, contiguous rows,
/// channels or banks not powers of two, a long refresh period, one controller.
fn hierarchies() -> Vec<(String, Hierarchy)> {
    let base = crate::presets::rtx4090();
    let mut out = vec![("rtx4090".to_string(), base.clone())];
    let mut add = |name: &str, f: &dyn Fn(&mut Hierarchy)| {
        let mut h = base.clone();
        f(&mut h);
        out.push((name.to_string(), h));
    };
    add("no refresh", &|h| h.dram.refresh_fraction = 0.0);
    add("contiguous", &|h| h.dram.row_function = RowFunction::Contiguous);
    add("contiguous 2 KiB, 3 channels", &|h| {
        h.dram.row_function = RowFunction::Contiguous;
        h.dram.row_bytes = 2048;
        h.dram.channels = 3;
    });
    add("5 banks", &|h| h.dram.banks = 5);
    add("3x6, no refresh", &|h| {
        (h.dram.channels, h.dram.banks, h.dram.refresh_stall_ns) = (3, 6, 0.0);
    });
    add("1 controller 4x8, frequent refresh", &|h| {
        (h.dram.controllers, h.dram.channels, h.dram.banks) = (1, 4, 8);
        h.dram.refresh_fraction = 0.3;
        h.seed = 77;
    });
    add("1 channel 1 bank", &|h| (h.dram.channels, h.dram.banks) = (1, 1));
    add("slow rows", &|h| (h.dram.row_open_ns, h.dram.column_ns) = (400.0, 20.0));
    add("activate NaN", &|h| h.dram.activate_ns = f64::NAN);
    add("activate 0", &|h| h.dram.activate_ns = 0.0);
    out
}

fn same(a: &DramAccess, b: &DramAccess) -> bool {
    a.extra_ns.to_bits() == b.extra_ns.to_bits()
        && a.row_hit == b.row_hit
        && a.refresh_stall_ns.to_bits() == b.refresh_stall_ns.to_bits()
        && (a.bank, a.row, a.channel) == (b.bank, b.row, b.channel)
        && a.start_ns.to_bits() == b.start_ns.to_bits()
}

#[test]
fn access_and_access_lean_are_the_reference_model_bit_for_bit() {
    for (name, h) in hierarchies() {
        let d = &h.dram;
        let (mut r, mut full, mut lean) = (RefDram::new(&h), Dram::new(&h), Dram::new(&h));
        assert_eq!(full.bank_count(), r.banks.len());
        let mut g = SplitMix(0xD7A3 ^ h.seed);
        let (mut hits, mut stalls) = (0, 0);
        for round in 0..5 {
            // (the last round from time 0 in small steps: reads pile up on open rows)
            let (mut now, scale) = ([0.0, 1e6, 5e11, 1.2e12, 0.0][round], [1.0, 1.0, 1.0, 1.0, 0.01][round]);
            // a few rows of a few pages, so rows repeat, conflict and are served FR-FCFS
            let rows: Vec<u64> = (0..[8, 64, 4096, 40, 8][round]).map(|_| g.below(1 << 34)).collect();
            for i in 0..60_000u64 {
                // (a row on a controller of its own, mostly: same-bank traffic)
                let k = g.below(rows.len() as u64);
                let (controller, pa) = match i % 4 {
                    0 => (g.below(d.controllers as u64) as u32, g.next_u64() >> g.below(40)),
                    _ => ((k % d.controllers as u64) as u32, rows[k as usize] ^ (g.below(64) << 4)),
                };
                now += scale
                    * match g.below(8) {
                        0 => 0.0,
                        1 => -g.unit() * 50.0,
                        2 => g.unit() * 2000.0,
                        _ => g.unit() * 30.0,
                    };
                let lines = [1.0, 0.25, 0.75, 0.5, 3.0][(i % 5) as usize];
                let want = r.access(controller, pa, now, lines);
                let got = full.access(controller, pa, now, lines);
                assert!(same(&got, &want), "{name}, access {i}: {got:?} for {want:?}");
                hits += want.row_hit as u64;
                stalls += (want.refresh_stall_ns > 0.0) as u64;
                let l = lean.access_lean(controller, pa, now, lines);
                let w = (want.extra_ns.to_bits(), want.row_hit, want.refresh_stall_ns > 0.0);
                assert_eq!((l.0.to_bits(), l.1, l.2), w, "{name}, lean access {i}");
                assert_eq!(full.locate(controller, pa), r.locate(controller, pa), "{name}");
                assert_eq!(full.row_key(pa), want.row, "{name}");
            }
            let (a, b) = (now - 1e5, now + 3e5);
            assert_eq!(full.refreshes_between(a, b), lean.refreshes_between(a, b), "{name}");
            r.reset();
            full.reset();
            lean.reset();
        }
        // every path taken (NaN activates leave only the early reads of the last round)
        if d.activate_ns.is_nan() {
            assert!(hits > 0, "{name}: {hits} hits");
            continue;
        }
        assert!(hits > 1000 && r.fr_fcfs > 100, "{name}: {hits} hits, {} FR-FCFS", r.fr_fcfs);
        let refresh = d.refresh_fraction > 0.0 && d.refresh_stall_ns > 0.0;
        assert_eq!(stalls > 100, refresh, "{name}: {stalls} refresh stalls");
    }
}

#[test]
fn a_nan_activate_keeps_f64_max_answers() {
    // `f64::max(NaN, channel free)` is the channel's time: the row stays open for the next read
    let mut h = crate::presets::rtx4090();
    (h.dram.activate_ns, h.dram.refresh_fraction) = (f64::NAN, 0.0);
    let (mut r, mut d) = (RefDram::new(&h), Dram::new(&h));
    for (t, pa) in [(0.0, 0x1000), (1.0, 0x1020), (2.0, 0x1040), (3.0, 0x9_1000)] {
        let (want, got) = (r.access(2, pa, t, 1.0), d.access(2, pa, t, 1.0));
        assert!(same(&got, &want), "{got:?} for {want:?}");
    }
    assert!(r.access(2, 0x1060, 4.0, 1.0).row_hit && d.access_lean(2, 0x1060, 4.0, 1.0).1);
}

#[test]
fn refreshes_between_counts_every_banks_windows() {
    for (name, h) in hierarchies() {
        let (r, d) = (RefDram::new(&h), Dram::new(&h));
        let (from, to) = (12_345.0, 987_654.0);
        let want: u64 = if r.period.is_finite() {
            let p = r.period;
            r.banks
                .iter()
                .map(|b| ((((to - b.phase_ns) / p).ceil() - ((from - b.phase_ns) / p).ceil()).max(0.0)) as u64)
                .sum()
        } else {
            0
        };
        assert_eq!(d.refreshes_between(from, to), want, "{name}");
    }
}

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
        for d in [0.0, -0.0, QUICK_LIMIT, f64::from_bits(QUICK_LIMIT.to_bits() - 1), f64::NAN, f64::INFINITY, -1.0] {
            assert_eq!(rf.wait(d).map(f64::to_bits), want(d), "{d} in {period}/{stall}");
        }
    }
}
