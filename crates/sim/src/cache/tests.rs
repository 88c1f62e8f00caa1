//! Tests of `cache`: small cases of each rule, and a long random run against a model of the
//! rules with a global clock (the per-set use stamps and their renumbering).

use super::*;

#[test]
fn lru_evicts_least_recent() {
    let mut c = Cache::new(1, 2, Replacement::Lru, 0);
    c.load(0, 1, 1);
    c.load(0, 2, 1);
    c.load(0, 1, 1);
    c.load(0, 3, 1);
    assert!(c.probe(0, 1, 1) && c.probe(0, 3, 1) && !c.probe(0, 2, 1));
}

#[test]
fn rrip_keeps_hit_lines_against_a_scan() {
    let mut c = Cache::new(1, 4, Replacement::Rrip, 0);
    for l in 0..4 {
        c.load(0, l, 1);
    }
    c.load(0, 0, 1); // RRPV 0
    for l in 10..13 {
        c.load(0, l, 1); // streaming lines age and replace the RRPV-1 lines first
    }
    assert!(c.probe(0, 0, 1));
}

#[test]
fn eight_dirty_rule_cleans_least_recently_stored() {
    let mut c = Cache::new(1, 16, Replacement::Rrip, 8);
    for l in 0..8 {
        assert_eq!(c.store(0, l, 0xf, 0xf, true, true).cleaned, None);
    }
    let o = c.store(0, 8, 0xf, 0xf, true, true);
    assert_eq!(o.cleaned, Some(WriteBack { line: 0, sectors: 0xf }));
    assert_eq!(c.dirty_lines(), 8);
}

/// The rules of the module doc with a global 64-bit clock, one line at a time.
#[derive(Clone, Copy)]
struct Slot {
    tag: u64,
    used: u64,
    stored: u64,
    valid: u8,
    dirty: u8,
    rrpv: u8,
}

const EMPTY: Slot = Slot { tag: INVALID, used: 0, stored: 0, valid: 0, dirty: 0, rrpv: 0 };

fn model_victim(s: &mut [Slot], policy: Replacement) -> (usize, Option<WriteBack>) {
    let way = if let Some(i) = s.iter().position(|x| x.tag == INVALID) {
        return (i, None);
    } else if policy == Replacement::Rrip {
        if !s.iter().any(|x| x.rrpv == 2) {
            let k = 2 - s.iter().map(|x| x.rrpv).max().unwrap_or(0);
            s.iter_mut().for_each(|x| x.rrpv = (x.rrpv + k).min(2));
        }
        (0..s.len()).filter(|&i| s[i].rrpv == 2).min_by_key(|&i| (s[i].used, i)).unwrap()
    } else {
        (0..s.len()).min_by_key(|&i| (s[i].used, i)).unwrap()
    };
    let d = s[way].dirty;
    (way, (d != 0).then_some(WriteBack { line: s[way].tag, sectors: d }))
}

/// The model cache: sets of slots, the policy, the 8-dirty threshold, the global clock.
struct Model {
    sets: Vec<Vec<Slot>>,
    policy: Replacement,
    threshold: u32,
    clock: u64,
}

impl Model {
    fn new(sets: usize, ways: usize, policy: Replacement, threshold: u32) -> Self {
        Model { sets: vec![vec![EMPTY; ways]; sets], policy, threshold, clock: 0 }
    }

    fn clear(&mut self) {
        self.sets.iter_mut().for_each(|s| s.fill(EMPTY));
    }

    /// A hit on slot `i`: most recent (not FIFO), RRPV 0 (RRIP).
    pub(crate) fn touch(&mut self, set: usize, i: usize) {
        let s = &mut self.sets[set][i];
        if self.policy != Replacement::Fifo {
            s.used = self.clock;
        }
        if self.policy == Replacement::Rrip {
            s.rrpv = 0;
        }
    }

    fn load(&mut self, set: usize, line: u64, sectors: u8) -> Outcome {
        self.clock += 1;
        if let Some(i) = self.sets[set].iter().position(|x| x.tag == line) {
            let missing = sectors & !self.sets[set][i].valid;
            self.sets[set][i].valid |= sectors;
            self.touch(set, i);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned: None };
        }
        let s = &mut self.sets[set];
        let (i, evicted) = model_victim(s, self.policy);
        s[i] = Slot { tag: line, used: self.clock, stored: s[i].stored, valid: sectors, dirty: 0, rrpv: 1 };
        Outcome { tag_hit: false, missing: sectors, evicted, cleaned: None }
    }

    fn store(&mut self, set: usize, line: u64, sectors: u8, full: u8, allocate: bool, dirty: bool) -> Outcome {
        self.clock += 1;
        let clock = self.clock;
        let s = &mut self.sets[set];
        let mut cleaned = None;
        let d: Vec<usize> = (0..s.len()).filter(|&i| s[i].dirty != 0 && s[i].tag != INVALID).collect();
        if self.threshold > 0 && dirty && d.len() >= self.threshold as usize {
            let i = *d.iter().min_by_key(|&&i| (s[i].stored, i)).unwrap();
            cleaned = Some(WriteBack { line: s[i].tag, sectors: s[i].dirty });
            s[i].dirty = 0;
        }
        if let Some(i) = s.iter().position(|x| x.tag == line) {
            s[i].valid |= full;
            if dirty {
                s[i].dirty |= sectors;
                s[i].stored = clock;
            }
            let missing = sectors & !s[i].valid;
            self.touch(set, i);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned };
        }
        if !allocate {
            return Outcome { tag_hit: false, missing: sectors, evicted: None, cleaned };
        }
        let (i, evicted) = model_victim(s, self.policy);
        let d = if dirty { sectors } else { 0 };
        s[i] = Slot { tag: line, used: clock, stored: clock, valid: full, dirty: d, rrpv: 1 };
        Outcome { tag_hit: false, missing: sectors & !full, evicted, cleaned }
    }
}

/// `ops` random loads and stores on a cache and the model, compared after each; `wide`: after a
/// third of them, line addresses with other high 32 bits (and the empty marker's low half);
/// `clear` after two thirds.
fn against_model(ways: usize, policy: Replacement, threshold: u32, wide: bool, ops: u64, seed: u64) {
    let mut r = crate::tlb::SplitMix(seed);
    let sets = 3;
    let mut c = Cache::new(sets, ways, policy, threshold);
    let mut m = Model::new(sets, ways, policy, threshold);
    let at = format!("{ways} ways, {policy:?}, threshold {threshold}, wide {wide}");
    for op in 1..ops {
        if op == 2 * ops / 3 {
            c.clear();
            m.clear();
        }
        let set = r.below(sets as u64) as usize;
        let id = r.below(ways as u64 + 3);
        let hi = if wide && op > ops / 3 { 1 + r.below(2) } else { 1 };
        let lo = if wide && op > ops / 3 && id == 0 { 0xffff_ffff } else { 0x1000 + id };
        let line = hi << 32 | lo;
        let sectors = 1 + r.below(15) as u8;
        let (o, mo) = if r.below(4) == 0 {
            let full = sectors & r.below(16) as u8;
            let (allocate, dirty) = (r.below(8) != 0, r.below(8) != 0);
            (c.store(set, line, sectors, full, allocate, dirty), m.store(set, line, sectors, full, allocate, dirty))
        } else {
            (c.load(set, line, sectors), m.load(set, line, sectors))
        };
        assert_eq!(o, mo, "{at}, op {op}");
        if op % 97 == 0 {
            let s = &m.sets[set];
            let held = s.iter().filter(|x| x.tag != INVALID).count();
            assert_eq!(c.lines_in_set(set), held, "{at}, op {op}");
            let dirty: usize = m.sets.iter().flatten().filter(|x| x.tag != INVALID && x.dirty != 0).count();
            assert_eq!(c.dirty_lines(), dirty, "{at}, op {op}");
            for x in s {
                let probe = x.tag != INVALID && c.probe(set, x.tag, x.valid);
                assert!(x.tag == INVALID || probe, "{at}, op {op}");
            }
            assert!(!c.probe(set, 5 << 32, 0), "{at}, op {op}");
        }
    }
    assert_eq!(c.wide.is_some(), wide, "{at}");
}

#[test]
fn matches_a_model_with_a_global_clock() {
    // the seed's L1 and L2, long runs
    let ops = if cfg!(debug_assertions) { 20_000 } else { 200_000 };
    for (ways, policy, threshold) in
        [(4, Replacement::Lru, 0), (5, Replacement::Fifo, 0), (16, Replacement::Rrip, 8), (7, Replacement::Rrip, 0)]
    {
        against_model(ways, policy, threshold, false, ops, 3);
    }
}

#[test]
fn matches_the_model_for_any_way_count_policy_and_tag_width() {
    let ops = if cfg!(debug_assertions) { 3_000 } else { 30_000 };
    let mut seed = 100;
    for ways in [1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 15, 16, 17, 20, 24, 31, 32, 33, 47, 48, 63, 64] {
        for policy in [Replacement::Lru, Replacement::Fifo, Replacement::Rrip] {
            for (threshold, wide) in [(0, false), (ways as u32 / 2, true), (1, false), (ways as u32, true)] {
                seed += 1;
                against_model(ways, policy, threshold, wide, ops, seed);
            }
        }
    }
}

#[test]
fn sectors_fill_on_demand() {
    let mut c = Cache::new(1, 1, Replacement::Lru, 0);
    assert_eq!(c.load(0, 5, 0b0001).missing, 0b0001);
    let o = c.load(0, 5, 0b0011);
    assert!(o.tag_hit);
    assert_eq!(o.missing, 0b0010);
}

#[test]
fn tags_of_any_width_are_told_apart() {
    // 32-bit tags with one high part, then lines that differ only above bit 32 (or whose low
    // half is the empty marker) move them to 64 bits; `clear` starts over
    for policy in [Replacement::Lru, Replacement::Rrip] {
        let mut c = Cache::new(2, 4, policy, 0);
        let lines = [5 << 32 | 3, 6 << 32 | 3, 5 << 32 | 0xffff_ffff, 3];
        assert_eq!(c.load(1, lines[0], 1).missing, 1);
        assert!(c.wide.is_none() && c.probe(1, lines[0], 1) && !c.probe(1, lines[1], 1) && !c.probe(1, 3, 1));
        for &l in &lines[1..] {
            assert_eq!(c.load(1, l, 1).missing, 1);
        }
        assert!(c.wide.is_some());
        assert!(lines.iter().all(|&l| c.probe(1, l, 1)) && c.lines_in_set(1) == 4 && c.lines_in_set(0) == 0);
        c.clear();
        assert!(lines.iter().all(|&l| !c.probe(1, l, 1)));
        let mut d = Cache::new(2, 4, policy, 0);
        d.load(0, lines[1], 1);
        d.load(0, lines[1] + 1, 1);
        assert!(d.wide.is_none() && d.probe(0, lines[1] + 1, 1) && !d.probe(0, lines[0], 1));
        d.clear();
        d.load(0, 3, 1); // a new high part after `clear`
        assert!(d.wide.is_none() && d.probe(0, 3, 1) && !d.probe(0, lines[0], 1));
    }
}

#[test]
fn fast_paths_match_the_model_across_clears() {
    // the presets' caches (4-way LRU, 16-way RRIP: `fast_load.rs`), many sets, hits that do not
    // mark their set and misses in full sets that do not either, then `clear`s that must still
    // empty every set; some rounds use only a few sets, some a line beyond 32-bit tags
    for (ways, policy) in [(4, Replacement::Lru), (16, Replacement::Rrip), (16, Replacement::Lru)] {
        let sets = 130;
        let mut c = Cache::new(sets, ways, policy, 8);
        let mut m = Model::new(sets, ways, policy, 8);
        let mut r = crate::tlb::SplitMix(7);
        for round in 0..8u64 {
            let used = if round % 2 == 0 { sets as u64 } else { 1 + round * 9 };
            for op in 0..6000 {
                let set = r.below(used) as usize;
                let hi = if round == 5 && op == 3000 { 9 } else { 1 + round % 3 };
                let line = hi << 32 | (r.below(ways as u64 * 3 / 2) * sets as u64 + set as u64);
                let sectors = 1 + r.below(15) as u8;
                let (o, mo) = if r.below(8) == 0 {
                    (c.store(set, line, sectors, sectors, true, true), m.store(set, line, sectors, sectors, true, true))
                } else {
                    (c.load(set, line, sectors), m.load(set, line, sectors))
                };
                assert_eq!(o, mo, "{ways} ways, {policy:?}, round {round}, op {op}");
            }
            c.clear();
            m.clear();
            assert!((0..sets).all(|s| c.lines_in_set(s) == 0) && c.dirty_lines() == 0, "round {round}");
        }
    }
}
