//! `l2.far_copy_ways`: how many ways of a set in an SM's near L2 partition hold copies of lines
//! homed in the far partition (docs/TRUST.md; an extension beyond seed 000, which has one L2). On the
//! H200 one of three eviction-set searches once reduced to 8 lines where the near lines' sets
//! take 17; this search asks whether far copies thrash in fewer ways than the L2 has (on the
//! H200 on 2026-12-01 23:08 they did not: 16; notes/removed-results/ lists that run). The lines that miss the near
//! partition on every lap but are served by the far one (`l2ways::MissingLines::far`) are reduced
//! by the same threshold group testing (Vila, Köpf, Morales, S&P 2019) with the near-L2 threshold,
//! so a hop served by the far partition counts as a miss; the minimal set has `copy ways + 1`
//! lines. Equal to `l2.ways` when copies share the near sets' ways without a limit.

use crate::evset::{check_minimal, reduce_groups, Oracle};
use crate::l1::ways_sets::analyze_ways;
use crate::l2::ways::{flushing, L2Evset, MAX_CHASES, MINIMAL_CHECKS, MIN_MISSING};
use crate::measure::Meter;
use memscope_core::{CachePath, ProbeError};

/// What the far-copy search found: the ways, or why not, with the search's own record.
#[derive(Debug, Clone, PartialEq)]
pub struct FarCopies {
    pub ways: Result<u64, String>,
    /// Far-served lines it started from, chases it took.
    pub pool_lines: usize,
    pub chases: u64,
}

/// Reduce the far-served missing lines of `e`'s scan to a minimal eviction set of far copies.
/// `Ok(None)`: no far partition level (one partition, or the far level too close to DRAM).
pub fn far_copy_ways(m: &mut Meter<'_>, e: &L2Evset) -> Result<Option<FarCopies>, ProbeError> {
    if e.split_ns.is_none() {
        return Ok(None);
    }
    let c0 = m.chases;
    let oracle = Oracle { path: CachePath::L1Bypass, levels: e.levels, threshold: 0.5 };
    // The first scan whose far-served lines are enough and thrash by themselves (the smallest
    // pool: the union of the over-full copy sets at that size).
    let mut pool_lines = 0;
    let mut chosen = None;
    for lines in e.far_lines.iter().filter(|l| l.len() >= MIN_MISSING) {
        pool_lines = lines.len();
        if flushing(m, |m| oracle.thrashes(m, lines))? {
            chosen = Some(lines.clone());
            break;
        }
    }
    let record = |m: &Meter<'_>, pool_lines, ways| FarCopies { ways, pool_lines, chases: m.chases - c0 };
    let Some(mut lines) = chosen else {
        let why = if pool_lines == 0 {
            format!("no scan had {MIN_MISSING} far-served missing lines")
        } else {
            "the far-served missing lines of no scan thrash by themselves: their copies were evicted by near-homed lines of the same sets, so the copies share the near sets' ways and no separate limit shows".to_string()
        };
        return Ok(Some(record(m, pool_lines, Err(why))));
    };
    pool_lines = lines.len();
    m.shuffle(&mut lines);
    let reduction = match flushing(m, |m| reduce_groups(m, &oracle, &lines, MAX_CHASES)) {
        Ok(r) => r,
        Err(ProbeError::Failed(why)) => return Ok(Some(record(m, pool_lines, Err(why)))),
        Err(err) => return Err(err),
    };
    let mut ways = Err(String::new());
    for _ in 0..MINIMAL_CHECKS {
        let (full, fit) = flushing(m, |m| check_minimal(m, &oracle, &reduction.set))?;
        ways = analyze_ways(reduction.set.len(), full, fit);
        if ways.is_ok() {
            break;
        }
    }
    let ways = ways.map_err(|why| format!("{why} (in each of {MINIMAL_CHECKS} checks)"));
    Ok(Some(record(m, pool_lines, ways)))
}

impl FarCopies {
    /// The `l2.far_copy_ways` finding: the count, or undetermined with the reason.
    pub fn finding(&self) -> memscope_core::Finding {
        use memscope_core::{Confidence, Finding};
        let method = "minimal eviction set of the lines that missed the near L2 partition on every lap but were served by the far one (group testing, near-L2 threshold)";
        let search = format!("search: {} far-served lines, {} chases", self.pool_lines, self.chases);
        match &self.ways {
            // Low confidence: on the H200 (2026-12-01) it read 16 in three full runs and 7 when
            // l2ways ran alone; what sets the copies' structure apart is not known.
            Ok(w) => Finding::integer(*w, "count", method, Confidence::Low).with_note(&format!(
                "{search}; the sets of the near partition kept at most this many copies of far-homed lines in this search (equal to l2.ways: no limit seen); on the H200 this read 16 in full runs and 7 with l2ways alone (results/h200/repeatability): state-dependent, cause unknown"
            )),
            Err(why) => Finding::undetermined("count", method, &format!("{why}; {search}")),
        }
    }
}
