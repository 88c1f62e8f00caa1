//! Eviction sets by threshold group testing (Vila, Köpf, Morales, "Theory and Practice of Finding
//! Eviction Sets", IEEE S&P 2019), adapted to the chase instrument of seed 000 (footnote 2): the
//! predicate is "a chase over this set of lines keeps missing the cache" (a set holds more lines
//! than it has ways), the set is split into groups, and every group whose removal keeps the chase
//! missing is dropped. The number of groups starts small and doubles when no group can go (the
//! associativity is unknown); a minimal set is one where no single line can go: `ways + 1` lines of
//! one cache set. Noise that misleads a step is caught by re-testing and undone by backtracking.
//! `reduce_linear` is the one-at-a-time baseline of seed 000 footnote 2.

use crate::measure::{Levels, Meter, Timing};
use memscope_core::{CachePath, ProbeError};

/// Timed laps per test chase (after `WARMUP_LAPS` untimed ones).
pub const TEST_LAPS: u64 = 6;
pub const WARMUP_LAPS: u32 = 2;
/// Least hops of a test chase (short sets need enough hops to average noise).
pub const MIN_HOPS: u64 = 1200;

/// The "does this set keep missing" oracle for one cache level and load path.
#[derive(Debug, Clone, Copy)]
pub struct Oracle {
    pub path: CachePath,
    pub levels: Levels,
    /// A set thrashes when at least this many lines miss per lap.
    pub threshold: f64,
}

impl Oracle {
    /// Missing lines per lap of a chase over `set`.
    /// Missing lines per lap and the noise of that estimate.
    pub fn misses(&self, m: &mut Meter<'_>, set: &[u64]) -> Result<(f64, f64), ProbeError> {
        let t: Timing = m.chase(set, self.path, TEST_LAPS, MIN_HOPS, WARMUP_LAPS)?;
        Ok(self.levels.misses_per_lap(&t, set.len()))
    }
    /// With per-hop times: the members that missed on at least half of their visits (under LRU
    /// or FIFO exactly the lines of over-full sets), and whether the set thrashes. `None` when
    /// the target records no per-hop times.
    pub fn profile(&self, m: &mut Meter<'_>, set: &[u64]) -> Result<Option<(Vec<u64>, bool)>, ProbeError> {
        if !m.per_hop() {
            return Ok(None);
        }
        let t: Timing = m.chase(set, self.path, TEST_LAPS, MIN_HOPS, WARMUP_LAPS)?;
        let (misses, sigma) = self.levels.misses_per_lap(&t, set.len());
        let Some(h) = &t.per_hop_ns else { return Ok(None) };
        let n = set.len();
        let mut slow = vec![0u32; n];
        let mut seen = vec![0u32; n];
        for (i, &x) in h.iter().enumerate() {
            seen[i % n] += 1;
            if x > self.levels.mid() {
                slow[i % n] += 1;
            }
        }
        let kept = set.iter().enumerate().filter(|(i, _)| 2 * slow[*i] >= seen[*i].max(1)).map(|(_, &a)| a).collect();
        Ok(Some((kept, misses >= self.threshold.max(4.0 * sigma))))
    }
    /// Thrashes: at least `threshold` misses per lap and four standard deviations of the floor.
    pub fn thrashes(&self, m: &mut Meter<'_>, set: &[u64]) -> Result<bool, ProbeError> {
        let (misses, sigma) = self.misses(m, set)?;
        Ok(misses >= self.threshold.max(4.0 * sigma))
    }
}

/// Measure the L1 hit and miss (L2 hit) latencies on a few lines of `buf`-like addresses.
pub fn calibrate_l1(m: &mut Meter<'_>, lines: &[u64]) -> Result<Levels, ProbeError> {
    // The hit level from the smaller mean of all `lines` and the first two: under a hashed index
    // with few ways the lines can crowd one set past its ways (2 lines fit any set of 2 or more
    // ways); means, since a few missing hops move the mean and not the median.
    let all = m.chase(lines, CachePath::L1Cached, 64, 20_000, 2)?;
    let hits = match lines.get(..2) {
        Some(two) if lines.len() > 2 => {
            let two = m.chase(two, CachePath::L1Cached, 64, 20_000, 2)?;
            if two.mean_ns() < all.mean_ns() {
                two
            } else {
                all
            }
        }
        _ => all,
    };
    let miss = m.chase(lines, CachePath::L1Bypass, 64, 2000, 2)?.typical_ns();
    Ok(Levels::new(hits.typical_ns(), miss).with_floor_from(&hits))
}

/// Outcome of a reduction.
#[derive(Debug, Clone, PartialEq)]
pub struct Reduction {
    /// The minimal thrashing set found.
    pub set: Vec<u64>,
    /// Timed chases the search took (the final confirmation included).
    pub chases: u64,
    /// Times a step was undone because a re-test contradicted it.
    pub backtracks: u32,
}

/// Threshold group testing with adaptive group count and backtracking. `max_chases` bounds the
/// work (an error says so when exceeded).
pub fn reduce_groups(
    m: &mut Meter<'_>,
    oracle: &Oracle,
    pool: &[u64],
    max_chases: u64,
) -> Result<Reduction, ProbeError> {
    let start = m.chases;
    if !oracle.thrashes(m, pool)? {
        return Err(ProbeError::Failed(format!(
            "the {}-line candidate pool does not thrash the cache: it is too small or the levels are not separable",
            pool.len()
        )));
    }
    let mut set = pool.to_vec();
    let mut history: Vec<Vec<u64>> = Vec::new();
    let mut groups = 8usize;
    let mut backtracks = 0u32;
    let mut filter = m.per_hop();
    loop {
        if m.chases - start > max_chases {
            return Err(ProbeError::Failed(format!("eviction-set search exceeded {max_chases} chases")));
        }
        // Per-hop filter: keep only the lines that keep missing (lines of over-full sets), when
        // what is kept still thrashes; a filter that breaks the set is not used again (a
        // replacement policy that protects some lines of an over-full set).
        if filter {
            if let Some((kept, _)) = oracle.profile(m, &set)? {
                if kept.len() < set.len() && kept.len() > 1 {
                    if oracle.thrashes(m, &kept)? {
                        history.push(std::mem::replace(&mut set, kept));
                    } else {
                        filter = false;
                    }
                }
            }
        }
        let g = groups.min(set.len());
        let chunk = set.len().div_ceil(g);
        let parts: Vec<Vec<u64>> = set.chunks(chunk).map(|c| c.to_vec()).collect();
        let mut removed = false;
        for part in &parts {
            if set.len() <= part.len() {
                continue;
            }
            let candidate: Vec<u64> = set.iter().copied().filter(|a| !part.contains(a)).collect();
            if candidate.len() == set.len() {
                continue;
            }
            if oracle.thrashes(m, &candidate)? {
                history.push(std::mem::replace(&mut set, candidate));
                removed = true;
                if filter {
                    break;
                }
            }
        }
        if removed {
            if filter {
                groups = 8;
            }
            continue;
        }
        if g < set.len() {
            groups = (g * 2).min(set.len());
            continue;
        }
        // No single line can go: confirm the set itself still thrashes, else undo a step.
        if oracle.thrashes(m, &set)? {
            return Ok(Reduction { set, chases: m.chases - start, backtracks });
        }
        backtracks += 1;
        match history.pop() {
            Some(prev) => {
                set = prev;
                groups = 8;
            }
            None => return Err(ProbeError::Failed("the pool stopped thrashing on re-test: noise too high".into())),
        }
    }
}

/// The baseline: drop one line at a time, keeping the drop when the rest still thrashes.
pub fn reduce_linear(m: &mut Meter<'_>, oracle: &Oracle, pool: &[u64]) -> Result<Reduction, ProbeError> {
    let start = m.chases;
    let mut set = pool.to_vec();
    let mut i = 0;
    while i < set.len() {
        let mut candidate = set.clone();
        candidate.remove(i);
        if oracle.thrashes(m, &candidate)? {
            set = candidate;
        } else {
            i += 1;
        }
    }
    Ok(Reduction { set, chases: m.chases - start, backtracks: 0 })
}

/// Check a minimal set: it thrashes and dropping any one member makes it fit. Returns the number
/// of members whose removal made the set fit (all of them for a true minimal set).
pub fn check_minimal(m: &mut Meter<'_>, oracle: &Oracle, set: &[u64]) -> Result<(bool, usize), ProbeError> {
    let full = oracle.thrashes(m, set)?;
    let mut fit = 0;
    for i in 0..set.len() {
        let mut c = set.to_vec();
        c.remove(i);
        if !oracle.thrashes(m, &c)? {
            fit += 1;
        }
    }
    Ok((full, fit))
}

/// The smallest page a target maps: an address bit below it stays inside its line's page.
pub const SMALLEST_PAGE_BYTES: u64 = 4096;

/// Whether a minimal set thrashes by its pages rather than by one L1 set. Where an L1 hit that
/// misses the TLB reads as slow as an L1 miss (a physically indexed L1 translates every load), a
/// chase over more pages than the TLB holds keeps "missing", and a reduction can settle on the
/// TLB's entries + 1 pages. Two swaps per address bit between the line and
/// `SMALLEST_PAGE_BYTES` (d = 2^j, so a + d lies in a's page): the first member for first ^ d,
/// then the second member for first ^ d. A set of pages keeps thrashing on the first (the same
/// pages) and fits on the second (one page fewer); one L1 set answers both alike (first ^ d is in
/// the first member's set or in another, whichever member it stands for). Page-bound when every
/// bit tried gave the pages' answer (the fit confirmed by a re-test); returns the bits tried, or
/// `None` when a bit answered like an L1 set or none could be tried.
pub fn page_bound(m: &mut Meter<'_>, oracle: &Oracle, set: &[u64], line: u64) -> Result<Option<Vec<u32>>, ProbeError> {
    let [first, ..] = set else { return Ok(None) };
    if set.len() < 2 {
        return Ok(None);
    }
    let mut tried = Vec::new();
    for j in line.trailing_zeros()..SMALLEST_PAGE_BYTES.trailing_zeros() {
        let x = first ^ (1u64 << j);
        if set.contains(&x) {
            continue;
        }
        let (mut keep, mut drop) = (set.to_vec(), set.to_vec());
        keep[0] = x;
        drop[1] = x;
        if !oracle.thrashes(m, &keep)? || oracle.thrashes(m, &drop)? || oracle.thrashes(m, &drop)? {
            return Ok(None);
        }
        tried.push(j);
    }
    Ok(if tried.is_empty() { None } else { Some(tried) })
}

/// The reason a page-bound set (`page_bound`) says nothing of the L1: bits `bits` tried.
pub fn page_bound_reason(set_len: usize, bits: &[u32]) -> String {
    let bits: Vec<String> = bits.iter().map(|b| b.to_string()).collect();
    format!(
        "the minimal eviction set found ({set_len} lines) kept thrashing with its first member moved to another line of its page and fit with that line in place of the second member (address bit {}, each): a set of pages, not one L1 set (a chase over more pages than the TLB holds, its L1 hits as slow as misses, thrashes the TLB)",
        bits.join(", ")
    )
}

/// An L1 eviction set found from scratch: calibration, a pool of `pool_lines` addresses at
/// `stride` bytes, the group-testing search.
#[derive(Debug, Clone)]
pub struct L1Evset {
    pub levels: Levels,
    pub oracle: Oracle,
    pub reduction: Reduction,
    pub pool_lines: usize,
}

/// Pool growth: a pool that does not thrash is doubled up to this many times (callers allocate
/// `pool_lines << POOL_DOUBLINGS` lines).
pub const POOL_DOUBLINGS: u32 = 4;

/// Build an L1 eviction set from a pool inside `[base, base + (pool_lines << POOL_DOUBLINGS) *
/// stride)` (the caller owns the memory); the pool doubles while it does not thrash.
pub fn find_l1_evset(m: &mut Meter<'_>, base: u64, stride: u64, pool_lines: usize) -> Result<L1Evset, ProbeError> {
    let calib: Vec<u64> = (0..8).map(|i| base + i * stride).collect();
    let levels = calibrate_l1(m, &calib)?;
    if !levels.separable() {
        return Err(ProbeError::Failed(format!(
            "L1 hit ({:.1} ns) and L2 hit ({:.1} ns) are not separable",
            levels.hit_ns, levels.miss_ns
        )));
    }
    let oracle = Oracle { path: CachePath::L1Cached, levels, threshold: 0.5 };
    let mut n = pool_lines;
    for _ in 0..POOL_DOUBLINGS {
        let probe: Vec<u64> = (0..n as u64).map(|i| base + i * stride).collect();
        if oracle.thrashes(m, &probe)? {
            break;
        }
        n *= 2;
    }
    let mut pool: Vec<u64> = (0..n as u64).map(|i| base + i * stride).collect();
    m.shuffle(&mut pool);
    let reduction = reduce_groups(m, &oracle, &pool, 20_000)?;
    Ok(L1Evset { levels, oracle, reduction, pool_lines: n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testsim::ToyCache;

    #[test]
    fn group_testing_finds_a_minimal_set_with_few_chases() {
        let mut t = ToyCache::new(4, 64, 128, vec![0x1f80 ^ 0x12000, 0x3c00, 0x4100, 0x8200, 0x10400, 0x20800]);
        let mut m = Meter::new(&mut t, 7);
        let e = find_l1_evset(&mut m, 1 << 30, 128, 2048).unwrap();
        assert_eq!(e.reduction.set.len(), 5, "ways + 1 lines");
        let (full, fit) = check_minimal(&mut m, &e.oracle, &e.reduction.set).unwrap();
        assert!(full);
        assert_eq!(fit, 5);
        assert!(e.reduction.chases < 400, "took {} chases", e.reduction.chases);
        // One L1 set (no TLB on the toy): a member moved within its page breaks the conflict.
        assert_eq!(page_bound(&mut m, &e.oracle, &e.reduction.set, 128).unwrap(), None);
    }

    #[test]
    fn baseline_reaches_the_same_size() {
        let mut t = ToyCache::new(2, 16, 64, vec![0x40, 0x80, 0x100, 0x200]);
        let mut m = Meter::new(&mut t, 3);
        let calib: Vec<u64> = (0..8).map(|i| (1u64 << 30) + i * 64).collect();
        let levels = calibrate_l1(&mut m, &calib).unwrap();
        let oracle = Oracle { path: CachePath::L1Cached, levels, threshold: 0.5 };
        let pool: Vec<u64> = (0..128).map(|i| (1u64 << 30) + i * 64).collect();
        let r = reduce_linear(&mut m, &oracle, &pool).unwrap();
        assert_eq!(r.set.len(), 3);
        assert_eq!(r.chases, 128);
    }
}
