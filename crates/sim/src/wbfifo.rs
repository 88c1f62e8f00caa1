//! A memory controller's write-back FIFO (seed 004: dirty lines handed to the controller stay
//! readable until they drain to DRAM), with a counting filter over its lines so a read that
//! misses in L2 learns in one lookup that the line is not queued (speed only: a positive answer
//! is checked against the queue itself).

use std::collections::VecDeque;

/// Filter buckets (a power of two; a few per queued line keeps false positives rare).
const BUCKETS: usize = 1024;

#[derive(Debug, Clone)]
pub struct WbFifo {
    lines: VecDeque<u64>,
    /// Queued lines per bucket of a line hash.
    count: Box<[u16; BUCKETS]>,
}

#[inline(always)]
fn bucket(line: u64) -> usize {
    (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BUCKETS.trailing_zeros())) as usize
}

impl Default for WbFifo {
    fn default() -> Self {
        WbFifo { lines: VecDeque::new(), count: Box::new([0; BUCKETS]) }
    }
}

impl WbFifo {
    /// Queue a line (oldest first out).
    pub fn push_back(&mut self, line: u64) {
        self.count[bucket(line)] += 1;
        self.lines.push_back(line);
    }
    /// Take the oldest line.
    pub fn pop_front(&mut self) -> Option<u64> {
        let l = self.lines.pop_front()?;
        self.count[bucket(l)] -= 1;
        Some(l)
    }
    pub fn len(&self) -> usize {
        self.lines.len()
    }
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
    /// Whether `line` is queued.
    #[inline]
    pub fn contains(&self, line: u64) -> bool {
        self.count[bucket(line)] != 0 && self.lines.contains(&line)
    }
    pub fn clear(&mut self) {
        self.lines.clear();
        self.count.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlb::SplitMix;

    #[test]
    fn answers_as_the_queue_does() {
        let mut f = WbFifo::default();
        let mut q = VecDeque::new();
        let mut r = SplitMix(3);
        for i in 0..200_000u64 {
            let line = r.below(5000);
            match i % 3 {
                0 | 1 => {
                    f.push_back(line);
                    q.push_back(line);
                    if q.len() > 64 {
                        assert_eq!(f.pop_front(), q.pop_front());
                    }
                }
                _ => assert_eq!(f.contains(line), q.contains(&line), "line {line}"),
            }
            if i % 50_000 == 0 {
                f.clear();
                q.clear();
            }
            assert_eq!(f.len(), q.len());
        }
    }
}
