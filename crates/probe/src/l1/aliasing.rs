//! `indexing`: virtual or physical indexing of L1 and L2 by mapping one physical allocation at
//! two virtual addresses (seed 000 footnotes 3 and 6). L1: in a minimal eviction set built inside
//! one mapping, swap a member for the same physical line seen through the other mapping; a
//! physically indexed and tagged L1 sees the same line (the set still thrashes, for every member),
//! a virtually indexed one sees a line of another set (the conflict breaks). L2: chase every line
//! of a physical footprint of 3/4 of the L2 capacity through both mappings; a physically tagged
//! L2 holds it like the footprint chased once, a virtually tagged one like a footprint twice as
//! large (which exceeds the L2).

use crate::evset::{find_l1_evset, page_bound, page_bound_reason};
use crate::l1::ways_sets::{line_bytes, pool_lines};
use crate::latency::dense_lines;
use crate::measure::{earlier_u64, gpu_applicability, Meter};
use memscope_core::keys;
use memscope_core::{
    Applicability, CachePath, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo,
};
use std::collections::BTreeMap;

pub struct IndexingProbe;

/// Pure: L1 verdict from the swap outcomes: (kept the conflict as the same line would, evidence of
/// a virtual index or tag: a break that repeated on a re-test, or an alias that occupies a slot of
/// its own beside its twin, seed 000 footnote 3). A physically indexed and tagged L1 can never break the conflict (the alias is
/// the same line); a virtually indexed one keeps it only when the alias happens to land in the
/// same set, which depends on each member's address bits.
pub fn analyze_l1(swaps: &[(bool, bool)]) -> Result<&'static str, String> {
    if swaps.is_empty() {
        return Err("no swap was measured".into());
    }
    let kept = swaps.iter().filter(|s| s.0).count();
    let confirmed_breaks = swaps.iter().filter(|s| s.1).count();
    if kept == swaps.len() {
        Ok("physical")
    } else if confirmed_breaks >= 1 {
        Ok("virtual")
    } else {
        Err(format!(
            "{} of {} alias swaps broke the conflict once but not on a re-test",
            swaps.len() - kept,
            swaps.len()
        ))
    }
}

/// Pure: L2 verdict from mean ns per hop of the aliased chase and the two controls (the physical
/// footprint chased once; a fresh footprint of twice the size).
pub fn analyze_l2(aliased: f64, small: f64, big: f64) -> Result<&'static str, String> {
    if big - small < 0.05 * small {
        return Err(format!(
            "the doubled footprint ({big:.1} ns) is not slower than the single one ({small:.1} ns): the L2 capacity is off"
        ));
    }
    if (aliased - small).abs() < 0.25 * (big - small) {
        Ok("physical")
    } else if (aliased - big).abs() < 0.25 * (big - small) {
        Ok("virtual")
    } else {
        Err(format!("aliased {aliased:.1} ns lies between {small:.1} and {big:.1} ns"))
    }
}

impl Probe for IndexingProbe {
    fn key(&self) -> &'static str {
        "indexing"
    }
    fn description(&self) -> &'static str {
        "virtual or physical indexing of L1 and L2 by aliasing one physical allocation at two virtual addresses"
    }
    fn needs(&self) -> &'static [&'static str] {
        &["latency"]
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        if !info.aliasing_supported && info.gpu_hierarchy {
            return Applicability::Waived(
                "needs alloc_aliased (one physical allocation at two virtual addresses)".into(),
            );
        }
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        let mut m = Meter::new(&mut *ctx.target, 71);
        let mut out = ProbeOutput::default();
        let line = line_bytes(&mut m, &earlier)?;
        let n = pool_lines(&earlier, line);

        // L1: alias swaps in a minimal eviction set.
        let (a, b) = m.target.alloc_aliased(((n as u64) << crate::evset::POOL_DOUBLINGS) * line + (1 << 16))?;
        let e = find_l1_evset(&mut m, a.base, line, n)?;
        let set = e.reduction.set.clone();
        let m1 = "swap each member of a minimal L1 eviction set for its alias through a second mapping";
        // A minimal set of other than `l1.ways + 1` lines is not one L1 set: where an L1 hit
        // that misses the TLB reads as slow as an L1 miss (a physically indexed L1 translates
        // every load), a chase over more pages than the TLB holds thrashes it, and the minimal
        // "set" is the TLB's entries + 1 pages; its aliases are new pages, never the same line.
        // Without l1.ways (or with one measured on such a set): the set is no L1 set when a
        // member moved within its page keeps it thrashing and that line in place of another
        // member makes it fit, for every bit tried (`page_bound`).
        if let Some(bits) = page_bound(&mut m, &e.oracle, &set, line)? {
            m.target.free(a);
            let why = page_bound_reason(set.len(), &bits);
            out.finding(keys::L1_INDEXING, Finding::undetermined("", m1, &why));
            return self.l2_indexing(&mut m, &earlier, line, out);
        }
        if let Some(ways) = earlier_u64(&earlier, keys::L1_WAYS).filter(|&w| w + 1 != set.len() as u64) {
            m.target.free(a);
            let why = format!(
                "the minimal eviction set found has {} lines where l1.ways is {ways}: not one L1 set (a chase over more pages than the TLB holds, its L1 hits as slow as misses, thrashes the TLB instead)",
                set.len()
            );
            out.finding(keys::L1_INDEXING, Finding::undetermined("", m1, &why));
            return self.l2_indexing(&mut m, &earlier, line, out);
        }
        let mut swaps = Vec::new();
        for i in 0..set.len() {
            let mut s = set.clone();
            s[i] = set[i] - a.base + b.base;
            let kept = e.oracle.thrashes(&mut m, &s)?;
            let confirmed = !kept && !e.oracle.thrashes(&mut m, &s)?;
            // Kept: physical, or a virtual alias that happens to share the set. Tag test: the
            // member and its alias together in place of another member are one line (fits) when
            // physically tagged, two lines (thrash) when virtually tagged.
            let virtual_tag = if kept {
                let mut t = set.clone();
                t[(i + 1) % set.len()] = set[i] - a.base + b.base;
                e.oracle.thrashes(&mut m, &t)? && e.oracle.thrashes(&mut m, &t)?
            } else {
                false
            };
            swaps.push((kept && !virtual_tag, confirmed || virtual_tag));
        }
        m.target.free(a);
        match analyze_l1(&swaps) {
            Ok(v) => {
                let note = if v == "virtual" {
                    "an alias lands in another set: indexed (and so tagged) by the virtual address"
                } else {
                    "every alias keeps the conflict: the same line, so indexed and tagged physically"
                };
                out.finding(keys::L1_INDEXING, Finding::text(v, m1, Confidence::High).with_note(note))
            }
            Err(why) => out.finding(keys::L1_INDEXING, Finding::undetermined("", m1, &why)),
        }
        self.l2_indexing(&mut m, &earlier, line, out)
    }
}

impl IndexingProbe {
    /// The L2 part: `l2.indexing` added to `out`.
    fn l2_indexing(
        &self,
        m: &mut Meter<'_>,
        earlier: &BTreeMap<String, Finding>,
        line: u64,
        mut out: ProbeOutput,
    ) -> Result<ProbeOutput, ProbeError> {
        // L2: footprint of 3/4 of the capacity one SM's chase sees (the segment where measured,
        // else the L2) chased through both mappings.
        let m2 = "chase a physical footprint of 3/4 of the L2 capacity one SM sees through both mappings vs once, and vs a fresh double footprint";
        let seen = earlier_u64(earlier, keys::L2_SEGMENT_CAPACITY_BYTES)
            .or_else(|| earlier_u64(earlier, keys::L2_CAPACITY_BYTES));
        match seen.filter(|c| *c >= 4096) {
            None => out.finding(
                keys::L2_INDEXING,
                Finding::undetermined(
                    "",
                    m2,
                    "needs l2.segment_capacity_bytes or l2.capacity_bytes (run latency first)",
                ),
            ),
            Some(cap) => {
                let f = (cap * 3 / 4) / line * line;
                let (a, b) = m.target.alloc_aliased(f)?;
                let lines_a = dense_lines(m, a.base, line, f / line);
                // The alias view uses the next 8-byte word of each line: the same physical line,
                // but a word of its own for the chase's next pointer (a word holds one pointer).
                let lines_b: Vec<u64> = lines_a.iter().map(|x| x - a.base + b.base + 8).collect();
                let mut both = lines_a.clone();
                both.extend_from_slice(&lines_b);
                let aliased = m.chase(&both, CachePath::L1Bypass, 1, 0, 1)?.mean_ns();
                let small = m.chase(&lines_a, CachePath::L1Bypass, 2, 0, 1)?.mean_ns();
                m.target.free(a);
                let big_buf = m.alloc(2 * f)?;
                let big_lines = dense_lines(m, big_buf.base, line, 2 * f / line);
                let big = m.chase(&big_lines, CachePath::L1Bypass, 1, 0, 1)?.mean_ns();
                m.target.free(big_buf);
                match analyze_l2(aliased, small, big) {
                    Ok(v) => out.finding(
                        keys::L2_INDEXING,
                        Finding::text(v, m2, Confidence::High).with_note(&format!(
                            "mean ns per hop: aliased {aliased:.1}, once {small:.1}, double {big:.1}"
                        )),
                    ),
                    Err(why) => out.finding(keys::L2_INDEXING, Finding::undetermined("", m2, &why)),
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(analyze_l1(&[(true, false), (true, false), (true, false)]), Ok("physical"));
        assert_eq!(analyze_l1(&[(false, true), (false, true), (true, false)]), Ok("virtual"));
        assert_eq!(analyze_l1(&[(true, false), (true, false), (false, true)]), Ok("virtual"));
        assert!(analyze_l1(&[(true, false), (true, false), (false, false)]).is_err());
        assert_eq!(analyze_l2(130.0, 128.0, 200.0), Ok("physical"));
        assert_eq!(analyze_l2(198.0, 128.0, 200.0), Ok("virtual"));
        assert!(analyze_l2(165.0, 128.0, 200.0).is_err());
        assert!(analyze_l2(128.0, 128.0, 129.0).is_err());
    }
}
