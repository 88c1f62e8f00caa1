//! The vadd replay of seed 000 (`c[i] = a[i] + b[i]`, one thread per float; the kernel of the
//! "Loading b" panel): three arrays of `n` floats in fresh allocations, blocks of
//! `sm.block_threads` threads placed on `sm.count` SMs with `sm.resident_warps` resident warps each
//! (128 x 48 on the 4090), each warp loading one line of a and one of b and storing one line of c.
//! Reports per-level hits and misses, sectors, L2 slice balance, DRAM activates and refreshes,
//! bytes, modeled time and GB/s.

use crate::machine::Stats;
use crate::replay::{replay, Kernel, MemOp, ReplayOptions};
use crate::target::SimTarget;
use crate::timeline::{Op, Timeline};
use memscope_core::{Target, TargetError};
use serde::Serialize;

struct Vadd {
    a: u64,
    b: u64,
    c: u64,
    n: u64,
}

impl Kernel for Vadd {
    fn warps(&self) -> u64 {
        self.n.div_ceil(32)
    }
    fn ops(&self, w: u64, loads: &mut Vec<MemOp>, stores: &mut Vec<MemOp>) {
        let first = w * 32;
        let bytes = (self.n - first).min(32) * 4;
        loads.push(MemOp { op: Op::LoadA, va: self.a + first * 4, bytes });
        loads.push(MemOp { op: Op::LoadB, va: self.b + first * 4, bytes });
        stores.push(MemOp { op: Op::Store, va: self.c + first * 4, bytes });
    }
}

/// What a vadd replay found.
#[derive(Debug, Clone, Serialize)]
pub struct VaddReport {
    pub n: u64,
    pub warps: u64,
    pub sms: u32,
    pub resident_warps_per_sm: u32,
    /// Modeled kernel time, ns (first issue to last retire or store ack; no launch overhead).
    pub time_ns: f64,
    /// Bytes the kernel moves: 12 n (read a and b, write c).
    pub bytes: u64,
    /// bytes / time.
    pub gb_per_s: f64,
    /// Counters of this replay.
    pub stats: Stats,
    /// L2 requests per slice: min, mean, max, and max / mean (1.0 = perfectly balanced).
    pub slice_min: u64,
    pub slice_mean: f64,
    pub slice_max: u64,
    pub slice_imbalance: f64,
    /// Refresh windows that began during the kernel (all banks).
    pub refreshes: u64,
    /// Dirty L2 lines left at the end (not yet written back).
    pub dirty_lines_at_end: u64,
}

/// Replay vadd over `n` floats on a fresh target (caches flushed). `record_warps`: how many of
/// the first warps go into the timeline (0: no timeline).
pub fn run_vadd(t: &mut SimTarget, n: u64, record_warps: u64) -> Result<(VaddReport, Option<Timeline>), TargetError> {
    if n == 0 {
        return Err(TargetError::BadSpec("vadd with n = 0".into()));
    }
    let bytes = n * 4;
    let a = t.alloc(bytes)?;
    let b = t.alloc(bytes)?;
    let c = t.alloc(bytes)?;
    t.flush()?;
    let t0 = t.now_ns();
    let m = t.machine();
    m.reset_stats();
    let k = Vadd { a: a.base, b: b.base, c: c.base, n };
    let (tot, mut tl) = replay(m, &k, t0, ReplayOptions { record_warps, sms: None, bypass_l1: false });
    let stats = m.stats.clone();
    let h = &m.h;
    let sl = &stats.slice_requests;
    let slice_min = sl.iter().copied().min().unwrap_or(0);
    let slice_max = sl.iter().copied().max().unwrap_or(0);
    let slice_mean = sl.iter().sum::<u64>() as f64 / sl.len().max(1) as f64;
    let report = VaddReport {
        n,
        warps: tot.warps,
        sms: h.sm.count,
        resident_warps_per_sm: h.sm.resident_warps,
        time_ns: tot.time_ns,
        bytes: 12 * n,
        gb_per_s: 12.0 * n as f64 / tot.time_ns,
        slice_min,
        slice_mean,
        slice_max,
        slice_imbalance: if slice_mean > 0.0 { slice_max as f64 / slice_mean } else { 0.0 },
        refreshes: tot.refreshes,
        dirty_lines_at_end: m.l2.dirty_lines() as u64,
        stats,
    };
    if let Some(tl) = tl.as_mut() {
        tl.title = format!("vadd n={n} on {}", h.name);
        tl.counters.activates = report.stats.dram_activates;
        tl.counters.bytes = report.bytes;
    }
    t.advance(tot.time_ns);
    for buf in [a, b, c] {
        t.free(buf);
    }
    Ok((report, tl))
}
