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

#[test]
fn matches_a_model_with_a_global_clock() {
    // long enough that per-set use stamps are renumbered many times
    let mut r = crate::tlb::SplitMix(3);
    for (ways, policy) in
        [(4, Replacement::Lru), (5, Replacement::Fifo), (16, Replacement::Rrip), (7, Replacement::Rrip)]
    {
        let mut c = Cache::new(2, ways, policy, if ways == 16 { 8 } else { 0 });
        let empty = Slot { tag: INVALID, used: 0, stored: 0, valid: 0, dirty: 0, rrpv: 0 };
        let mut m = vec![vec![empty; ways]; 2];
        for clock in 1..200_000u64 {
            let set = r.below(2) as usize;
            let line = r.below(ways as u64 + 3);
            let sectors = 1 + r.below(15) as u8;
            let s = &mut m[set];
            let hit = s.iter().position(|x| x.tag == line);
            if r.below(4) == 0 {
                let full = sectors & r.below(16) as u8;
                let o = c.store(set, line, sectors, full, true, true);
                let mut cleaned = None;
                let dmask: Vec<usize> = (0..ways).filter(|&i| s[i].dirty != 0 && s[i].tag != INVALID).collect();
                if ways == 16 && dmask.len() >= 8 {
                    let i = *dmask.iter().min_by_key(|&&i| (s[i].stored, i)).unwrap();
                    cleaned = Some(WriteBack { line: s[i].tag, sectors: s[i].dirty });
                    s[i].dirty = 0;
                }
                assert_eq!(o.cleaned, cleaned, "clock {clock}");
                match hit {
                    Some(i) => {
                        s[i].valid |= full;
                        s[i].dirty |= sectors;
                        s[i].stored = clock;
                        if policy != Replacement::Fifo {
                            s[i].used = clock;
                        }
                        if policy == Replacement::Rrip {
                            s[i].rrpv = 0;
                        }
                        assert_eq!((o.tag_hit, o.missing), (true, sectors & !s[i].valid));
                    }
                    None => {
                        let (i, wb) = model_victim(s, policy);
                        s[i] = Slot { tag: line, used: clock, stored: clock, valid: full, dirty: sectors, rrpv: 1 };
                        assert_eq!((o.tag_hit, o.missing, o.evicted), (false, sectors & !full, wb), "clock {clock}");
                    }
                }
            } else {
                let o = c.load(set, line, sectors);
                match hit {
                    Some(i) => {
                        assert_eq!((o.tag_hit, o.missing), (true, sectors & !s[i].valid));
                        s[i].valid |= sectors;
                        if policy != Replacement::Fifo {
                            s[i].used = clock;
                        }
                        if policy == Replacement::Rrip {
                            s[i].rrpv = 0;
                        }
                    }
                    None => {
                        let (i, wb) = model_victim(s, policy);
                        s[i] = Slot { tag: line, used: clock, stored: s[i].stored, valid: sectors, dirty: 0, rrpv: 1 };
                        assert_eq!((o.tag_hit, o.missing, o.evicted), (false, sectors, wb), "clock {clock}");
                    }
                }
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
