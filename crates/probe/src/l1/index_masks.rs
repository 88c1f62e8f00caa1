//! `index`: the L1 set-index function as XOR masks, recovered as a GF(2) basis (seed 000 footnote
//! 4 and appendix "The L1 set function"). With a minimal eviction set {r} + Y (Y: `ways` lines of
//! r's set), an address x is congruent with r exactly when Y + {x} thrashes. Flipping one address
//! bit j at a time: the addresses r ^ 2^j ^ w for w in the span of the bits already found
//! independent lie in distinct sets, so one chase over Y plus all of them says whether bit j's
//! column is a combination of earlier columns, and a binary search (rank tests) says which: that
//! gives a kernel vector 2^j ^ w; otherwise bit j is a new independent column. The masks are the
//! annihilator of the kernel (crates/core gf2::nullspace), compared up to change of basis. Bits
//! inside a page and above it are handled alike for a virtually indexed L1; for a physically
//! indexed one only bits inside the page can be flipped by a program. Verification builds fresh
//! eviction sets from the function and predicts conflict / no conflict on unseen addresses.

use crate::evset::{find_l1_evset, page_bound, page_bound_reason, Oracle, TEST_LAPS};
use crate::l1::ways_sets::{line_bytes, pool_lines};
use crate::measure::{earlier_u64, gpu_applicability, Meter};
use memscope_core::gf2;
use memscope_core::keys;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};
use rand::Rng;

pub struct IndexProbe;

/// The recovered function.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// Kernel vectors: address differences that keep the set.
    pub kernel: Vec<u64>,
    /// Bits that were flipped (the window), as a mask.
    pub window: u64,
    /// Canonical masks (reduced row echelon form of the annihilator of the kernel in the window).
    pub masks: Vec<u64>,
}

/// Pure: masks from kernel vectors over the flipped window.
pub fn analyze(kernel: &[u64], window: u64) -> Recovered {
    let masks = gf2::rref(&gf2::nullspace(kernel, window));
    Recovered { kernel: gf2::rref(kernel), window, masks }
}

/// Whether the thrash test says x is congruent with the set of `ys` (ways lines of one set).
fn congruent_any(m: &mut Meter<'_>, o: &Oracle, ys: &[u64], xs: &[u64]) -> Result<bool, ProbeError> {
    let mut set = ys.to_vec();
    set.extend_from_slice(xs);
    o.thrashes(m, &set)
}

/// The most candidates one thrash test over `ways` congruent lines plus them can search: its
/// signal is one over-full set (`ways + 1` misses per lap), its noise the hops that are slow
/// although they hit (the oracle's floor: outliers), whose count grows with the lines chased
/// (four standard deviations: 4 sqrt(floor (1 - floor) n / laps) misses per lap over n lines).
/// The group stays where that noise is at most half the signal; without a floor, no limit. With
/// 1 % outliers and 5 ways a single test over 1029 lines sat at the noise's edge and read an
/// over-full set as fitting (an extra mask over high bits).
pub fn group_size(o: &Oracle, ways: usize) -> usize {
    let floor = o.levels.floor;
    if floor <= 0.0 {
        return usize::MAX;
    }
    let signal = (ways + 1) as f64;
    let lines = TEST_LAPS as f64 * (signal / 8.0).powi(2) / (floor * (1.0 - floor));
    (lines as usize).saturating_sub(ways).max(1)
}

/// Binary searches of a group that thrashed before it passes to the next group.
pub const SEARCHES_PER_GROUP: usize = 3;

/// Recover kernel vectors over bits `lo..hi` around reference `r` with congruent lines `ys`.
pub fn recover_kernel(
    m: &mut Meter<'_>,
    o: &Oracle,
    r: u64,
    ys: &[u64],
    lo: u32,
    hi: u32,
    progress: &dyn memscope_core::Progress,
) -> Result<Vec<u64>, ProbeError> {
    // One over-full set makes `ways + 1` misses per lap (LRU and FIFO evict every line of a
    // cyclic chase over it): a test counts as congruent from half of that, so that a few slow
    // hits among hundreds of lines (outliers above a floor measured on 8 lines) cannot send a
    // search into a half without the candidate (mutated 1199: one bit read as independent).
    let o = &Oracle { threshold: o.threshold.max(0.5 * (ys.len() + 1) as f64), ..*o };
    let mut independent: Vec<u64> = Vec::new();
    let mut span: Vec<u64> = vec![0];
    let mut kernel = Vec::new();
    for j in lo..hi {
        progress.advance(1);
        let bit = 1u64 << j;
        let xs: Vec<(u64, u64)> = span.iter().map(|&w| (bit ^ w, r ^ bit ^ w)).collect();
        // A candidate that is already a member of Y is congruent by construction.
        if let Some(&(v, _)) = xs.iter().find(|(_, x)| ys.contains(x)) {
            kernel.push(v);
            continue;
        }
        // The candidates in groups small enough for one thrash test to see the one over-full set
        // among them (`group_size`); a group that thrashes is searched, and when its candidate
        // does not confirm alone in `SEARCHES_PER_GROUP` searches (noise misled the group test)
        // the next groups are tried.
        let mut found = None;
        for group in xs.chunks(group_size(o, ys.len())) {
            let addrs: Vec<u64> = group.iter().map(|p| p.1).collect();
            if !congruent_any(m, o, ys, &addrs)? {
                continue;
            }
            // Binary search for the one congruent candidate, confirmed alone; a search that ends
            // on a candidate that does not confirm (noise misled a step) is run again, twice.
            for _ in 0..SEARCHES_PER_GROUP {
                let mut cand: &[(u64, u64)] = group;
                while cand.len() > 1 {
                    let (a, b) = cand.split_at(cand.len() / 2);
                    let a_addrs: Vec<u64> = a.iter().map(|p| p.1).collect();
                    cand = if congruent_any(m, o, ys, &a_addrs)? { a } else { b };
                }
                if congruent_any(m, o, ys, &[cand[0].1])? {
                    found = Some(cand[0].0);
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        match found {
            Some(v) => kernel.push(v),
            None => {
                independent.push(bit);
                let more: Vec<u64> = span.iter().map(|w| w ^ bit).collect();
                span.extend(more);
                if span.len() > 1 << 14 {
                    return Err(ProbeError::Failed(format!("more than 14 independent index bits below bit {j}")));
                }
            }
        }
    }
    Ok(kernel)
}

/// Prediction check on unseen addresses: per reference, a set predicted to thrash, one unseen
/// address predicted congruent and one predicted not. Returns (correct, total).
#[allow(clippy::too_many_arguments)]
pub fn verify(
    m: &mut Meter<'_>,
    o: &Oracle,
    rec: &Recovered,
    ways: usize,
    base: u64,
    line: u64,
    references: usize,
    used: &[u64],
    extra_kernel: &[u64],
    window_bytes: u64,
) -> Result<(usize, usize), ProbeError> {
    let mut kern = rec.kernel.clone();
    kern.extend_from_slice(extra_kernel);
    if kern.is_empty() {
        return Ok((0, 0));
    }
    let lines_in_window = window_bytes / line;
    let mut correct = 0;
    let mut total = 0;
    for _ in 0..references {
        let r = base + m.rng().gen_range(0..lines_in_window) * line;
        if used.contains(&r) {
            continue;
        }
        // ways + 1 distinct congruent lines: r ^ random kernel combinations.
        let mut set = vec![r];
        let mut guard = 0;
        while set.len() < ways + 2 && guard < 1000 {
            guard += 1;
            let mut k = 0;
            for &v in &kern {
                if m.rng().gen_bool(0.5) {
                    k ^= v;
                }
            }
            let x = r ^ k;
            if !set.contains(&x) && !used.contains(&x) {
                set.push(x);
            }
        }
        if set.len() < ways + 2 {
            continue;
        }
        let extra = set.pop().expect("ways + 2 lines");
        // 1: the constructed set thrashes.
        total += 1;
        if o.thrashes(m, &set)? {
            correct += 1;
        }
        let ys = &set[1..];
        // 2: an unseen congruent address in r's place thrashes.
        total += 1;
        if congruent_any(m, o, ys, &[extra])? {
            correct += 1;
        }
        // 3: an unseen address predicted in another set fits.
        let rset = gf2::apply(&rec.masks, r);
        let mut x;
        loop {
            x = base + m.rng().gen_range(0..lines_in_window) * line;
            if gf2::apply(&rec.masks, x) != rset && !used.contains(&x) && !set.contains(&x) {
                break;
            }
        }
        total += 1;
        if !congruent_any(m, o, ys, &[x])? {
            correct += 1;
        }
    }
    Ok((correct, total))
}

impl Probe for IndexProbe {
    fn key(&self) -> &'static str {
        "index"
    }
    fn description(&self) -> &'static str {
        "L1 set-index XOR masks as a GF(2) basis by flipping address bits against an eviction set; verified by prediction"
    }
    fn needs(&self) -> &'static [&'static str] {
        &["indexing", "tlb"]
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        let progress = ctx.progress;
        let quick = ctx.quick;
        let mut m = Meter::new(&mut *ctx.target, 51);
        let line = line_bytes(&mut m, &earlier)?;
        let lo = line.trailing_zeros();
        // The largest aligned window the target grants (bit 33 and up on a 4090-like L1).
        let (buf, base, window_bits) = m.aligned_window(34, 22)?;
        let mut hi = window_bits;
        let physical = earlier.get(keys::L1_INDEXING).and_then(|f| f.value.as_str()) == Some("physical");
        let page = earlier_u64(&earlier, keys::TLB_PAGE_BYTES);
        let mut note = format!(
            "address bits {lo}..{hi} flipped in an aligned window of 2^{hi} bytes: the function over these bits (bits {hi} and up were not flipped)"
        );
        if physical {
            match page {
                Some(p) => {
                    hi = hi.min(p.trailing_zeros());
                    note = format!("L1 is physically indexed: only bits {lo}..{hi} inside a page can be flipped");
                }
                None => {
                    m.target.free(buf);
                    let mut out = ProbeOutput::default();
                    out.finding(
                        keys::L1_INDEX_MASKS,
                        Finding::undetermined(
                            "",
                            "bit flips",
                            "L1 is physically indexed and the page size is unknown (run tlb first)",
                        ),
                    );
                    return Ok(out);
                }
            }
        }
        let n = pool_lines(&earlier, line);
        let e = find_l1_evset(&mut m, base, line, n)?;
        let set = e.reduction.set.clone();
        let ways = set.len() - 1;
        let (r, ys) = (set[0], &set[1..]);
        progress.start((hi - lo) as u64, "flipping address bits");
        let kernel = recover_kernel(&mut m, &e.oracle, r, ys, lo, hi, progress)?;
        let window = ((1u64 << hi) - 1) & !((1u64 << lo) - 1);
        let rec = analyze(&kernel, window);
        let recovery_chases = m.chases;
        let refs = if quick { 6 } else { 16 };
        // Physically indexed: the claim is that bits above the page do not matter (the frames are
        // random), so fresh sets may take lines from other pages: predictions test the claim.
        let extra: Vec<u64> = if physical { (hi..window_bits).map(|j| 1u64 << j).collect() } else { Vec::new() };
        let (ok, total) = verify(&mut m, &e.oracle, &rec, ways, base, line, refs, &set, &extra, 1u64 << window_bits)?;
        // Whether the set was one L1 set at all (the flips above measured its pages otherwise).
        let pages = page_bound(&mut m, &e.oracle, &set, line)?;
        m.target.free(buf);

        let mut out = ProbeOutput::default();
        let acc = if total > 0 { ok as f64 / total as f64 } else { 0.0 };
        let method = format!("bit flips against a minimal eviction set, {recovery_chases} chases; {note}");
        let vmethod =
            format!("{total} predictions (fresh eviction sets, unseen congruent and non-congruent addresses)");
        out.finding(
            keys::L1_INDEX_PREDICTION_ACCURACY,
            Finding::number(acc, "ratio", &vmethod, if total >= 12 { Confidence::High } else { Confidence::Medium }),
        );
        let hex: Vec<serde_json::Value> = rec.masks.iter().map(|&mk| serde_json::json!(gf2::format_mask(mk))).collect();
        if let Some(bits) = pages {
            out.finding(keys::L1_INDEX_MASKS, Finding::undetermined("", &method, &page_bound_reason(set.len(), &bits)));
        } else if rec.masks.is_empty() {
            out.finding(
                keys::L1_INDEX_MASKS,
                Finding::undetermined("", &method, "no address bit in the window changes the set"),
            );
        } else if acc < 0.9 {
            out.finding(
                keys::L1_INDEX_MASKS,
                Finding::undetermined(
                    "",
                    &method,
                    &format!(
                        "the recovered masks {} predicted only {ok} of {total} conflicts",
                        rec.masks.iter().map(|&mk| gf2::format_mask(mk)).collect::<Vec<_>>().join(", ")
                    ),
                ),
            );
        } else {
            let conf = if acc >= 0.99 { Confidence::High } else { Confidence::Medium };
            out.finding(
                keys::L1_INDEX_MASKS,
                Finding::json(serde_json::Value::Array(hex), "", &method, conf)
                    .with_note("canonical basis (reduced row echelon form); compare up to change of basis"),
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testsim::ToyCache;

    #[test]
    fn group_tests_stay_where_one_over_full_set_stands_out() {
        use crate::measure::Levels;
        let oracle = |floor: f64| Oracle {
            path: memscope_core::CachePath::L1Cached,
            levels: Levels { hit_ns: 60.0, miss_ns: 240.0, floor },
            threshold: 0.5,
        };
        assert_eq!(group_size(&oracle(0.0), 5), usize::MAX);
        // 1 % of hits slow (the outliers of a noisy target), 5 ways: 1024 candidates at once are
        // too many (4 sigma of the floor's count reached the 6 misses of the over-full set).
        let g = group_size(&oracle(0.0091), 5);
        assert!((300..500).contains(&g), "{g}");
        let four_sigma = |n: f64| 4.0 * (0.0091 * (1.0 - 0.0091) * n / TEST_LAPS as f64).sqrt();
        assert!(four_sigma((g + 5) as f64) <= 3.0 + 1e-9 && four_sigma(1029.0) > 4.5);
        // Fewer ways, a weaker signal: smaller groups.
        assert!(group_size(&oracle(0.0091), 2) < g);
    }

    #[test]
    fn masks_are_the_annihilator_of_the_kernel() {
        let masks = [0x1080u64, 0x2100, 0x4a00];
        let window = 0xff80u64;
        let kernel = gf2::nullspace(&masks, window);
        let rec = analyze(&kernel, window);
        assert!(gf2::same_row_space(&rec.masks, &masks));
    }

    #[test]
    fn recovers_a_random_xor_function_on_the_toy() {
        let masks = vec![0x1f80 ^ 0x12000, 0x3c00, 0x4100, 0x8200, 0x10400, 0x20800];
        let mut t = ToyCache::new(4, 64, 128, masks.clone());
        let mut m = Meter::new(&mut t, 9);
        let base = 1u64 << 30;
        let e = find_l1_evset(&mut m, base, 128, 1024).unwrap();
        let s = e.reduction.set.clone();
        let k = recover_kernel(&mut m, &e.oracle, s[0], &s[1..], 7, 20, &memscope_core::NoProgress).unwrap();
        let rec = analyze(&k, 0xfff80);
        assert!(gf2::same_row_space(&rec.masks, &masks.iter().map(|mk| mk & 0xfff80).collect::<Vec<_>>()));
        let (ok, total) = verify(&mut m, &e.oracle, &rec, 4, base, 128, 8, &s, &[], 1 << 20).unwrap();
        assert_eq!(ok, total);
        assert!(total >= 20);
    }
}
