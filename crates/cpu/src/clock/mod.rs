//! The host core clock, measured so that it is right on any x86-64 or aarch64 host, VM or not,
//! and cross-checked against what the OS and the CPU report.
//!
//! Instrument: a long chain of dependent 64-bit integer multiplies timed against the monotonic
//! clock. `imul r64, r64` has a 3-cycle latency on every x86-64 core of the last 15 years (Intel
//! since Nehalem, AMD since K10/Zen; Agner Fog's instruction tables) and no renamer folds it.
//! A chain of dependent `add reg, imm` is measured too, and only as a witness: recent Intel
//! cores (Golden Cove and later) fold immediate adds in the renamer, and that chain then reads
//! 3-9x the real clock (14-23 GHz on the Xeon hosts this project has seen). On aarch64 no
//! latency is architectural; the primary chain there is a dependent register-register `add`
//! (1 cycle on every Arm core documented in their optimization guides) with `mul` as the witness.
//!
//! Cross-check (pure, [`cross_check`]): the measured clock against the nominal frequency (CPUID
//! leaf 0x16 base, cpufreq `base_frequency`, the invariant TSC, /proc/cpuinfo MHz, in that order)
//! and the top of the turbo range (CPUID 0x16 max, cpufreq `cpuinfo_max_freq`). Every source's
//! relative difference is recorded. The running host's sources are gathered by [`host_sources`]
//! (CPUID, sysfs cpufreq, /proc/cpuinfo).

use crate::sysinfo;
use std::time::Instant;

/// One dependent chain's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainRate {
    /// Instructions of the chain retired per second (best of the tries).
    pub ops_per_s: f64,
    /// Median over the tries (how much the VM or other processes disturbed it).
    pub median_ops_per_s: f64,
}

/// What the instruments measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Clock from the primary chain, in Hz.
    pub hz: f64,
    /// The primary chain ("imul r64 chain, 3 cycles each").
    pub method: &'static str,
    /// Cycles per instruction assumed for the primary chain.
    pub primary_cycles: f64,
    pub primary: ChainRate,
    /// The witness chain and the cycles per instruction it would have if not folded.
    pub witness_method: &'static str,
    pub witness_cycles: f64,
    pub witness: ChainRate,
}

impl Measured {
    /// Clock the witness chain implies (Hz).
    pub fn witness_hz(&self) -> f64 {
        self.witness.ops_per_s * self.witness_cycles
    }
}

/// Best and median rate over `tries` runs, 1 ms apart so that they fall in different scheduler
/// slices of a shared host (a vCPU descheduled during a try only makes that try slower).
fn rate(mut one: impl FnMut(u64) -> f64, ops_per_iter: f64, iters: u64, tries: usize) -> ChainRate {
    let mut v: Vec<f64> = Vec::with_capacity(tries);
    for _ in 0..tries {
        let s = one(iters);
        if s > 0.0 {
            v.push(iters as f64 * ops_per_iter / s);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let best = v.iter().cloned().fold(0.0, f64::max);
    ChainRate { ops_per_s: best, median_ops_per_s: memscope_core::stats::median(&v) }
}

/// Seconds for `iters` x 100 dependent multiplies.
#[cfg(target_arch = "x86_64")]
fn mul_chain(iters: u64) -> f64 {
    let t = Instant::now();
    let (mut x, m, mut n) = (3u64, 0x9e37_79b9_7f4a_7c15u64, iters);
    // SAFETY: register-only arithmetic; no memory, no stack.
    unsafe {
        std::arch::asm!("2:", ".rept 100", "imul {x}, {m}", ".endr", "dec {n}", "jnz 2b",
            x = inout(reg) x, m = in(reg) m, n = inout(reg) n, options(nomem, nostack));
    }
    std::hint::black_box((x, n));
    t.elapsed().as_secs_f64()
}

/// Seconds for `iters` x 100 dependent adds of an immediate.
#[cfg(target_arch = "x86_64")]
fn add_chain(iters: u64) -> f64 {
    let t = Instant::now();
    let (mut x, mut n) = (0u64, iters);
    // SAFETY: register-only arithmetic; no memory, no stack.
    unsafe {
        std::arch::asm!("2:", ".rept 100", "add {x}, 1", ".endr", "dec {n}", "jnz 2b",
            x = inout(reg) x, n = inout(reg) n, options(nomem, nostack));
    }
    std::hint::black_box((x, n));
    t.elapsed().as_secs_f64()
}

/// Seconds for `iters` x 100 dependent register-register adds.
#[cfg(target_arch = "aarch64")]
fn add_chain(iters: u64) -> f64 {
    let t = Instant::now();
    let (mut x, m, mut n) = (0u64, 1u64, iters);
    // SAFETY: register-only arithmetic; no memory, no stack.
    unsafe {
        std::arch::asm!("2:", ".rept 100", "add {x}, {x}, {m}", ".endr", "subs {n}, {n}, #1", "b.ne 2b",
            x = inout(reg) x, m = in(reg) m, n = inout(reg) n, options(nomem, nostack));
    }
    std::hint::black_box((x, n));
    t.elapsed().as_secs_f64()
}

/// Seconds for `iters` x 100 dependent multiplies.
#[cfg(target_arch = "aarch64")]
fn mul_chain(iters: u64) -> f64 {
    let t = Instant::now();
    let (mut x, m, mut n) = (3u64, 0x9e37_79b9_7f4a_7c15u64, iters);
    // SAFETY: register-only arithmetic; no memory, no stack.
    unsafe {
        std::arch::asm!("2:", ".rept 100", "mul {x}, {x}, {m}", ".endr", "subs {n}, {n}, #1", "b.ne 2b",
            x = inout(reg) x, m = in(reg) m, n = inout(reg) n, options(nomem, nostack));
    }
    std::hint::black_box((x, n));
    t.elapsed().as_secs_f64()
}

/// Measure the clock: 15 tries of ~3 M cycles for each chain, spread over ~60 ms. None on
/// architectures without an instrument or when the timer gave nonsense.
pub fn measure() -> Option<Measured> {
    #[cfg(target_arch = "x86_64")]
    {
        // Warm up to the load clock first (frequency ramps take a few ms).
        let _ = mul_chain(100_000);
        let primary = rate(mul_chain, 100.0, 10_000, 15);
        let witness = rate(add_chain, 100.0, 30_000, 15);
        let m = Measured {
            hz: primary.ops_per_s * 3.0,
            method: "dependent imul r64 chain (3 cycles each on x86-64)",
            primary_cycles: 3.0,
            primary,
            witness_method: "dependent add reg, imm chain (1 cycle each unless the renamer folds it)",
            witness_cycles: 1.0,
            witness,
        };
        (m.hz > 1e8 && m.hz < 2e10).then_some(m)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let _ = add_chain(300_000);
        let primary = rate(add_chain, 100.0, 30_000, 15);
        let witness = rate(mul_chain, 100.0, 10_000, 15);
        let m = Measured {
            hz: primary.ops_per_s,
            method: "dependent add reg, reg chain (1 cycle each on Arm cores)",
            primary_cycles: 1.0,
            primary,
            witness_method: "dependent mul x, x, x chain (latency not architectural: 3-4 cycles)",
            witness_cycles: 3.0,
            witness,
        };
        (m.hz > 1e8 && m.hz < 2e10).then_some(m)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = Instant::now();
        let _ = rate;
        None
    }
}

/// Frequencies the OS and the CPU report, in Hz (each None when not available).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sources {
    /// CPUID leaf 0x16 EAX: base (nominal) frequency.
    pub cpuid_base_hz: Option<f64>,
    /// CPUID leaf 0x16 EBX: maximum (turbo) frequency.
    pub cpuid_max_hz: Option<f64>,
    /// CPUID leaf 0x15: TSC frequency from the crystal and the TSC/crystal ratio.
    pub cpuid_tsc_hz: Option<f64>,
    /// Hypervisor leaf 0x40000010 EAX: TSC frequency the hypervisor gives the guest.
    pub hypervisor_tsc_hz: Option<f64>,
    /// The time-stamp counter's rate measured against the monotonic clock (invariant TSC only).
    pub tsc_hz: Option<f64>,
    /// /proc/cpuinfo "cpu MHz" of the first processor.
    pub cpuinfo_hz: Option<f64>,
    /// sysfs cpufreq of cpu0: base_frequency, cpuinfo_max_freq, cpuinfo_min_freq, scaling_cur_freq.
    pub cpufreq_base_hz: Option<f64>,
    pub cpufreq_max_hz: Option<f64>,
    pub cpufreq_min_hz: Option<f64>,
    pub cpufreq_cur_hz: Option<f64>,
    /// Vendor string ("GenuineIntel", "AuthenticAMD"; TSC runs at the nominal clock on both).
    pub vendor: Option<String>,
}

impl Sources {
    /// Each available source with its name, in a stable order.
    pub fn named(&self) -> Vec<(&'static str, f64)> {
        [
            ("cpuid_0x16_base", self.cpuid_base_hz),
            ("cpuid_0x16_max", self.cpuid_max_hz),
            ("cpuid_0x15_tsc", self.cpuid_tsc_hz),
            ("hypervisor_tsc", self.hypervisor_tsc_hz),
            ("tsc_measured", self.tsc_hz),
            ("proc_cpuinfo_mhz", self.cpuinfo_hz),
            ("cpufreq_base", self.cpufreq_base_hz),
            ("cpufreq_max", self.cpufreq_max_hz),
            ("cpufreq_min", self.cpufreq_min_hz),
            ("cpufreq_cur", self.cpufreq_cur_hz),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.filter(|v| v.is_finite() && *v > 0.0).map(|v| (k, v)))
        .collect()
    }
}

/// How the measured clock compares with the reported ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Between the nominal frequency (less 10 %, or cpufreq's minimum) and the top of the turbo
    /// range (plus 5 %).
    Agrees,
    /// Above the top of the range: the instrument is wrong (a folded chain) or the source is.
    AboveRange,
    /// Below the range: throttled, a busy host stealing the vCPU, or a power-saving governor.
    BelowRange,
    /// No reported frequency to compare with.
    NoReference,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::AboveRange => "above the reported range",
            Verdict::BelowRange => "below the reported range",
            Verdict::NoReference => "no reported frequency",
        }
    }
}

/// The cross-check's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub verdict: Verdict,
    /// Nominal frequency and where it came from.
    pub nominal: Option<(&'static str, f64)>,
    /// The accepted range [low, high] in Hz and where its top came from (None: not reported;
    /// the top is then twice the nominal, the widest turbo range of current parts).
    pub range_hz: Option<[f64; 2]>,
    pub top_source: Option<&'static str>,
    /// measured / source - 1 for every source.
    pub relative: Vec<(&'static str, f64)>,
}

/// Compare a measured clock with the reported frequencies (pure).
pub fn cross_check(measured_hz: f64, s: &Sources) -> Check {
    let nominal = [
        ("cpuid_0x16_base", s.cpuid_base_hz),
        ("cpufreq_base", s.cpufreq_base_hz),
        ("tsc_measured", s.tsc_hz),
        ("cpuid_0x15_tsc", s.cpuid_tsc_hz),
        ("hypervisor_tsc", s.hypervisor_tsc_hz),
        ("proc_cpuinfo_mhz", s.cpuinfo_hz),
        ("cpufreq_max", s.cpufreq_max_hz),
    ]
    .into_iter()
    .find_map(|(k, v)| v.filter(|v| v.is_finite() && *v > 0.0).map(|v| (k, v)));
    let relative = s.named().into_iter().map(|(k, v)| (k, measured_hz / v - 1.0)).collect();
    let Some((_, nom)) = nominal else {
        return Check { verdict: Verdict::NoReference, nominal, range_hz: None, top_source: None, relative };
    };
    let top = [("cpuid_0x16_max", s.cpuid_max_hz), ("cpufreq_max", s.cpufreq_max_hz)]
        .into_iter()
        .find_map(|(k, v)| v.filter(|v| v.is_finite() && *v >= nom).map(|v| (k, v)));
    let low = match s.cpufreq_min_hz {
        Some(m) if m > 0.0 => (0.9 * nom).min(m),
        _ => 0.9 * nom,
    };
    let high = 1.05 * top.map(|t| t.1).unwrap_or(2.0 * nom);
    let verdict = if measured_hz > high {
        Verdict::AboveRange
    } else if measured_hz < low {
        Verdict::BelowRange
    } else {
        Verdict::Agrees
    };
    Check { verdict, nominal, range_hz: Some([low, high]), top_source: top.map(|t| t.0), relative }
}

/// What the witness chain says about the instrument (for the details and the method text).
pub fn witness_note(m: &Measured) -> String {
    let ratio = m.witness_hz() / m.hz;
    if (0.9..=1.1).contains(&ratio) {
        format!("{} agrees within {:+.1} %", m.witness_method, (ratio - 1.0) * 100.0)
    } else {
        format!(
            "{} reads {:.2} GHz, {:.2}x the primary chain: that chain is folded or its latency differs here, so it is not used",
            m.witness_method,
            m.witness_hz() / 1e9,
            ratio
        )
    }
}

/// Measure until the clock is not below `low_hz` (a shared host's quiet moment), at most
/// `rounds` times 50 ms apart; the fastest measurement wins.
pub fn measure_settled(low_hz: impl Fn(f64) -> bool, rounds: usize) -> Option<Measured> {
    let mut best: Option<Measured> = None;
    for _ in 0..rounds.max(1) {
        if let Some(m) = measure() {
            if best.as_ref().is_none_or(|b| m.hz > b.hz) {
                best = Some(m);
            }
        }
        match &best {
            Some(b) if !low_hz(b.hz) => break,
            _ => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    best
}

/// Every frequency source of the running host for the clock cross-check (`tsc_hz`: the TSC rate
/// measured against the monotonic clock, when the TSC is invariant).
pub fn host_sources(tsc_hz: Option<f64>, id: &crate::cpuid::Report) -> Sources {
    let [base, max, min, cur] = sysinfo::cpufreq_at(std::path::Path::new("/"), 0);
    Sources {
        cpuid_base_hz: id.base_hz,
        cpuid_max_hz: id.max_hz,
        cpuid_tsc_hz: id.tsc_hz,
        hypervisor_tsc_hz: id.hypervisor_tsc_hz,
        tsc_hz,
        cpuinfo_hz: sysinfo::cpuinfo_field("cpu MHz").and_then(|v| v.parse::<f64>().ok()).map(|m| m * 1e6),
        cpufreq_base_hz: base,
        cpufreq_max_hz: max,
        cpufreq_min_hz: min,
        cpufreq_cur_hz: cur,
        vendor: id.vendor.clone().or_else(|| sysinfo::cpuinfo_field("vendor_id")),
    }
}

#[cfg(test)]
mod tests;
