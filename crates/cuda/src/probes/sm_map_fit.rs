//! The analysis of the `l2.sm_map` probe (docs/SM_MEMORIES.md, "The per-SM L2 map"), pure so it is tested on
//! synthetic laps with known ground truth (sm_map_tests.rs): per SM, the first-touch cycles of each
//! line split into two modes (near and far L2 partition) by the split of the sorted times that
//! leaves the least squared deviation within the two groups; the per-hop cost of recording (the
//! recorded lap's mean less the uninstrumented lap's) is subtracted; repetitions give medians and
//! spreads; SMs whose far lines are the same lines form one group (the SMs of one L2 partition).

use memscope_core::stats::{median, Sample};

/// The smaller mode must hold at least this fraction of the lines.
pub const MIN_MODE_FRACTION: f64 = 0.05;
/// The far mode's median must be at least this multiple of the near mode's.
pub const MIN_FAR_RATIO: f64 = 1.2;
/// Hops slower than this multiple of the warm lap's median are stalls (a DRAM read, a refresh),
/// left out of the split.
pub const STALL_FACTOR: f64 = 3.0;
/// Two SMs are in one group when at most this fraction of the lines both classified differ.
pub const MAX_GROUP_DISAGREEMENT: f64 = 0.2;

/// Two modes of per-line times: the indices of each and their medians.
#[derive(Debug, Clone, PartialEq)]
pub struct Modes {
    /// Half-way between the slowest near and the fastest far time.
    pub threshold: f64,
    pub near: Vec<usize>,
    pub far: Vec<usize>,
    pub near_median: f64,
    pub far_median: f64,
    /// Median absolute deviation within each mode.
    pub near_mad: f64,
    pub far_mad: f64,
}

fn mad(v: &[f64]) -> f64 {
    Sample::new(v).map(|s| s.mad()).unwrap_or(0.0)
}

/// Split per-line times into two modes among the times below `cap`: the split of the sorted times
/// that minimises the sum of squared deviations from the two groups' means. None when fewer than 8
/// times lie below the cap, or the modes are not separated: the smaller holds less than
/// `MIN_MODE_FRACTION` of them, the far median is below `MIN_FAR_RATIO` times the near median, or
/// the medians are closer than four times the larger within-mode MAD.
pub fn two_modes(times: &[f64], cap: f64) -> Option<Modes> {
    let mut idx: Vec<usize> = (0..times.len()).filter(|&i| times[i].is_finite() && times[i] <= cap).collect();
    if idx.len() < 8 {
        return None;
    }
    idx.sort_by(|&a, &b| times[a].total_cmp(&times[b]));
    let v: Vec<f64> = idx.iter().map(|&i| times[i]).collect();
    let n = v.len();
    let (mut s, mut s2) = (vec![0.0; n + 1], vec![0.0; n + 1]);
    for i in 0..n {
        s[i + 1] = s[i] + v[i];
        s2[i + 1] = s2[i] + v[i] * v[i];
    }
    let sse = |a: usize, b: usize| {
        let k = (b - a) as f64;
        let sum = s[b] - s[a];
        (s2[b] - s2[a]) - sum * sum / k
    };
    let (mut best, mut at) = (f64::INFINITY, 0);
    for k in 1..n {
        let e = sse(0, k) + sse(k, n);
        if e < best {
            best = e;
            at = k;
        }
    }
    let min_count = ((n as f64) * MIN_MODE_FRACTION).ceil() as usize;
    if at < min_count.max(1) || n - at < min_count.max(1) {
        return None;
    }
    let (lo, hi) = (&v[..at], &v[at..]);
    let (near_median, far_median) = (median(lo), median(hi));
    let (near_mad, far_mad) = (mad(lo), mad(hi));
    if far_median < MIN_FAR_RATIO * near_median || far_median - near_median < 4.0 * near_mad.max(far_mad) {
        return None;
    }
    Some(Modes {
        threshold: 0.5 * (v[at - 1] + v[at]),
        near: idx[..at].to_vec(),
        far: idx[at..].to_vec(),
        near_median,
        far_median,
        near_mad,
        far_mad,
    })
}

/// One repetition on one SM, in cycles.
#[derive(Debug, Clone, PartialEq)]
pub struct Rep {
    /// Recorded first-touch cycles of each line, by line index (lap A).
    pub first_touch: Vec<f64>,
    /// Recorded cycles of each line once held near (lap B), by line index.
    pub warm_recorded: Vec<f64>,
    /// Uninstrumented lap over the same lines (lap C): cycles and %globaltimer ns per hop.
    pub warm_cycles: f64,
    pub warm_ns: f64,
    /// The L1 control: cycles and ns per hop of a small L1-resident cycle.
    pub l1_cycles: f64,
    pub l1_ns: f64,
}

impl Rep {
    /// What recording a hop adds: lap B's mean less lap C's (never below 0).
    pub fn overhead_cycles(&self) -> f64 {
        let mean = self.warm_recorded.iter().sum::<f64>() / self.warm_recorded.len().max(1) as f64;
        (mean - self.warm_cycles).max(0.0)
    }
    /// The two modes of the first touches, stalls (above STALL_FACTOR x lap B's median) left out.
    pub fn modes(&self) -> Option<Modes> {
        two_modes(&self.first_touch, STALL_FACTOR * median(&self.warm_recorded))
    }
}

/// Median and MAD of a list (NaN for an empty one).
pub fn med_mad(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    (median(v), mad(v))
}

/// One SM's map entry over its repetitions, in cycles.
#[derive(Debug, Clone, PartialEq)]
pub struct SmEntry {
    pub sm: u32,
    /// Per repetition with two modes: the near and far medians less the recording overhead.
    pub near: Vec<f64>,
    pub far: Vec<f64>,
    /// Per repetition with two modes: the far lines' share of the lines split.
    pub far_fraction: Vec<f64>,
    /// Per repetition with two modes: the within-mode MADs.
    pub near_line_mad: Vec<f64>,
    pub far_line_mad: Vec<f64>,
    /// Per repetition: the recording overhead, the warm lap (cycles and ns), the L1 control.
    pub overhead: Vec<f64>,
    pub warm: Vec<f64>,
    pub warm_ns: Vec<f64>,
    pub l1: Vec<f64>,
    pub l1_ns: Vec<f64>,
    /// Repetitions in all and with two modes.
    pub reps: usize,
    pub reps_split: usize,
    /// Per line: (times far, times near) over the split repetitions.
    pub votes: Vec<(u32, u32)>,
}

impl SmEntry {
    /// The entry of SM `sm` from its repetitions (every repetition over the same lines).
    pub fn new(sm: u32, reps: &[Rep]) -> SmEntry {
        let lines = reps.first().map_or(0, |r| r.first_touch.len());
        let mut e = SmEntry {
            sm,
            near: vec![],
            far: vec![],
            far_fraction: vec![],
            near_line_mad: vec![],
            far_line_mad: vec![],
            overhead: vec![],
            warm: vec![],
            warm_ns: vec![],
            l1: vec![],
            l1_ns: vec![],
            reps: reps.len(),
            reps_split: 0,
            votes: vec![(0, 0); lines],
        };
        for r in reps {
            let o = r.overhead_cycles();
            e.overhead.push(o);
            e.warm.push(r.warm_cycles);
            e.warm_ns.push(r.warm_ns);
            e.l1.push(r.l1_cycles);
            e.l1_ns.push(r.l1_ns);
            if let Some(m) = r.modes() {
                e.reps_split += 1;
                e.near.push(m.near_median - o);
                e.far.push(m.far_median - o);
                e.far_fraction.push(m.far.len() as f64 / (m.near.len() + m.far.len()) as f64);
                e.near_line_mad.push(m.near_mad);
                e.far_line_mad.push(m.far_mad);
                for &i in &m.far {
                    if let Some(v) = e.votes.get_mut(i) {
                        v.0 += 1;
                    }
                }
                for &i in &m.near {
                    if let Some(v) = e.votes.get_mut(i) {
                        v.1 += 1;
                    }
                }
            }
        }
        e
    }

    /// Each line far (true), near (false), or undetermined (never split, or a tie).
    pub fn far_lines(&self) -> Vec<Option<bool>> {
        self.votes
            .iter()
            .map(|&(f, n)| match f.cmp(&n) {
                std::cmp::Ordering::Greater => Some(true),
                std::cmp::Ordering::Less => Some(false),
                std::cmp::Ordering::Equal => None,
            })
            .collect()
    }
}

/// The fraction of lines classified for both that `a` and `b` classify differently (None when no
/// line is classified for both).
pub fn disagreement(a: &[Option<bool>], b: &[Option<bool>]) -> Option<f64> {
    let (mut both, mut differ) = (0usize, 0usize);
    for (x, y) in a.iter().zip(b) {
        if let (Some(x), Some(y)) = (x, y) {
            both += 1;
            differ += usize::from(x != y);
        }
    }
    (both > 0).then(|| differ as f64 / both as f64)
}

/// Groups of SMs with the same far lines: each SM (in the entries' order) joins the first group
/// whose first member's far lines differ from its own on at most `MAX_GROUP_DISAGREEMENT` of the
/// lines, else starts a group. SMs with no split repetition are left out. Groups in order of their
/// first member; members in the entries' order.
pub fn group_sms(entries: &[SmEntry]) -> Vec<Vec<u32>> {
    let mut groups: Vec<(Vec<Option<bool>>, Vec<u32>)> = Vec::new();
    for e in entries.iter().filter(|e| e.reps_split > 0) {
        let far = e.far_lines();
        match groups.iter_mut().find(|(lead, _)| disagreement(lead, &far).is_some_and(|d| d <= MAX_GROUP_DISAGREEMENT))
        {
            Some((_, members)) => members.push(e.sm),
            None => groups.push((far, vec![e.sm])),
        }
    }
    groups.into_iter().map(|(_, m)| m).collect()
}
