//! `line`: L1 line and sector size by timing. Line: take a minimal L1 eviction set (seed 000
//! footnote 2) and move one member `e` by `d` bytes: while `e + d` stays in `e`'s line the set
//! still thrashes with `e + d` in `e`'s place, and `e + d` beside the other members minus one
//! still fits (it adds no line); the first `d` that breaks this is the line size. Sector: one
//! cold lap (after a flush) over a small region at stride `s` misses once per fetched unit, so
//! the miss fraction is `s / sector` below the sector size and 1 from it on (seed 000 footnotes 1
//! and 5: a miss fetches only the sectors asked for).

use crate::evset::{find_l1_evset, L1Evset};
use crate::measure::{gpu_applicability, Meter};
use memscope_core::keys;
use memscope_core::{
    Applicability, CachePath, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo,
};

pub struct LineProbe;

/// Pool stride for line discovery: at least any plausible line size.
pub const POOL_STRIDE: u64 = 512;

/// Outcomes by offset for a note: "64 B: same line, 128 B: another line".
pub fn outcomes_text(outcomes: &[(u64, bool)], yes: &str, no: &str) -> String {
    outcomes.iter().map(|(d, o)| format!("{d} B: {}", if *o { yes } else { no })).collect::<Vec<_>>().join(", ")
}

/// Pure: the line size from per-offset outcomes `(d, same_line)` in ascending `d`: the first `d`
/// that is not in the same line, if every smaller one was.
pub fn analyze_line(outcomes: &[(u64, bool)]) -> Option<u64> {
    for (i, &(d, same)) in outcomes.iter().enumerate() {
        if !same {
            return outcomes[..i].iter().all(|o| o.1).then_some(d);
        }
    }
    None
}

/// Pure: the sector size from cold-lap miss fractions `(stride, fraction)` in ascending stride:
/// the smallest stride whose fraction is ~1, checked against `stride / fraction` below it.
pub fn analyze_sector(fractions: &[(u64, f64)]) -> Option<u64> {
    let first_full = fractions.iter().position(|&(_, f)| f > 0.9)?;
    let sector = fractions[first_full].0;
    // Below it the fraction must be stride / sector (within 20%).
    let consistent = fractions[..first_full].iter().all(|&(s, f)| {
        let expect = s as f64 / sector as f64;
        (f - expect).abs() <= 0.2 * expect + 0.02
    });
    consistent.then_some(sector)
}

/// Find the line size with an eviction set built at `POOL_STRIDE`; returns the outcomes too.
pub fn measure_line(m: &mut Meter<'_>, e: &L1Evset) -> Result<Vec<(u64, bool)>, ProbeError> {
    let set = &e.reduction.set;
    let mut outcomes = Vec::new();
    let mut d = 8u64;
    while d < POOL_STRIDE {
        let moved = set[0] + d;
        let mut t1: Vec<u64> = set.clone();
        t1[0] = moved;
        let mut t2: Vec<u64> = set.clone();
        t2[1] = moved;
        let a = e.oracle.thrashes(m, &t1)?;
        let b = e.oracle.thrashes(m, &t2)?;
        let same_line = a && !b;
        outcomes.push((d, same_line));
        if !same_line {
            break;
        }
        d *= 2;
    }
    Ok(outcomes)
}

impl Probe for LineProbe {
    fn key(&self) -> &'static str {
        "line"
    }
    fn description(&self) -> &'static str {
        "L1 line size (moving one member of an eviction set) and sector size (cold-lap stride sweep)"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let mut m = Meter::new(&mut *ctx.target, 21);
        let mut out = ProbeOutput::default();
        let pool_lines = 4096usize;
        let buf = m.alloc(((pool_lines as u64) << crate::evset::POOL_DOUBLINGS) * POOL_STRIDE + (1 << 16))?;
        let e = find_l1_evset(&mut m, buf.base, POOL_STRIDE, pool_lines)?;
        let outcomes = measure_line(&mut m, &e)?;
        let line = analyze_line(&outcomes);
        let method = "move one member of a minimal L1 eviction set by d bytes; same line while it still evicts in its own place and adds no line";
        match line {
            Some(l) => out.finding(keys::L1_LINE_BYTES, Finding::integer(l, "bytes", method, Confidence::High)),
            None => out.finding(
                keys::L1_LINE_BYTES,
                Finding::undetermined(
                    "bytes",
                    method,
                    &format!(
                        "inconsistent outcomes ({}; or the line is {POOL_STRIDE} bytes or more)",
                        outcomes_text(&outcomes, "same line", "another line")
                    ),
                ),
            ),
        }

        // Sector: cold laps over 64 lines' worth of bytes at strides 8 .. line.
        let line_b = line.unwrap_or(128);
        let region = 64 * line_b;
        let levels = e.levels;
        let mut fractions = Vec::new();
        let mut s = 8u64;
        while s <= line_b {
            let addrs: Vec<u64> = (0..region / s).map(|k| buf.base + k * s).collect();
            let t = m.cold_lap(&addrs, CachePath::L1Cached)?;
            let frac = match t.fraction_in(levels.hit_ns + 0.5 * (levels.miss_ns - levels.hit_ns), f64::INFINITY) {
                Some(f) => f,
                None => ((t.mean_ns() - levels.hit_ns) / (levels.miss_ns - levels.hit_ns)).clamp(0.0, 1.0),
            };
            fractions.push((s, frac));
            s *= 2;
        }
        let smethod = "one cold lap after a flush at strides 8 B .. line: miss fraction = stride / fetch unit";
        match (analyze_sector(&fractions), line) {
            (Some(sec), Some(_)) => out.finding(
                keys::L1_SECTOR_BYTES,
                Finding::integer(sec, "bytes", smethod, Confidence::High).with_note(&if sec == line_b {
                    format!("the fetch granularity is the line: a miss fetches the whole {line_b}-byte line")
                } else {
                    format!(
                        "the fetch granularity is the sector: a miss fetches only the {sec}-byte sector asked for of the {line_b}-byte line"
                    )
                }),
            ),
            _ => out.finding(
                keys::L1_SECTOR_BYTES,
                Finding::undetermined("bytes", smethod, &format!(
                    "miss fractions ({}) fit no fetch unit",
                    fractions.iter().map(|(d, f)| format!("{d} B: {}", memscope_core::text::sig(*f, 3))).collect::<Vec<_>>().join(", ")
                )),
            ),
        }
        m.target.free(buf);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_sector_from_outcomes() {
        assert_eq!(analyze_line(&[(8, true), (16, true), (32, true), (64, true), (128, false)]), Some(128));
        assert_eq!(analyze_line(&[(8, true), (16, false)]), Some(16));
        assert_eq!(analyze_line(&[(8, true), (16, true)]), None);
        assert_eq!(analyze_sector(&[(8, 0.25), (16, 0.5), (32, 1.0), (64, 1.0), (128, 1.0)]), Some(32));
        assert_eq!(analyze_sector(&[(8, 0.0625), (16, 0.125), (32, 0.25), (64, 0.5), (128, 1.0)]), Some(128));
        assert_eq!(analyze_sector(&[(8, 0.6), (16, 0.5), (32, 1.0)]), None);
    }
}
