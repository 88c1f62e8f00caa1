//! Tests of the TLB (against a plain model of LRU and FIFO replacement) and the page table.

use super::*;

#[test]
fn tlb_lru_cycles_thrash() {
    let mut t = Tlb::new(16, true);
    let mut misses = 0;
    for lap in 0..3 {
        for p in 0..17 {
            if t.lookup(p).is_none() {
                t.insert(p, p);
                if lap > 0 {
                    misses += 1;
                }
            }
        }
    }
    assert_eq!(misses, 34);
}

/// The plain model: entries in fill order with a use (LRU) or fill (FIFO) stamp; the victim
/// is the first entry with the smallest stamp.
struct Model {
    e: Vec<(u64, u64, u64)>,
    cap: usize,
    lru: bool,
    clock: u64,
}
impl Model {
    fn lookup(&mut self, vpn: u64) -> Option<u64> {
        self.clock += 1;
        let e = self.e.iter_mut().find(|e| e.0 == vpn)?;
        if self.lru {
            e.2 = self.clock;
        }
        Some(e.1)
    }
    fn insert(&mut self, vpn: u64, ppn: u64) {
        self.clock += 1;
        if self.e.len() == self.cap {
            let v = (0..self.e.len()).fold(0, |b, i| if self.e[i].2 < self.e[b].2 { i } else { b });
            self.e[v] = (vpn, ppn, self.clock);
        } else {
            self.e.push((vpn, ppn, self.clock));
        }
    }
}

#[test]
fn tlbs_of_every_size_match_the_plain_model() {
    for cap in [1, 2, 3, 15, 16, 17, 31, 33, 63, 64, 65, 100, 4096] {
        for lru in [true, false] {
            let mut r = SplitMix(cap as u64 * 2 + lru as u64);
            let (mut t, mut m) = (Tlb::new(cap, lru), Model { e: Vec::new(), cap, lru, clock: 0 });
            // pages around the capacity, equal in their low 32 bits (and low 6 bits) by threes
            let pages = (cap as u64 * 5 / 4).max(4);
            for step in 0..200_000u64.min(4000 * cap as u64) {
                let i = r.below(if step % 5000 < 2500 { pages } else { cap as u64 + 1 });
                let vpn = ((i % 3) << 32) | (i / 3);
                if step % 997 == 0 {
                    t.invalidate(vpn);
                    m.e.retain(|e| e.0 != vpn);
                } else if step % 49_999 == 0 {
                    t.clear();
                    m.e.clear();
                }
                let hit = t.lookup(vpn);
                assert_eq!(hit, m.lookup(vpn), "cap {cap} lru {lru} step {step}");
                if hit.is_none() {
                    t.insert(vpn, step);
                    m.insert(vpn, step);
                }
                assert_eq!(t.len(), m.e.len());
            }
        }
    }
}

#[test]
fn inserting_a_present_page_updates_its_entry() {
    for cap in [4, 100] {
        let mut t = Tlb::new(cap, true);
        for p in 0..4 {
            t.insert(p, p);
        }
        t.insert(0, 50); // no lookup before: checked, updated, most recent
        t.insert(9, 9); // evicts 1 (the LRU)
        assert_eq!(t.lookup(0), Some(50));
        assert_eq!(t.lookup(1), if cap == 4 { None } else { Some(1) });
        assert_eq!(t.len(), if cap == 4 { 4 } else { 5 });
    }
    let mut t = Tlb::new(0, true);
    t.insert(1, 1);
    assert_eq!(t.lookup(1), None);
}

#[test]
fn a_large_tlb_finds_every_entry() {
    // more than 64 entries (the lookup compares 64 at a time), page numbers equal in their
    // low 32 bits
    let mut t = Tlb::new(300, true);
    let vpn = |i: u64| ((i % 3) << 32) | (i / 3);
    for i in 0..300 {
        assert_eq!(t.lookup(vpn(i)), None);
        t.insert(vpn(i), i + 1);
    }
    for i in (0..300).rev() {
        assert_eq!(t.lookup(vpn(i)), Some(i + 1), "entry {i}");
    }
    t.invalidate(vpn(70));
    assert_eq!(t.lookup(vpn(70)), None);
    assert_eq!(t.lookup(vpn(299)), Some(300));
}

#[test]
fn the_page_table_finds_what_was_mapped() {
    let mut pt = PageTable::new(21, 1 << 10, 3);
    let mut model = std::collections::HashMap::new();
    let mut r = SplitMix(8);
    assert_eq!(pt.walk(5), None);
    pt.unmap(5);
    // the first page mapped places the dense window; pages far below and above it go to the map
    let base = 1u64 << 19;
    for step in 0..20_000u64 {
        let vpn = match step % 4 {
            0 => base + r.below(3 * DENSE_WINDOW) - DENSE_WINDOW / 2,
            1 => r.below(64),
            2 => base + r.below(64),
            _ => r.next_u64(),
        };
        let vpn = if step == 0 { base } else { vpn };
        if step % 3 == 2 {
            pt.unmap(vpn);
            model.remove(&vpn);
        } else {
            pt.map(vpn, step);
            model.insert(vpn, step);
        }
        let probe = [vpn, vpn + 1, vpn.wrapping_sub(1), base + r.below(DENSE_WINDOW)];
        for p in probe {
            assert_eq!(pt.walk(p), model.get(&p).copied(), "page {p:#x} at step {step}");
        }
    }
}
