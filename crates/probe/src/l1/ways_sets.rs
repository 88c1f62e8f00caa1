//! `evset`, `ways`, `sets`: L1 eviction sets by threshold group testing (Vila, Köpf, Morales,
//! S&P 2019; seed 000 footnote 2), associativity from a minimal eviction set (`ways` lines fit,
//! `ways + 1` thrash; the 4090's 16 / 17 of footnote 11 for L2), and the number of sets from the
//! rank of the recovered index function (cross-checked with capacity / (ways * line)).

use crate::evset::{check_minimal, find_l1_evset, page_bound, page_bound_reason, L1Evset};
use crate::l1::line::{analyze_line, measure_line, POOL_STRIDE};
use crate::measure::{earlier_u64, gpu_applicability, Meter};
use memscope_core::keys;
use memscope_core::{
    Applicability, Buffer, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo,
};
use std::collections::BTreeMap;

/// The L1 line size from an earlier finding, or measured now.
pub fn line_bytes(m: &mut Meter<'_>, earlier: &BTreeMap<String, Finding>) -> Result<u64, ProbeError> {
    if let Some(l) = earlier_u64(earlier, keys::L1_LINE_BYTES) {
        return Ok(l);
    }
    let buf = m.alloc((4096 << crate::evset::POOL_DOUBLINGS) * POOL_STRIDE + (1 << 16))?;
    let e = find_l1_evset(m, buf.base, POOL_STRIDE, 4096)?;
    let outcomes = measure_line(m, &e)?;
    m.target.free(buf);
    analyze_line(&outcomes).ok_or_else(|| {
        ProbeError::Failed(format!(
            "line size undetermined: {}",
            crate::l1::line::outcomes_text(&outcomes, "same line", "another line")
        ))
    })
}

/// Candidate pool size: 4096 lines, or four L1 capacities when that is more.
pub fn pool_lines(earlier: &BTreeMap<String, Finding>, line: u64) -> usize {
    let cap = earlier_u64(earlier, keys::L1_CAPACITY_BYTES).unwrap_or(0);
    (4096u64).max(4 * cap / line.max(1)) as usize
}

/// An L1 eviction set from a fresh pool; returns it with the buffer holding the pool.
pub fn fresh_evset(
    m: &mut Meter<'_>,
    earlier: &BTreeMap<String, Finding>,
) -> Result<(L1Evset, Buffer, u64), ProbeError> {
    let line = line_bytes(m, earlier)?;
    let n = pool_lines(earlier, line);
    let buf = m.alloc(((n as u64) << crate::evset::POOL_DOUBLINGS) * line + (1 << 16))?;
    let e = find_l1_evset(m, buf.base, line, n)?;
    Ok((e, buf, line))
}

pub struct EvsetProbe;

impl Probe for EvsetProbe {
    fn key(&self) -> &'static str {
        "evset"
    }
    fn description(&self) -> &'static str {
        "L1 eviction set by threshold group testing with backtracking (Vila et al. 2019); counts the chases"
    }
    fn needs(&self) -> &'static [&'static str] {
        &["line", "latency"]
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        let mut m = Meter::new(&mut *ctx.target, 31);
        let (e, buf, line) = fresh_evset(&mut m, &earlier)?;
        m.target.free(buf);
        let mut out = ProbeOutput::default();
        let method = format!(
            "threshold group testing over a pool of {} lines at {line}-byte stride; groups double when none can go; {} backtracks",
            e.pool_lines, e.reduction.backtracks
        );
        out.finding(keys::EVSET_CHASES, Finding::integer(e.reduction.chases, "count", &method, Confidence::High));
        out.finding(keys::EVSET_POOL_LINES, Finding::integer(e.pool_lines as u64, "count", &method, Confidence::High));
        out.finding(
            keys::EVSET_LINES,
            Finding::integer(e.reduction.set.len() as u64, "count", &method, Confidence::High),
        );
        Ok(out)
    }
}

/// Pure: associativity from a minimal-set check (`thrashes`, members whose removal made it fit).
pub fn analyze_ways(set_len: usize, thrashes: bool, fit_after_drop: usize) -> Result<u64, String> {
    if !thrashes {
        return Err("the eviction set stopped thrashing on re-test".into());
    }
    if fit_after_drop != set_len {
        return Err(format!("only {fit_after_drop} of {set_len} single removals made the set fit: not minimal"));
    }
    if set_len < 2 {
        return Err("a one-line set cannot thrash a cache".into());
    }
    Ok(set_len as u64 - 1)
}

pub struct WaysProbe;

impl Probe for WaysProbe {
    fn key(&self) -> &'static str {
        "ways"
    }
    fn description(&self) -> &'static str {
        "associativity from a minimal eviction set: k lines of one set fit, k+1 thrash"
    }
    fn needs(&self) -> &'static [&'static str] {
        &["evset"]
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        let mut m = Meter::new(&mut *ctx.target, 41);
        let (e, buf, line) = fresh_evset(&mut m, &earlier)?;
        let (full, fit) = check_minimal(&mut m, &e.oracle, &e.reduction.set)?;
        let pages = page_bound(&mut m, &e.oracle, &e.reduction.set, line)?;
        m.target.free(buf);
        let mut out = ProbeOutput::default();
        let method = "minimal L1 eviction set (group testing), re-tested whole and with each member dropped";
        let ways = match pages {
            Some(bits) => Err(page_bound_reason(e.reduction.set.len(), &bits)),
            None => analyze_ways(e.reduction.set.len(), full, fit),
        };
        match ways {
            Ok(w) => out.finding(keys::L1_WAYS, Finding::integer(w, "count", method, Confidence::High)),
            Err(why) => out.finding(keys::L1_WAYS, Finding::undetermined("count", method, &why)),
        }
        Ok(out)
    }
}

/// Pure: sets from the index rank and cross-check with capacity / (ways * line).
pub fn analyze_sets(
    rank: Option<usize>,
    capacity: Option<u64>,
    ways: Option<u64>,
    line: Option<u64>,
) -> (Option<u64>, String) {
    let from_cap = match (capacity, ways, line) {
        (Some(c), Some(w), Some(l)) if w > 0 && l > 0 && c % (w * l) == 0 => Some(c / (w * l)),
        _ => None,
    };
    match (rank, from_cap) {
        (Some(r), Some(c)) if 1u64 << r == c => (Some(c), "2^rank of the index masks = capacity / (ways * line)".into()),
        (Some(r), Some(c)) => (
            Some(1u64 << r),
            format!("2^rank of the index masks ({}) differs from capacity / (ways * line) = {c}: the capacity knee of a hashed index is only a lower bound", 1u64 << r),
        ),
        (Some(r), None) => (Some(1u64 << r), "2^rank of the index masks".into()),
        (None, Some(c)) => (Some(c), "capacity / (ways * line) (no index function known)".into()),
        (None, None) => (None, "neither index masks nor capacity, ways and line are known".into()),
    }
}

pub struct SetsProbe;

impl Probe for SetsProbe {
    fn key(&self) -> &'static str {
        "sets"
    }
    fn description(&self) -> &'static str {
        "number of L1 sets: 2^rank of the index function, cross-checked with capacity / (ways * line)"
    }
    fn needs(&self) -> &'static [&'static str] {
        &["latency", "ways"]
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let e = ctx.earlier;
        let rank = e.get(keys::L1_INDEX_MASKS).and_then(|f| f.value.as_array()).map(|a| a.len());
        let (sets, how) = analyze_sets(
            rank,
            earlier_u64(e, keys::L1_CAPACITY_BYTES),
            earlier_u64(e, keys::L1_WAYS),
            earlier_u64(e, keys::L1_LINE_BYTES),
        );
        let mut out = ProbeOutput::default();
        match sets {
            Some(s) => {
                let conf = if how.contains(" = ") { Confidence::High } else { Confidence::Medium };
                out.finding(keys::L1_SETS, Finding::integer(s, "count", &how, conf));
            }
            None => out.finding(keys::L1_SETS, Finding::undetermined("count", "from earlier findings", &how)),
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ways_and_sets_analysis() {
        assert_eq!(analyze_ways(5, true, 5), Ok(4));
        assert!(analyze_ways(5, false, 5).is_err());
        assert!(analyze_ways(6, true, 5).is_err());
        assert_eq!(analyze_sets(Some(8), Some(131072), Some(4), Some(128)).0, Some(256));
        assert_eq!(analyze_sets(Some(8), Some(65536), Some(4), Some(128)).0, Some(256));
        assert_eq!(analyze_sets(None, Some(65536), Some(4), Some(128)).0, Some(128));
        assert_eq!(analyze_sets(None, None, Some(4), Some(128)).0, None);
    }
}
