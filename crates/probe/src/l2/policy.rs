//! `l2policy`: the L2 replacement policy by its signature (seed 004: each line
//! carries an RRPV, new lines 1, a hit sets 0, the victim is the least recently used line among
//! RRPV 2, else every line ages and the scan repeats; its footnote 5 found it by filling sets
//! with known lines and counting the fills before the original line missed). On a minimal
//! eviction set `e0..ew` (`ways + 1` lines of one set, from `l2ways`), each test is one cold lap
//! after a flush whose last hop re-reads `e0` (another word of its sector, so the chase visits no
//! word twice):
//!
//! - control `e0 e1 .. ew | e0`: every policy evicts `e0` (the oldest of `ways + 1` lines).
//! - recency `e0 .. e(w-1) e0 ew | e0`: the re-read of `e0` protects it under LRU and RRIP
//!   (`e1` goes), not under FIFO (insertion order: `e0` goes).
//! - scan `e0 e0 e1 .. ew | e0`: `e0`, hit once, then `ways` new lines. LRU and FIFO evict `e0`;
//!   the RRPV policy keeps it (the hit set it to 0, the one aging leaves it at 1 while the new
//!   lines reach 2).
//!
//! Each test runs `TRIALS` times, cycling through the rotations of the set (each member in turn
//! as `e0`), and a verdict needs at least 80% of the trials to agree (a timing outlier on the
//! probe hop turns one hit into a "miss").

use crate::l2::pool::pool_hint;
use crate::l2::ways::{find_l2_evset, BUFFER_CAPACITIES, FALLBACK_LINE_BYTES};
use crate::measure::{earlier_f64, earlier_u64, gpu_applicability, Levels, Meter};
use memscope_core::keys;
use memscope_core::{
    Applicability, CachePath, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo,
};

/// Cold laps per test.
pub const TRIALS: usize = 16;

/// The three tests of the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    Control,
    Recency,
    Scan,
}

/// Pure: the chase of one test on a set `e` (`e[0]` is the probed line), ending with the probe.
pub fn sequence(test: Test, e: &[u64]) -> Vec<u64> {
    let (e0, rest) = (e[0], &e[1..]);
    let w = rest.len();
    let mut s = vec![e0];
    match test {
        Test::Control => s.extend_from_slice(rest),
        Test::Recency => {
            s.extend_from_slice(&rest[..w - 1]);
            s.push(e0 + 8);
            s.push(rest[w - 1]);
        }
        Test::Scan => {
            s.push(e0 + 8);
            s.extend_from_slice(rest);
        }
    }
    s.push(e0 + 16);
    s
}

/// Pure: the policy from the fraction of trials whose probe hop hit in each test.
pub fn analyze_policy(control: f64, recency: f64, scan: f64) -> Result<&'static str, String> {
    let yes = |f: f64| f >= 0.8;
    let no = |f: f64| f <= 0.2;
    let show = format!("probe hit fractions: control {control:.2}, recency {recency:.2}, scan {scan:.2}");
    if !no(control) {
        return Err(format!("the control kept e0 after ways + 1 lines: not an eviction set in a cold cache; {show}"));
    }
    match (yes(recency), no(recency), yes(scan), no(scan)) {
        (true, _, _, true) => Ok("lru"),
        (_, true, _, true) => Ok("fifo"),
        (true, _, true, _) => Ok("rrip"),
        _ => Err(format!("no known policy fits: {show}")),
    }
}

/// Run the three tests `TRIALS` times each over the rotations of `set`; returns the fraction of
/// trials whose probe hop hit.
pub fn measure_policy(m: &mut Meter<'_>, levels: &Levels, set: &[u64]) -> Result<[f64; 3], ProbeError> {
    let mut out = [0.0; 3];
    for (k, test) in [Test::Control, Test::Recency, Test::Scan].into_iter().enumerate() {
        let mut hits = 0;
        for r in 0..TRIALS {
            let mut e = set.to_vec();
            e.rotate_left(r % set.len());
            let t = m.cold_lap(&sequence(test, &e), CachePath::L1Bypass)?;
            let h = t.per_hop_ns.ok_or_else(|| ProbeError::Failed("no per-hop times".into()))?;
            if h.last().is_some_and(|&x| x <= levels.mid()) {
                hits += 1;
            }
        }
        out[k] = hits as f64 / TRIALS as f64;
    }
    Ok(out)
}

pub struct L2PolicyProbe;

impl Probe for L2PolicyProbe {
    fn key(&self) -> &'static str {
        "l2policy"
    }
    fn description(&self) -> &'static str {
        "L2 replacement policy (lru, fifo or the RRPV policy of seed 004) from cold laps over one eviction set"
    }
    fn needs(&self) -> &'static [&'static str] {
        &["latency", "l2ways"]
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        let mut out = ProbeOutput::default();
        let method = "cold laps after a flush over one minimal L2 eviction set: control, recency and scan tests, 16 cold laps each over the set's rotations";
        let mut m = Meter::new(&mut *ctx.target, 59);
        if !m.per_hop() {
            out.finding(keys::L2_POLICY, Finding::undetermined("", method, "needs per-hop times"));
            return Ok(out);
        }
        let info = m.info.clone();
        let Some(hint) = pool_hint(&earlier, &info) else {
            let why = "needs an L2 size to scale the pool (l2.segment_capacity_bytes, l2.capacity_bytes or the driver's attribute)";
            out.finding(keys::L2_POLICY, Finding::undetermined("", method, why));
            return Ok(out);
        };
        let far_ns = earlier_f64(&earlier, keys::L2_FAR_HIT_LATENCY_NS);
        let line = earlier_u64(&earlier, keys::L1_LINE_BYTES).unwrap_or(FALLBACK_LINE_BYTES);
        let buf = m.alloc(BUFFER_CAPACITIES * hint.bytes.max(1 << 16))?;
        // The tests need a minimal eviction set of one L2 set: `ways + 1` lines when l2ways found
        // the ways. A set of another size (seen on the H200: 8 lines for 16 ways) is searched
        // again, at most three times, and never classified.
        let ways = earlier_u64(&earlier, keys::L2_WAYS);
        let mut sizes = Vec::new();
        let mut result = Err(ProbeError::Failed("no eviction set searched".into()));
        for _ in 0..3 {
            match find_l2_evset(&mut m, &buf, line, &hint, far_ns) {
                Ok(e) if ways.is_none_or(|w| e.reduction.set.len() as u64 == w + 1) => {
                    result = measure_policy(&mut m, &e.levels, &e.reduction.set).map(|f| (e, f));
                    break;
                }
                Ok(e) => {
                    sizes.push(e.reduction.set.len());
                    result = Err(ProbeError::Failed(format!(
                        "the eviction sets found had {sizes:?} lines where l2.ways = {} needs {}: not a minimal set of one L2 set",
                        ways.unwrap_or(0),
                        ways.unwrap_or(0) + 1
                    )));
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        m.target.free(buf);
        match result {
            Ok((e, [c, r, s])) => {
                let note = format!(
                    "eviction set of {} lines; {}; probe hit fractions: control {c:.2}, recency {r:.2}, scan {s:.2}; {} chases, {} hops in all",
                    e.reduction.set.len(),
                    e.levels_why,
                    m.chases,
                    m.hops
                );
                match analyze_policy(c, r, s) {
                    Ok(p) => {
                        let conf = if [c, r, s].iter().all(|&x| x == 0.0 || x == 1.0) {
                            Confidence::High
                        } else {
                            Confidence::Medium
                        };
                        out.finding(keys::L2_POLICY, Finding::text(p, method, conf).with_note(&note));
                    }
                    Err(why) => {
                        out.finding(keys::L2_POLICY, Finding::undetermined("", method, &format!("{why}; {note}")))
                    }
                }
            }
            Err(err) => out.finding(keys::L2_POLICY, Finding::undetermined("", method, &err.to_string())),
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_end_with_the_probe_and_repeat_no_word() {
        let e = [0x1000u64, 0x2000, 0x3000, 0x4000];
        for t in [Test::Control, Test::Recency, Test::Scan] {
            let s = sequence(t, &e);
            assert_eq!(*s.last().unwrap(), 0x1010);
            let mut d = s.clone();
            d.sort();
            d.dedup();
            assert_eq!(d.len(), s.len());
        }
        assert_eq!(sequence(Test::Recency, &e), vec![0x1000, 0x2000, 0x3000, 0x1008, 0x4000, 0x1010]);
        assert_eq!(sequence(Test::Scan, &e), vec![0x1000, 0x1008, 0x2000, 0x3000, 0x4000, 0x1010]);
    }

    #[test]
    fn policies_of_simulated_l2s() {
        use crate::l2::ways::testing::{capacity, small_l2};
        use memscope_sim::hierarchy::Replacement;
        for (policy, want, slices, ways, noisy) in [
            (Replacement::Rrip, "rrip", 2, 16, true),
            (Replacement::Lru, "lru", 1, 8, true),
            (Replacement::Fifo, "fifo", 4, 4, false),
            (Replacement::Rrip, "rrip", 4, 4, false),
            (Replacement::Fifo, "fifo", 1, 12, true),
        ] {
            let mut t = small_l2(policy, slices, 256, ways, noisy);
            let cap = capacity(&t);
            let mut m = Meter::new(&mut t, 11);
            let buf = m.alloc(BUFFER_CAPACITIES * cap).unwrap();
            let hint = crate::l2::pool::PoolHint { bytes: cap, source: "given", measured: true };
            let e = find_l2_evset(&mut m, &buf, 128, &hint, None).unwrap();
            let [c, r, s] = measure_policy(&mut m, &e.levels, &e.reduction.set).unwrap();
            assert_eq!(analyze_policy(c, r, s), Ok(want), "{policy:?} {slices} slices {ways} ways");
        }
    }

    #[test]
    fn policy_signatures() {
        assert_eq!(analyze_policy(0.0, 1.0, 0.0), Ok("lru"));
        assert_eq!(analyze_policy(0.0625, 0.875, 0.0625), Ok("lru"), "one outlier per test is tolerated");
        assert_eq!(analyze_policy(0.0, 0.0, 0.0), Ok("fifo"));
        assert_eq!(analyze_policy(0.0, 1.0, 1.0), Ok("rrip"));
        assert!(analyze_policy(1.0, 1.0, 1.0).is_err());
        assert!(analyze_policy(0.0, 0.5, 0.0).is_err());
        assert!(analyze_policy(0.0, 0.0, 1.0).is_err());
    }
}
