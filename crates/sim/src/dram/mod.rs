//! DRAM behind the memory controllers (seed 000 "Found in DRAM", footnotes 13-14, "DRAM refresh"):
//! each controller drives `channels` channels of `banks` banks (rows spread over them by a hash of
//! the row); a bank opens one row at a time (an activate: `activate_ns` more latency) and serves
//! 32-byte columns from it over the channel's data bus (`column_ns` per 128-byte line, the shared
//! resource); a row stays open `row_open_ns` after its last access, and a read that finds it open
//! skips the activate; a read of another row while the bank is busy waits for it (a conflict); each bank refreshes for `refresh_stall_ns` once every `refresh_stall_ns /
//! refresh_fraction` ns (staggered seeded phases), so ~2% of accesses wait up to ~210 ns.
//!
//! Speed (docs/PERFORMANCE.md): `access` and `access_lean` (the caller's three values only) share `serve`,
//! whose common case (the preset's row function and power-of-two layout, no FR-FCFS service, a
//! time the quick refresh test clears) is straight-line code; the rest is cold. `tests`
//! checks both entry points against the model as first written, bit for bit.

pub use crate::fast::rem_euclid;
use crate::fast::Refresh;
use crate::hierarchy::{Hierarchy, RowFunction};
use crate::tlb::SplitMix;

/// One bank's state, stored in `Dram::banks` at its slot (see `Dram::slot`).
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

/// What `Dram::serve` did, with where (the slot and the row key).
#[derive(Debug, Clone, Copy)]
struct Served {
    extra_ns: f64,
    row_hit: bool,
    stall_ns: f64,
    start_ns: f64,
    slot: usize,
    row: u64,
}

/// What an entry point returns, made from `Served` at each of `serve`'s exits (so the common
/// path returns its values directly, not through a `Served` merged with the cold paths').
trait Report {
    fn report(d: &Dram, s: Served) -> Self;
}

impl Report for DramAccess {
    #[inline(always)]
    fn report(d: &Dram, s: Served) -> Self {
        let (bank, channel) = d.flat_bank_channel(s.slot);
        DramAccess {
            extra_ns: s.extra_ns,
            row_hit: s.row_hit,
            refresh_stall_ns: s.stall_ns,
            bank,
            row: s.row,
            channel,
            start_ns: s.start_ns,
        }
    }
}

/// `access_lean`'s values as (extra_ns, row_hit | stalled << 1): two scalars, returned in
/// registers from the out-of-line paths (three fields would go through memory).
#[derive(Clone, Copy)]
struct Lean(f64, u8);

impl Report for Lean {
    #[inline(always)]
    fn report(_: &Dram, s: Served) -> Self {
        Lean(s.extra_ns, s.row_hit as u8 | ((s.stall_ns > 0.0) as u8) << 1)
    }
}

/// DRAM state.
///
/// Banks are stored by slot: with power-of-two channels and banks per channel, controller `c`'s
/// bank `b` of channel `ch` lies at `c * channels * banks + b * channels + ch` (the low bits of
/// the row hash, taken whole), otherwise at its flat index `(c * channels + ch) * banks + b`.
/// A channel's data bus is free from `channel_free_ns[s]`, `s` the slot of its bank 0 (a slot
/// less the bank's part: `slot & chslot_mask`, or `slot - b`).
#[derive(Debug, Clone)]
pub struct Dram {
    banks: Vec<Bank>,
    channel_free_ns: Vec<f64>,
    channels: u64,
    banks_per_channel: u64,
    /// `channels * banks_per_channel`.
    per_controller: u64,
    row_shift: u32,
    row_function: RowFunction,
    refresh_period_ns: f64,
    refresh_stall_ns: f64,
    refresh: Refresh,
    /// `refresh`'s quick test, failing everything when `activate_ns` is NaN (the slow path then
    /// keeps `f64::max`'s answer for a NaN operand).
    quick: Refresh,
    /// Channels and banks per channel are powers of two: `channels - 1`, its bits, `banks - 1`,
    /// `channels * banks - 1`, its bits, and `!((banks - 1) * channels)`.
    pow2: bool,
    ch_mask: u64,
    ch_bits: u32,
    bank_mask: u64,
    slot_mask: u64,
    slot_bits: u32,
    chslot_mask: u64,
    /// `pow2` with `RowFunction::Rtx4090`: the one test on the common path.
    fast: bool,
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
        let pow2 = d.channels.is_power_of_two() && d.banks.is_power_of_two();
        let (channels, banks_per_channel) = (d.channels as u64, d.banks as u64);
        let mut rng = SplitMix(h.seed ^ 0xD7A3_0000);
        // phases drawn in flat order, stored by slot
        let phases: Vec<f64> = (0..n).map(|_| if period.is_finite() { rng.unit() * period } else { 0.0 }).collect();
        let mut banks = vec![
            Bank {
                open_row: u64::MAX,
                open_until_ns: f64::NEG_INFINITY,
                busy_until_ns: 0.0,
                phase_ns: 0.0,
                prev_row: u64::MAX,
                prev_end_ns: f64::NEG_INFINITY,
            };
            n
        ];
        let cb = channels * banks_per_channel;
        for (flat, &phase) in phases.iter().enumerate() {
            let flat = flat as u64;
            let (c, ch, b) = (flat / cb, flat / banks_per_channel % channels, flat % banks_per_channel);
            let slot = if pow2 { c * cb + b * channels + ch } else { flat };
            banks[slot as usize].phase_ns = phase;
        }
        let refresh = Refresh::new(period, d.refresh_stall_ns);
        let mut quick = refresh;
        if d.activate_ns.is_nan() {
            quick.limit = 0;
        }
        Dram {
            banks,
            channel_free_ns: vec![0.0; n],
            channels,
            banks_per_channel,
            per_controller: cb,
            row_shift: d.row_bytes.trailing_zeros(),
            row_function: d.row_function,
            refresh_period_ns: period,
            refresh_stall_ns: d.refresh_stall_ns,
            refresh,
            quick,
            pow2,
            ch_mask: channels.wrapping_sub(1),
            ch_bits: d.channels.trailing_zeros(),
            bank_mask: banks_per_channel.wrapping_sub(1),
            slot_mask: cb.wrapping_sub(1),
            slot_bits: cb.trailing_zeros(),
            chslot_mask: !(banks_per_channel.wrapping_sub(1) * channels),
            fast: pow2 && d.row_function == RowFunction::Rtx4090,
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
            // footnote 13: column bits 5, 6, 7, 9 and 8^14 (a 1 KiB row): bit 4 of `pa >> 10`
            // (address bit 14) becomes bit 8 ^ bit 14
            RowFunction::Rtx4090 => (pa >> 10) ^ ((pa >> 4) & (1 << 4)),
        }
    }

    /// The row hash of a row key, below 2^32: its low bits pick the channel, the next the bank.
    #[inline(always)]
    fn hash(key: u64) -> u64 {
        key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
    }

    /// (channel, bank) within the controller of row hash `hsh`.
    #[inline(always)]
    fn channel_bank(&self, hsh: u64) -> (u64, u64) {
        // (hsh < 2^32: 32-bit division, or shifts for powers of two; the same values)
        if self.pow2 {
            (hsh & self.ch_mask, (hsh >> self.ch_bits) & self.bank_mask)
        } else {
            let (h, c, b) = (hsh as u32, self.channels as u32, self.banks_per_channel as u32);
            ((h % c) as u64, ((h / c) % b) as u64)
        }
    }

    /// (row key, slot, channel slot) of `pa` on `controller`: the slot is in bounds or
    /// `banks[slot]` panics; the channel slot is at most the slot.
    #[inline(always)]
    fn place(&self, controller: u32, pa: u64) -> (u64, usize, usize) {
        let c = controller as u64;
        if self.fast {
            let row = (pa >> 10) ^ ((pa >> 4) & (1 << 4)); // `row_key`
            let slot = c.wrapping_mul(self.per_controller) | (Self::hash(row) & self.slot_mask);
            (row, slot as usize, (slot & self.chslot_mask) as usize)
        } else {
            self.place_general(c, pa)
        }
    }

    #[inline(never)]
    fn place_general(&self, c: u64, pa: u64) -> (u64, usize, usize) {
        let row = self.row_key(pa);
        let hsh = Self::hash(row);
        let (chslot, slot) = if self.pow2 {
            let slot = c.wrapping_mul(self.per_controller) | (hsh & self.slot_mask);
            (slot & self.chslot_mask, slot)
        } else {
            let (ch, bank) = self.channel_bank(hsh);
            let chslot = c.wrapping_mul(self.channels).wrapping_add(ch).wrapping_mul(self.banks_per_channel);
            // (an overflow leaves no slot: `banks[u64::MAX]` panics)
            (chslot, chslot.saturating_add(bank))
        };
        (row, slot as usize, chslot as usize)
    }

    /// (flat bank, row, flat channel) of a physical address served by `controller`.
    #[inline]
    pub fn locate(&self, controller: u32, pa: u64) -> (u32, u64, u32) {
        // Rows are spread over channels and banks by a hash of the row key (controllers hash bank
        // bits so the bits that pick the controller do not also pick the bank); the row number
        // reported is the global row key.
        let key = self.row_key(pa);
        let (ch, bank) = self.channel_bank(Self::hash(key));
        let flat_ch = controller as u64 * self.channels + ch;
        ((flat_ch * self.banks_per_channel + bank) as u32, key, flat_ch as u32)
    }

    /// (flat bank, flat channel) of a slot.
    #[inline(always)]
    fn flat_bank_channel(&self, slot: usize) -> (u32, u32) {
        let s = slot as u64;
        if self.pow2 {
            let within = s & self.slot_mask;
            let (ch, bank) = (within & self.ch_mask, within >> self.ch_bits);
            let c = s >> self.slot_bits;
            ((c * self.per_controller + ch * self.banks_per_channel + bank) as u32, (c * self.channels + ch) as u32)
        } else {
            (s as u32, (s / self.banks_per_channel) as u32)
        }
    }

    /// Serve an access of `lines` line-transfers (a fraction for partial lines) arriving at
    /// `arrive_ns`.
    #[inline]
    pub fn access(&mut self, controller: u32, pa: u64, arrive_ns: f64, lines: f64) -> DramAccess {
        self.serve(controller, pa, arrive_ns, lines)
    }

    /// `access` with only (`extra_ns`, `row_hit`, `refresh_stall_ns > 0`): the same state change
    /// and values, less work.
    #[inline]
    pub fn access_lean(&mut self, controller: u32, pa: u64, arrive_ns: f64, lines: f64) -> (f64, bool, bool) {
        let Lean(extra_ns, flags) = self.serve(controller, pa, arrive_ns, lines);
        (extra_ns, flags & 1 != 0, flags & 2 != 0)
    }

    /// `access`'s work. The common case (no FR-FCFS service, a time the quick refresh test
    /// clears) is inline; the rest is `served_with_previous_row` and `serve_slow`.
    #[inline(always)]
    fn serve<R: Report>(&mut self, controller: u32, pa: u64, arrive_ns: f64, lines: f64) -> R {
        let (row, slot, ch) = self.place(controller, pa);
        let b = &mut self.banks[slot];
        // Different banks overlap their activates; a read of the open row only queues for the
        // channel's data bus; a read of another row of a busy bank (a row conflict) waits until
        // the bank is done, then activates (footnote 14: ~15x the cost of a same-row read).
        let same = b.open_row == row;
        let conflict = !same && arrive_ns < b.busy_until_ns;
        if conflict && row == b.prev_row && arrive_ns < b.prev_end_ns {
            return self.served_with_previous_row(slot, ch, row, arrive_ns, lines);
        }
        let start = if conflict { b.busy_until_ns } else { arrive_ns };
        let d = start - b.phase_ns;
        if !self.quick.in_range(d) || !self.quick.cleared(d) {
            return self.serve_slow(slot, ch, row, arrive_ns, start, lines);
        }
        // No refresh, and `start` is finite (the quick test passed); `ready` is not NaN
        // (`activate_ns` is not: `quick`), nor is `busy_until_ns` ever: each comparison below is
        // the `f64::max` of `serve_slow`, bit for bit.
        // SAFETY: `ch <= slot` (`place`), in bounds as `banks[slot]` was; the same length.
        let chf = unsafe { self.channel_free_ns.get_unchecked_mut(ch) };
        let (row_hit, xfer_start);
        if same {
            // (the row stays: no change of `open_row`, no previous row)
            row_hit = start < b.open_until_ns;
            let ready = start + if row_hit { 0.0 } else { self.activate_ns };
            xfer_start = if *chf > ready { *chf } else { ready };
            let done = xfer_start + self.column_ns * lines;
            *chf = done;
            if done > b.busy_until_ns {
                b.busy_until_ns = done;
            }
            b.open_until_ns = done + self.row_open_ns;
        } else {
            row_hit = false;
            let ready = start + self.activate_ns;
            xfer_start = if *chf > ready { *chf } else { ready };
            let done = xfer_start + self.column_ns * lines;
            *chf = done;
            if done > b.busy_until_ns {
                b.busy_until_ns = done;
            }
            b.prev_row = b.open_row;
            b.prev_end_ns = start;
            b.open_row = row;
            b.open_until_ns = done + self.row_open_ns;
        }
        let extra_ns = (xfer_start - arrive_ns) - self.activate_ns;
        R::report(self, Served { extra_ns, row_hit, stall_ns: 0.0, start_ns: start, slot, row })
    }

    /// FR-FCFS: served with the previous row's reads, before the switch; the bank state (the
    /// row opened after) is left as it is; only the channel is shared.
    #[cold]
    #[inline(never)]
    fn served_with_previous_row<R: Report>(
        &mut self,
        slot: usize,
        ch: usize,
        row: u64,
        arrive_ns: f64,
        lines: f64,
    ) -> R {
        let chf = &mut self.channel_free_ns[ch];
        let xfer_start = arrive_ns.max(*chf);
        *chf = xfer_start + self.column_ns * lines;
        let extra_ns = xfer_start - arrive_ns - self.activate_ns;
        R::report(self, Served { extra_ns, row_hit: true, stall_ns: 0.0, start_ns: arrive_ns, slot, row })
    }

    /// `serve` from the refresh test on, for a time the quick test does not clear.
    #[cold]
    #[inline(never)]
    fn serve_slow<R: Report>(&mut self, slot: usize, ch: usize, row: u64, arrive_ns: f64, start: f64, lines: f64) -> R {
        let b = &mut self.banks[slot];
        let mut start = start;
        let mut stall = 0.0;
        if let Some(x) = self.refresh.wait(start - b.phase_ns) {
            stall = self.refresh_stall_ns - x;
            start += stall;
            b.open_row = u64::MAX; // refresh closes the row
        }
        let row_hit = b.open_row == row && start < b.open_until_ns;
        let act = if row_hit { 0.0 } else { self.activate_ns };
        let ready = start + act;
        let chf = &mut self.channel_free_ns[ch];
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
        let extra_ns = (xfer_start - arrive_ns) - self.activate_ns;
        R::report(self, Served { extra_ns, row_hit, stall_ns: stall, start_ns: start, slot, row })
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

#[cfg(test)]
mod tests;
